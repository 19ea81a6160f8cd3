"""TODO docstring for builders/writing_errors."""
