"""TODO docstring for builders/queries."""
