"""The error-sampling attribution study (pqb.builders.reports.error_study) on a toy work dir."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from pqb_fixtures import toy_channel
from test_builders_error_profiles import FakeCorrector

from pqb.builders.config import BuildConfig
from pqb.builders.reports.error_study import CONDITIONS, bootstrap_ci, expected_rank_metrics, run_error_study
from pqb.builders.workdir import WorkDir, write_parquet
from pqb.builders.writing_errors.profiles import run_errors


def test_expected_rank_metrics_break_ties_uniformly() -> None:
    scores = np.array(
        [
            [3.0, 1.0, 2.0],  # true user 0 is first                -> top1 1, rr 1
            [3.0, 1.0, 2.0],  # true user 1 is third                -> top1 0, rr 1/3
            [2.0, 2.0, 1.0],  # true user 0 tied with one for first -> top1 1/2, rr (1 + 1/2) / 2
        ]
    )
    top1, rr = expected_rank_metrics(scores, np.array([0, 1, 0]))
    assert top1.tolist() == [1.0, 0.0, 0.5]
    assert rr == pytest.approx([1.0, 1 / 3, (1 + 1 / 2) / 2])


def test_bootstrap_ci_brackets_the_mean() -> None:
    v = np.random.default_rng(0).random(200)
    lo, hi = bootstrap_ci(v, 500, np.random.default_rng(1))
    assert lo < v.mean() < hi


def _toy(root: Path) -> WorkDir:
    rows = []
    typos = {"u1": "gsme", "u2": "teh", "u3": "realy", "u4": "fsst"}
    for u, typo in typos.items():
        for i in range(6):
            text = f"This {typo} was a lot of fun and I played it every day number {i}."
            rows.append({"user_id": u, "parent_asin": "A", "review_idx": i, "sent_idx": 0,
                         "sentence_id": f"{u}:{i}", "text": text, "split": "profile"})  # fmt: skip
        for i in range(3):
            rows.append({"user_id": u, "parent_asin": "A", "review_idx": 9, "sent_idx": i,
                         "sentence_id": f"{u}:h{i}", "text": f"The controller works well with the console {i}.",
                         "split": "heldout"})  # fmt: skip
    wd = WorkDir(root, "toy")
    write_parquet(pa.Table.from_pylist(rows), wd.path / "sentences.parquet")
    run_errors(wd, BuildConfig(), corrector=FakeCorrector())
    return wd


def test_study_writes_reports_and_is_deterministic(tmp_path: Path) -> None:
    a = run_error_study(_toy(tmp_path / "a"), n_boot=50, pool_size=3, channel=toy_channel())
    b = run_error_study(_toy(tmp_path / "b"), n_boot=50, pool_size=3, channel=toy_channel())
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert set(a["conditions"]) == set(CONDITIONS) and a["users"] == 4
    for c in a["conditions"].values():
        assert 0 <= c["all"]["top1"] <= 1 and 0 < c["all"]["mrr"] <= 1
        assert "pool" in c
    # each toy user has one distinctive mechanism: their own sampled typos point back at them
    assert a["conditions"]["personalized"]["all"]["mrr"] > 0.5
    md = (tmp_path / "a" / "toy" / "validation" / "error_sampling.md").read_text()
    assert "| personalized |" in md and "9.35" in md
