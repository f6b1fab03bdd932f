"""Observation: metrics, tallies and the live stats' fan-out."""
