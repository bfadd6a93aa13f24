"""`context query`: its grammar, the keyword search and the answers over the graph."""
