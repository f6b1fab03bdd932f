"""The instructor's knobs: the board, which owner each knob turns, and the lesson's token."""
