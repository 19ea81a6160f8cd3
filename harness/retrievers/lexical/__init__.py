"""Lexical retrievers: BM25 (bm25s), Lucene BM25 (pyserini) and the seeded random floor.

Reads: the corpus handed to ``index``.
Writes: BM25 indices under ``PQB_CACHE_DIR``.
May import: pqb.dataset, pqb.harness.errors, pqb.harness.registry, pqb.harness.retrievers.
"""
