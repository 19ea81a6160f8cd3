"""Integrations: PQB inside other tools' interfaces (the ``evaluate`` metric module).

Reads/writes nothing of its own: each integration adapts :mod:`pqb.harness.evaluation`.
May import: pqb.dataset, pqb.harness.errors, pqb.harness.evaluation.
"""
