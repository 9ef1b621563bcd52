"""The scheduled mode: the table declarations as a Dagster asset graph.

Every Bronze, Silver and Gold table is an asset whose dependencies are its declared inputs;
its quality rules are asset checks; a schedule runs the graph (hourly by default,
SCHEDULE_CRON), per-layer jobs run one layer, and a second schedule checks every Gold
table's freshness. Each materialization runs the project's own command for that one table
(`lakehouse silver --table T --json`) as a subprocess, so no JVM lives in the orchestrator
and the command's locks keep one writer per layer, beside the continuous pipeline too.

`make scheduler` serves the UI on http://localhost:3000 (SCHEDULER_PORT) and runs the
daemon that fires the schedules, both with their state under `.lake/dagster`.

Layout: `assets.py` translates declarations into assets and checks, `table_jobs.py` runs a
table's command and reads what it reports, `policy.py` says how every job retries and how
every schedule fires, `maintenance.py` is the table services' job, `definitions.py` holds
the one `Definitions` object, `service.py` starts and stops the webserver and the daemon.
"""
