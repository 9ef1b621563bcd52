"""The file `spark-submit` runs for `python -m infra.submit` (infra/submit.py): the `lakehouse`
command, run from the project zip that comes with it as --py-files, as `python -m
pipeline.cli` runs it (medallion/invocation.py, `lakehouse`)."""

import runpy

runpy.run_module("pipeline.cli", run_name="__main__", alter_sys=True)
