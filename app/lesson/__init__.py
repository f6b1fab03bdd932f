"""The lesson's record: every path request of the class, for the instructor's view (/class) and notes."""
