package org.retailmax.serving;

import java.util.Set;
import org.apache.spark.sql.AnalysisException;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.expressions.CallMethodViaReflection;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.ScriptTransformation;
import org.apache.spark.sql.execution.command.SetCommand;
import scala.Function1;
import scala.collection.JavaConverters;
import scala.runtime.BoxedUnit;

/**
 * The JDBC server's guard (a spark.sql.extensions entry of the server's only): every
 * statement any connection sends is checked after analysis, before it runs, and refused unless it only
 * reads tables of the catalog. Refused: every command that is not SHOW, DESCRIBE, EXPLAIN,
 * USE or reading a setting (so DDL, INSERT, MERGE, DELETE, CACHE, ADD JAR, LOAD DATA, CALL,
 * and changing a setting); script transforms (SELECT TRANSFORM ... USING, which runs a
 * program); reflect() and java_method(); and, while spark.sql.runSQLOnFiles is on, every
 * statement, because then `text.`file:///...`` reads any file the server can.
 *
 * The server itself runs no statement: the pipeline registers each table in the catalog when
 * it writes it (lakehouse/catalog.py).
 */
public final class ReadOnlyAnalysts implements Function1<SparkSessionExtensions, BoxedUnit> {
    /** What an analyst may run besides queries: reading the catalog and the settings. */
    private static final Set<String> READING_COMMANDS = Set.of(
        "ShowTablesCommand", "ShowTables", "ShowTableExtended", "ShowNamespaces",
        "ShowColumnsCommand", "ShowColumns", "ShowPartitionsCommand", "ShowViewsCommand",
        "ShowViews", "ShowFunctionsCommand", "ShowFunctions", "ShowCreateTableCommand",
        "ShowTablePropertiesCommand", "ShowCatalogsCommand", "ShowCatalogs",
        "ShowCurrentNamespaceCommand", "ShowCurrentNamespace", "DescribeTableCommand",
        "DescribeRelation", "DescribeColumnCommand", "DescribeColumn", "DescribeDatabaseCommand",
        "DescribeNamespace", "DescribeFunctionCommand", "DescribeFunction",
        "DescribeQueryCommand", "ExplainCommand", "SetNamespaceCommand", "SetCatalogCommand",
        "SetCatalogAndNamespace");

    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        extensions.injectCheckRule(session -> plan -> {
            check(session, plan);
            return BoxedUnit.UNIT;
        });
        return BoxedUnit.UNIT;
    }

    private static void check(SparkSession session, LogicalPlan plan) {
        if (session.sessionState().conf().runSQLonFile()) {
            throw refused("any statement while spark.sql.runSQLOnFiles is on (it reads host "
                + "files by path); open a new connection without that setting");
        }
        visit(plan);
    }

    private static void visit(LogicalPlan node) {
        if (node instanceof ScriptTransformation) {
            throw refused("script transforms (SELECT TRANSFORM ... USING runs a program)");
        }
        if (node instanceof Command && !readsOnly(node)) {
            throw refused(node.nodeName() + " (a statement that changes tables, the catalog, "
                + "the server or its settings)");
        }
        for (Expression expression : JavaConverters.seqAsJavaList(node.expressions())) {
            expression.foreach(part -> {
                if (part instanceof CallMethodViaReflection) {
                    throw refused("reflect() and java_method() (they call Java methods)");
                }
                if (part instanceof SubqueryExpression) {
                    visit(((SubqueryExpression) part).plan());
                }
                return BoxedUnit.UNIT;
            });
        }
        for (LogicalPlan child : JavaConverters.seqAsJavaList(node.children())) {
            visit(child);
        }
    }

    private static boolean readsOnly(LogicalPlan command) {
        if (command instanceof SetCommand) {
            // SET and SET key show settings; SET key=value changes one.
            scala.Option<scala.Tuple2<String, scala.Option<String>>> pair =
                ((SetCommand) command).kv();
            return pair.isEmpty() || pair.get()._2().isEmpty();
        }
        return READING_COMMANDS.contains(command.getClass().getSimpleName());
    }

    /** Spark's own error for a statement it cannot run, as every JDBC client shows it. Scala
     * throws it unchecked; Java's compiler needs telling, so it is thrown "sneakily". */
    private static RuntimeException refused(String what) {
        return ReadOnlyAnalysts.<RuntimeException>sneaky(new AnalysisException(
            "refused: the RetailMax JDBC server only reads (SELECT, WITH, SHOW, DESCRIBE, "
                + "EXPLAIN, USE, SET to read a setting); not allowed: " + what,
            scala.Option.empty(), scala.Option.empty(), scala.Option.empty(),
            scala.Option.empty(), scala.collection.immutable.Map$.MODULE$.empty(),
            new org.apache.spark.QueryContext[0]));
    }

    @SuppressWarnings("unchecked")
    private static <E extends Throwable> RuntimeException sneaky(Throwable error) throws E {
        throw (E) error;
    }
}
