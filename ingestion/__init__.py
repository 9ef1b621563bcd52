"""The operational sources: the Postgres schema and workload, the event producers, and the
Debezium connector that captures Postgres into Kafka."""
