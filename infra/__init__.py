"""The services under the lakehouse, native processes or Docker Compose behind one interface
(stack.py, native/, docker/, serve.py), the shared catalog's database (metastore.py), the
demo's workers (workers.py), and the project packaged for spark-submit (submit.py, spark/)."""
