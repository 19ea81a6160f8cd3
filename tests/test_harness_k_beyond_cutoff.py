"""A task whose k_values exceed rr_cutoff: Hit@K, Flip@K and Deg@K read ranks up to K, so the ranks the
evaluator asks the retriever for must be exact up to max(K) too, not only up to rr_cutoff.

Before the fix the ranking cutoff was max(200, rr_cutoff): every rank beyond 200 became a miss, so with
``k_values: [10, 1000]`` on the embedded 1,488-document corpus the random retriever reported Hit@1000 =
9.1% (= Hit@200) where the truth is 66.1%, and Flip@1000 = 14.0% where it is 39.8%. The TREC run of
``--log_samples`` stopped at max(run_depth, rr_cutoff) = 200 documents too, so ``score`` on the harness's
own run gave Hit@1000 = 9.1% again.
"""

from __future__ import annotations

import json
from pathlib import Path

from pqb.dataset import settings
from pqb.harness.cli import main

TASK = """task: {name}
dataset_name: video_games
pair_type: {pair_type}
k_values: [10, 1000]
rr_cutoff: {cutoff}
main_score: {main}
bootstrap: {{n_boot: 20, seed: 0}}
"""


def _run(tmp_path: Path, name: str, pair_type: str, cutoff: str, *extra: str) -> dict:
    inc = tmp_path / f"inc_{name}"
    inc.mkdir()
    main_score = "flip@10" if pair_type == "syntactic" else "deg@10"
    (inc / f"{name}.yaml").write_text(
        TASK.format(name=name, pair_type=pair_type, cutoff=cutoff, main=main_score), encoding="utf-8"
    )
    out = tmp_path / f"out_{name}"
    code = main(["run", "--model", "random", "--tasks", name, "--include_path", str(inc),
                 "--dataset_path", str(settings.REPO_ROOT / "pqb_dataset"), "--output_path", str(out),
                 "--verbosity", "WARNING", "--no-progress", *extra])  # fmt: skip
    assert code == 0
    (path,) = (out / "random").glob("results_*.json")
    return json.loads(path.read_text())["results"][name]


def _task_folder(tmp_path: Path, name: str) -> Path:
    return tmp_path / f"inc_{name}"


def test_hit_flip_deg_at_k_beyond_rr_cutoff_are_exact(tmp_path):
    for pair_type, metrics in (
        ("syntactic", ("hit@1000", "flip@1000")),
        ("error", ("hit@1000_error", "deg@1000")),
    ):
        cut = _run(tmp_path, f"k_cut_{pair_type}", pair_type, "200")
        full = _run(tmp_path, f"k_full_{pair_type}", pair_type, "null")  # full ranks: the reference
        for m in metrics:
            assert cut[m] == full[m], (pair_type, m, cut[m], full[m])
        # random ranks on 1,488 documents: Hit@1000 is about 1000/1488, far above Hit@200 (about 13%)
        assert cut[metrics[0]] > 0.5


def test_score_of_the_harness_run_reproduces_hit_at_k_beyond_rr_cutoff(tmp_path):
    name = "k_cut_trec"
    ran = _run(tmp_path, name, "syntactic", "200", "--log_samples")
    (trec,) = (tmp_path / f"out_{name}" / "details" / "random").glob("run_*.trec")
    out = tmp_path / "scored"
    assert main(["score", "--run", str(trec), "--tasks", name, "--include_path", str(_task_folder(tmp_path, name)),
                 "--dataset_path", str(settings.REPO_ROOT / "pqb_dataset"), "--output_path", str(out),
                 "--name", "scored"]) == 0  # fmt: skip
    (path,) = (out / "scored").glob("results_*.json")
    scored = json.loads(path.read_text())["results"][name]
    assert ran["hit@1000"] > 0.5  # exact ranks up to 1000 (see the test above)
    for m in ("hit@1000", "flip@1000", "mrr", "hit@10"):
        assert scored[m] == ran[m], (m, scored[m], ran[m])
