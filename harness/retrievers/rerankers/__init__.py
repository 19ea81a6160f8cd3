"""TODO docstring for harness/retrievers/rerankers."""
