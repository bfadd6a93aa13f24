"""Upstream backends: named, with timeouts and auth taken from env-var names (`registry`), reached
through one aiohttp client (`client`, `aiohttp_upstream`) routed per origin (`network`)."""
