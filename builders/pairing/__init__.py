"""Pairing wing: candidates × user Gaussians → cross-user syntactic pairs and within-user error pairs.

Reads: ``candidates.parquet``, ``links.parquet``, ``syntax/gaussians.parquet``, ``errors/profiles.json``.
Writes: ``pairs.parquet``.
May import: pqb.dataset, pqb.builders.errors, pqb.builders.linalg, pqb.builders.nlp, pqb.builders.parses,
pqb.builders.executor, pqb.builders.workdir,
pqb.builders.seeds, pqb.builders.syntax, pqb.builders.writing_errors, pqb.builders.queries.
"""
