"""The context store: append-only event log, entity graph, queries, prune."""
