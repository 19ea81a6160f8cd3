"""TODO docstring for harness/retrievers/lexical."""
