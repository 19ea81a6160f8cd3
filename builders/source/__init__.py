"""TODO docstring for builders/source."""
