"""TODO docstring for builders/reports."""
