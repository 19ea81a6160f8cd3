"""TODO docstring for builders/syntax."""
