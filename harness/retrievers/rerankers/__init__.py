"""Rerankers: cross-encoders and pointwise LLM rerankers over any first stage.

Reads: checkpoints by Hub id or local path.
Writes: nothing (first-stage lists come from the run cache).
May import: pqb.dataset, pqb.harness.errors, pqb.harness.registry, pqb.harness.retrievers.
"""
