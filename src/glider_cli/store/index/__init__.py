"""The store index: per day file, the turn folds every turn view reads (no view parses the log per call)."""
