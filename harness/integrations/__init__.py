"""Integrations: PQB inside other tools' interfaces (the ``evaluate`` metric module, MTEB task classes
in :mod:`.mteb_tasks` with the optional ``mteb`` extra, the BEIR folder export in :mod:`.beir_export`).

Reads/writes nothing of its own: each integration adapts :mod:`pqb.harness.evaluation`.
May import: pqb.dataset, pqb.harness.errors, pqb.harness.evaluation.
"""
