"""The three layers as one medallion, for everything above them: every table in the order
the derived ones run (tables.py), the checks that the tables hold what their sources hold
(verify.py), and how the `lakehouse` command is invoked and what it answers (invocation.py).

It imports the core and the layers only, so the apps (the scheduler, the dashboard, the
metrics, the operations, the benchmarks) and the command line (pipeline/) all read the
registry from below them."""
