"""Evaluation: task YAMLs (:mod:`.task_registry`), the evaluation session (:mod:`.session`), task data →
pairs, ranking, run cache, metrics, bootstrap CIs, comparisons.

Reads: the dataset (local folder or Hub id) through ``datasets``; TREC runs for ``score``.
Writes: the run cache under ``PQB_CACHE_DIR`` and the results file (:mod:`pqb.harness.evaluation.results`).
May import: pqb.dataset, pqb.harness.errors, pqb.harness.registry, pqb.harness.retrievers.
"""
