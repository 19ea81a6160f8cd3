"""Writing-errors wing: detected slips → mechanisms in context → personal profiles → injection into queries.

Reads: ``sentences.parquet`` (PROFILE split), ``users.parquet``, ``products.parquet`` (domain vocabulary).
Writes: ``errors/`` (``edits.parquet``, ``profiles.json``) and the correction cache.
May import: pqb.dataset, pqb.builders.errors, pqb.builders.linalg, pqb.builders.nlp, pqb.builders.parses,
pqb.builders.workdir, pqb.builders.seeds.
"""
