"""Observation: metrics and the live stats' fan-out (a path's tally of
answers is app/engine/tally.py, beside the lane it times)."""
