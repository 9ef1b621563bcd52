"""What analysts use: the JDBC/ODBC server (jdbc.py, jvm/), the JVM-free query path
(fastpath.py), table history (history.py) and the notebooks' session (notebooks.py)."""
