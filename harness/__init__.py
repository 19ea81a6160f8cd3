"""PQB evaluation harness: tasks, retrievers, paired-robustness metrics, results and leaderboard.

The public Python API (README, "Python API")::

    import pqb.harness as ph

    results = ph.evaluate(model="bm25", tasks=["pqb"])           # the dict `pqb-harness run` writes
    results = ph.evaluate(model=MyRetriever(), tasks="syntactic") # your own ph.Retriever subclass

    @ph.register_model("my-retriever")                            # or a named one, for evaluate(model=...)
    class MyRetriever(ph.Retriever): ...

``import pqb.harness`` stays light (numpy only): the names below load on first use, and retrievers with
heavy dependencies are imported lazily through the model registry.

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

from typing import Any

from pqb.dataset import __version__

__all__ = [
    "Corpus",
    "EvaluationSession",
    "PQBHarnessError",
    "Retriever",
    "SearchResult",
    "SessionSettings",
    "__version__",
    "evaluate",
    "register_model",
]


def __getattr__(name: str) -> Any:
    """The public names, imported on first use (PEP 562), so ``import pqb.harness`` loads nothing heavy."""
    if name == "evaluate":
        from pqb.harness.evaluation.session import evaluate

        return evaluate
    if name in ("EvaluationSession", "SessionSettings"):
        from pqb.harness.evaluation import session

        return getattr(session, name)
    if name in ("Corpus", "Retriever", "SearchResult"):
        from pqb.harness.retrievers import base

        return getattr(base, name)
    if name == "register_model":
        from pqb.harness.registry import register_model

        return register_model
    if name == "PQBHarnessError":
        from pqb.harness.errors import PQBHarnessError

        return PQBHarnessError
    raise AttributeError(f"module 'pqb.harness' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
