"""Glider: a local-first router for coding agents."""

__version__ = "0.1.0.dev0"
