"""The engine: the one inference lane, the model it runs, and what a review costs on it."""
