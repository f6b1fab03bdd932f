"""Ticket jobs: their record, and the stores that keep them."""
