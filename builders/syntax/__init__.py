"""Syntax wing: dependency/POS rules → SVD → 16-d contrastive encoder → per-user rank-one + diagonal Gaussians.

Reads: ``sentences.parquet`` and ``users.parquet`` of the work dir.
Writes: ``syntax/`` (vocabulary, SVD, encoder weights, ``gaussians.parquet``, ``embeddings.parquet``).
May import: pqb.dataset, pqb.builders.errors, pqb.builders.linalg, pqb.builders.nlp, pqb.builders.parses,
pqb.builders.workdir, pqb.builders.seeds.
"""
