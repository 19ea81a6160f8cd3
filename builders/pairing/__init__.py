"""TODO docstring for builders/pairing."""
