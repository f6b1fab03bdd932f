"""The door: what every request meets before a path (bounds, deadlines, hang-ups, the drain)."""
