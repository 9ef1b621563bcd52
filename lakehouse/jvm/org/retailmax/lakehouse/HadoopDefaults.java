package org.retailmax.lakehouse;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;

/**
 * Unsets the entries of a Hadoop configuration that one defaults file alone set
 * (lakehouse/spark.py says which files, and why). Here rather than in Python, where it took
 * a call into the JVM for each of a session's ~1,000 entries: 1.6 s of every process's start.
 */
public final class HadoopDefaults {
    private HadoopDefaults() {}

    /** Unsets every entry whose only source is {@code file}; returns how many. */
    public static int dropEntriesOnlyFrom(Configuration conf, String file) {
        List<String> unused = new ArrayList<>();
        for (Map.Entry<String, String> entry : conf) {
            String[] sources = conf.getPropertySources(entry.getKey());
            if (sources != null && sources.length == 1 && sources[0].equals(file)) {
                unused.add(entry.getKey());
            }
        }
        unused.forEach(conf::unset);
        return unused.size();
    }
}
