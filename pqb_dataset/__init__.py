"""PQB dataset: the published benchmark files plus the one schema module shared by harness and builders.

This folder is a Hugging Face dataset repository (``README.md`` dataset card with a YAML ``configs:``
block and parquet files) *and* a tiny Python package. The package holds only what both sides of the
project must agree on: the column schema (:mod:`pqb.dataset.schema`), environment settings
(:mod:`pqb.dataset.settings`) and atomic file writes (:mod:`pqb.dataset.io`). ``builders`` writes
datasets in this schema, ``harness`` reads them; neither imports the other.
"""

from pqb.dataset.schema import SCHEMA_VERSION

__all__ = ["SCHEMA_VERSION"]
