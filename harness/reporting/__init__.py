"""TODO docstring for harness/reporting."""
