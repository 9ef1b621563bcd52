package org.retailmax.serving;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.hive.thriftserver.HiveThriftServer2;

/**
 * The JDBC server's entry point, run by spark-submit with the command line serving/jdbc.py
 * builds: a Spark session with the pipeline's configuration and the server's (its
 * sign-in, its read-only guard), and Spark's Thrift server over it. No Python runs in the
 * server, so the OS account it runs as needs nothing but the project's jars and the warehouse.
 */
public final class JdbcServer {
    private JdbcServer() {
    }

    /** @param args settings spark-submit does not pass on (not spark.*), as key=value */
    public static void main(String[] args) throws InterruptedException {
        SparkSession.Builder builder = SparkSession.builder();
        for (String setting : args) {
            String[] keyAndValue = setting.split("=", 2);
            builder.config(keyAndValue[0], keyAndValue[1]);
        }
        SparkSession spark = builder.getOrCreate();
        HiveThriftServer2.startWithContext(spark.sqlContext());
        System.out.println("JDBC server listening on port "
            + spark.conf().get("spark.hive.server2.thrift.port"));
        // Runs until stopped: SIGTERM runs the JVM's shutdown hooks, which stop Spark.
        Thread.currentThread().join();
    }
}
