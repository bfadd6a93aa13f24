"""The entity graph and its indexers: entities.jsonl, the graph view, the tree and symbol indexers,
hubs, the RUNTIME layer."""
