"""Views over the event log: the dashboard's feed, episodes, the egress audit."""
