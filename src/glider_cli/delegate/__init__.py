"""Delegation to other agent CLIs, with the per-workspace continuity record."""
