"""`make bench`: each part of the pipeline measured on this machine, one module per part,
its results written to results/ (report.py says what every results file shares), which the
docs' build reads. ci_times.py writes `.ci/run`'s times there too."""
