"""Watching the pipeline: its state read without a JVM (state.py), which the dashboard and
`lakehouse status` read too, its Prometheus metrics (metrics.py) and the quality gates'
Data Docs site (data_docs.py)."""
