"""Retrievers: one module per back-end, grouped ``lexical``, ``neural``, ``rerankers``; the model registry
maps names to ``module:Class`` lazily, so ``pqb-harness ls models`` imports none of them.

Reads: the corpus handed to ``index`` and the model weights (Hub id or local path).
Writes: indices and embeddings under ``PQB_CACHE_DIR``.
May import: pqb.dataset, pqb.harness.errors, pqb.harness.registry, pqb.harness.evaluation.ranking.
"""
