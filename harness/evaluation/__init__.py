"""TODO docstring for harness/evaluation."""
