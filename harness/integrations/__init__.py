"""TODO docstring for harness/integrations."""
