"""Standalone tools for the instructor and the docs (not tests, not served): run with `python -m tools.<name>`."""
