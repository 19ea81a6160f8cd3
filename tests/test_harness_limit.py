"""``--limit`` counts pairs, not rows (issue 44).

It took 10% of the *rows* and dropped the orphans: ``--limit 0.1`` evaluated 1 of the embedded build's 105
syntactic pairs, ``--limit 20`` 20 error pairs but 10 syntactic ones, and ``--limit 1`` or ``0.05`` stopped
with "the dataset has 1 violation(s) ... Rebuild it", blaming the dataset for what the limit did.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pqb.harness as ph
from pqb.dataset import settings
from pqb.harness.evaluation.evaluator import load_tasks
from pqb.harness.evaluation.pairs import syntactic_pairs
from pqb.harness.evaluation.session import EvaluationSession, SessionSettings

EMBEDDED = str(settings.REPO_ROOT / "pqb_dataset")
TASKS = ["pqb_syntactic_video_games", "pqb_error_video_games"]


def _pairs(limit: int | float) -> dict[str, int]:
    res = ph.evaluate(model="bm25", tasks=TASKS, dataset_path=EMBEDDED, limit=limit, bootstrap_iters=0,
                      progress=False, notify=lambda line: None)  # fmt: skip
    return {t.split("_")[1]: res["n-samples"][t]["effective"] for t in TASKS}


@pytest.mark.parametrize(
    "limit,want",
    # the embedded build: 96 syntactic and 192 error pairs
    [(0.1, {"syntactic": 10, "error": 20}),  # was 1 and 21 of 105 and 210 (10% of rows, orphans dropped)
     (0.5, {"syntactic": 48, "error": 96}),
     (20, {"syntactic": 20, "error": 20}),  # was 10 and 20
     (1, {"syntactic": 1, "error": 1}),  # was "the dataset has 1 violation(s)"
     (0.05, {"syntactic": 5, "error": 10})],  # was the same violation
)  # fmt: skip
def test_limit_counts_pairs_of_each_task_on_the_embedded_build(limit, want) -> None:
    assert _pairs(limit) == want


def test_a_limited_task_keeps_whole_pairs_only() -> None:
    tasks = EvaluationSession(SessionSettings(tasks=TASKS)).resolve()[1]
    full, _ = load_tasks(tasks, EMBEDDED)
    for limit in (0.1, 7):
        loaded, _ = load_tasks(tasks, EMBEDDED, limit)
        for name, data in loaded.items():
            p = data.pairs
            in_pairs = set(p.pair_a) | set(p.pair_b)
            assert in_pairs == set(range(len(p.queries))), name  # every query is in a kept pair
            assert sorted(set(p.row_index)) == list(range(len(data.rows))), name  # every row is used
            whole = full[name].pairs
            kept = dict(zip(whole.pair_ids, zip(whole.pair_a, whole.pair_b, strict=True), strict=False))
            for j, pid in enumerate(p.pair_ids):  # the same two queries as in the whole task
                a, b = kept[pid]
                assert (p.queries[p.pair_a[j]], p.queries[p.pair_b[j]]) == (
                    whole.queries[a],
                    whole.queries[b],
                )


def test_subset_of_a_three_row_group_keeps_exactly_the_chosen_pairs() -> None:
    """Rebuilding pairs from the kept rows would bring back the group's third pair."""
    rows = [
        {"id": f"r{i}", "query": f"q{i}", "asin": "A", "pair_id": "p", "user_id": f"u{i}"} for i in range(3)
    ]
    rows.append({"id": "r3", "query": "q3", "asin": "B", "pair_id": "solo", "user_id": "u3"})
    whole = syntactic_pairs(rows)
    assert len(whole.pair_a) == 3  # (0, 1), (0, 2), (1, 2)
    part, kept_rows = whole.subset([0, 2])
    assert kept_rows == [0, 1, 2] and part.queries == ("q0", "q1", "q2")
    assert [(part.queries[a], part.queries[b]) for a, b in zip(part.pair_a, part.pair_b, strict=True)] == [
        ("q0", "q1"), ("q1", "q2")]  # fmt: skip
    assert np.array_equal(part.row_index, [0, 1, 2])


def test_limit_is_in_the_resume_key_and_compare_reloads_the_same_pairs(tmp_path: Path) -> None:
    """compare reloads a limited run's pairs from ``config.limit``: the same selection, the same fingerprint."""
    from pqb.harness.evaluation.compare import compare_results
    from pqb.harness.evaluation.results import load_results

    paths = []
    for model in ("bm25", "random"):
        ph.evaluate(model=model, tasks=TASKS, dataset_path=EMBEDDED, limit=0.1, bootstrap_iters=0,
                    output_path=tmp_path / f"{model}.json", progress=False, notify=lambda line: None)  # fmt: skip
        paths.append(load_results(tmp_path / f"{model}.json"))
    cmp = compare_results(*paths, n_boot=20, n_perm=20)
    assert cmp["tasks"]["pqb_syntactic_video_games"]["n_pairs"] == 10
