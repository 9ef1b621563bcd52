"""Operating the tables: savepoints and restores (savepoints.py), Hudi's table services
(maintenance.py), erasing a customer's personal data (erasure.py, redaction.py) and the
fault matrix (chaos.py)."""
