"""The event log: the schema, the append-only day files, the writer and its redaction, prune."""
