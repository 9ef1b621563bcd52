"""The Bronze layer: every source topic landed in a Hudi MERGE_ON_READ table."""
