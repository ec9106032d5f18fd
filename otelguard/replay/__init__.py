"""Stored spans through one engine in the order the live processor would have seen them (the analyzer and the service)."""
