"""TODO docstring for harness/retrievers/neural."""
