"""Native mode: PostgreSQL, Kafka and Kafka Connect as local processes under `.lake/`."""
