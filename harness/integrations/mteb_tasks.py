"""PQB as MTEB retrieval tasks: ``mteb.evaluate(model, pqb_tasks())`` runs with no workaround.

Needs the optional extra: ``pip install "pqb-benchmark[mteb]"``. The dataset is MTEB's retrieval layout
already: for each domain ``d`` the configs ``d-corpus`` (``id``, ``title``, ``text``), ``d-queries``
(``id``, ``text``) and ``d-qrels`` (``query-id``, ``corpus-id``, ``score``), i.e. MTEB's subset
naming with the subset ``d``. So the task only declares metadata: MTEB's own loader and evaluator do
the rest, reading documents as ``title + " " + text`` exactly like the harness
(:meth:`pqb.harness.retrievers.base.Corpus.documents`), which ``tests/test_integrations_mteb.py``
checks with MiniLM (equal nDCG@10, identical target ranks).

The queries are every clean query (``<row id>``) and every error query (``<row id>_error``) with
their one relevant product: MTEB scores effectiveness; PQB's robustness metrics (Flip@K, Deg@K) come
from ``pqb-harness run`` (or the ``evaluate`` module) on the pairs. :func:`pqb_tasks` checks each
domain's views first (:func:`~pqb.harness.evaluation.dataset_checks.check_retrieval_views`), as
``export-beir`` does, since MTEB would read duplicate ids or qrels to absent documents without a word.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pqb.dataset import settings
from pqb.harness.errors import DatasetUnavailableError, MissingDependencyError
from pqb.harness.evaluation.dataset_checks import load_checked_views

LOCAL_REVISION = "local"
"""The revision recorded for a local folder (``datasets`` ignores revisions of local paths)."""


def _abstask() -> tuple[type, type]:
    try:
        from mteb.abstasks.retrieval import AbsTaskRetrieval
        from mteb.abstasks.task_metadata import TaskMetadata
    except ImportError as exc:
        raise MissingDependencyError("the MTEB tasks (pqb_tasks)", "mteb", "mteb") from exc
    return AbsTaskRetrieval, TaskMetadata


def retrieval_domains(dataset_path: str, revision: str | None = None) -> list[str]:
    """Domains whose three MTEB views (``-corpus``, ``-queries``, ``-qrels``) the dataset declares."""
    import datasets

    from pqb.harness.evaluation.data import require_hub

    local = Path(dataset_path).expanduser().exists()
    try:
        require_hub(dataset_path)
        names = set(datasets.get_dataset_config_names(dataset_path, revision=None if local else revision))
    except Exception as exc:  # datasets raises several types for "not found"/offline
        raise DatasetUnavailableError(
            f"dataset unavailable for the MTEB tasks: {dataset_path!r} ({type(exc).__name__}); build it "
            "locally (pqb-build) or pass dataset_path=<folder or reachable Hub id>"
        ) from exc
    return sorted(
        n.removesuffix("-qrels")
        for n in names
        if n.endswith("-qrels") and {n.replace("-qrels", "-corpus"), n.replace("-qrels", "-queries")} <= names
    )


def pqb_tasks(
    dataset_path: str | None = None, *, domains: Sequence[str] | None = None, revision: str | None = None
) -> list[Any]:
    """One MTEB retrieval task over every (or the given) domain of a PQB dataset, a subset per domain.

    ``dataset_path``: a local folder or a Hub id (default: the checkout's build, else the Hub id); ``revision``:
    the Hub revision (pin one for reproducible scores; ignored for a local folder).
    """
    abstask, metadata_cls = _abstask()
    path = dataset_path or settings.default_dataset_path()
    local = Path(path).expanduser().exists()
    found = retrieval_domains(path, revision)
    wanted = list(domains) if domains else found
    missing = sorted(set(wanted) - set(found))
    if missing or not wanted:
        raise DatasetUnavailableError(
            f"{path!r} has no MTEB views (<domain>-corpus/-queries/-qrels) for {missing or 'any domain'}; "
            f"it has {found or 'none'}: build them (pqb-build) or pass domains=[...] from that list"
        )
    for (
        domain
    ) in wanted:  # MTEB reads the views as they are: a duplicate id or a stray qrel would score silently
        load_checked_views(str(path), domain, None if local else revision)
    metadata = metadata_cls(
        name="PQBRetrieval",
        description=(
            "PersonalQuery-Benchmark (re-implementation build): personalised product-search queries, clean "
            "and with their author's own writing errors, each with its one target product (Amazon Reviews "
            "2023). Subsets are domains."
        ),
        reference="https://github.com/cpxjazz123/PersonalQuery-Benchmark",
        dataset={"path": str(path), "revision": LOCAL_REVISION if local else (revision or "main")},
        type="Retrieval",
        category="t2t",
        modalities=["text"],
        eval_splits=["test"],
        eval_langs={d: ["eng-Latn"] for d in wanted},
        main_score="ndcg_at_10",
        date=("2023-01-01", "2026-12-31"),
        domains=["Reviews", "Written"],
        task_subtypes=[],
        license="https://amazon-reviews-2023.github.io/",
        annotations_creators="derived",
        dialect=[],
        sample_creation="created",
        bibtex_citation=(
            "@misc{liang2026pqb, title={PersonalQuery-Benchmark: Evaluating Retrieval Robustness to "
            "Personalized User Expression Differences}, author={Liang, Wenyu and others}, year={2026}}"
        ),
    )
    task_cls = type("PQBRetrieval", (abstask,), {"metadata": metadata, "__doc__": __doc__})
    return [task_cls()]
