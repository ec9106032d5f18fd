"""Verdicts for a person to read: the text reports."""
