"""PQB evaluation harness: tasks, retrievers, paired-robustness metrics, results and leaderboard.

``import pqb.harness`` stays light (numpy only); retrievers with heavy dependencies are imported lazily
through the model registry.

Wings (``evaluation``, ``retrievers``, ``reporting``, ``integrations``) each say in their ``__init__``
what they read, write and may import. Core modules (``errors``, ``registry``, ``models``,
``model_presets``) hold the model registry; the task registry lives in ``evaluation`` beside
``TaskConfig``'s readers.
Core may import: pqb.dataset, pqb.harness.errors, pqb.harness.registry, pqb.harness.models,
pqb.harness.model_presets,
pqb.harness.evaluation.metrics, pqb.harness.evaluation.pairs, pqb.harness.evaluation.pairtypes,
pqb.harness.evaluation.bootstrap, pqb.harness.retrievers.
Composition (``cli``) may import every wing.
"""

from pqb.dataset import __version__

__all__ = ["__version__"]
