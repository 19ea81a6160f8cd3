"""Queries wing: attribute-conditioned candidate queries (compositional realizer or an LLM) and their filters.

Reads: ``products.parquet`` (targets and core terms), ``sentences.parquet`` (surface habits).
Writes: ``candidates.parquet``.
May import: pqb.dataset, pqb.builders.errors, pqb.builders.linalg, pqb.builders.workdir, pqb.builders.seeds, pqb.builders.kinds.
"""
