"""RetailMax Lakehouse: the core every layer shares (settings, command line)."""
