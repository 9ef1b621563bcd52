"""What analysts use: the JDBC/ODBC server, the JVM-free query path, and table history."""
