"""PQB task configs (YAML), shipped as package data ``pqb.harness.tasks``."""
