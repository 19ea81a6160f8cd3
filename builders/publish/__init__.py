"""TODO docstring for builders/publish."""
