"""The engine: the one inference lane, the model it runs, what a review costs on it, and
the tally each path keeps of its answers (the served scorer is built by app/scorer.py)."""
