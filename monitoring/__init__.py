"""The pipeline's Prometheus metrics (metrics.py)."""
