"""PQB task configs (YAML), shipped as package data ``harness.tasks``."""
