"""RetailMax Lakehouse's core: what every layer and app shares, and imports nothing of
theirs. The settings (settings.py), the Spark session and the catalog (spark.py,
catalog.py), what a table declaration is and its rules (tables.py, rules.py, domain.py),
reading and writing Hudi (hudi.py, timeline.py, layout.py, partitions.py, files.py), the
incremental runner of every derived table and what it decides and writes (incremental.py,
costs.py, changeset.py, quality.py, reports.py), one writer per table (locks.py), the jars
and classes the JVM loads (artifacts.py, jvm.py) and whether a service answers
(network.py). The `lakehouse` command is the composition root's (pipeline/cli)."""
