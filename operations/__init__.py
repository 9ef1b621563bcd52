"""Running the lakehouse: fault injection and, as they land, table services and recovery."""
