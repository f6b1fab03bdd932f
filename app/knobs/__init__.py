"""The instructor's knobs: the board, which owner each knob turns, the box's own knobs
(`box.py`: its target and memory cap), and the lesson's token."""
