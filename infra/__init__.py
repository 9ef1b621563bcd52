"""The services under the lakehouse: native processes or Docker Compose, one interface."""
