"""The composition root: the `lakehouse` command line (cli/), the passes it runs over the
tables (passes.py), the demo `make up` starts (demo.py) and its status (status.py). Nothing
imports it; the registry of the tables it runs lives below the apps, in medallion/."""
