"""Upstream backends: named, with timeouts and auth taken from env-var names."""
