"""``compare``'s domain averages (``groups``) take the domains' own ``pqb_<pair_type>_<domain>`` tasks only.

Before the fix every compared task of a pair type was averaged into the group: after ``run --tasks
pqb,error3`` the "group error (mean over 2 domains)" averaged pqb_error_video_games with the 3-edit task
of the same domain (bm25 on the embedded dataset: deg@10 3.23 and mrr_deg 9.90 printed where the run's own
``error`` group says 1.08 and 3.68; A − B mrr_deg 9.67 instead of 3.40).
"""

from __future__ import annotations

import json

from pqb_fixtures import make_tiny_dataset

from pqb.harness.cli import main
from pqb.harness.evaluation.results import load_results


def test_compare_group_is_the_runs_domain_average(tmp_path):
    ds = make_tiny_dataset(tmp_path / "ds", ("video_games",))
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "t_dose1.yaml").write_text(  # another view of the same domain: the first edit of each chain
        "task: t_dose1\ndataset_name: video_games\npair_type: error\nerror_dose: 1\nbootstrap: {n_boot: 20, seed: 0}\n"
    )
    out = tmp_path / "res"
    for model in ("bm25", "random"):
        assert main(["run", "--model", model, "--tasks", "error,t_dose1", "--include_path", str(inc),
                     "--dataset_path", str(ds), "--output_path", str(out), "--bootstrap_iters", "20",
                     "--no-progress", "--verbosity", "WARNING"]) == 0  # fmt: skip
    a, b = (next((out / m).glob("results_*.json")) for m in ("bm25", "random"))
    cmp = tmp_path / "cmp.json"
    assert main(["compare", str(a), str(b), "--bootstrap_iters", "20", "--permutations", "20",
                 "--output", str(cmp)]) == 0  # fmt: skip
    report = json.loads(cmp.read_text())
    assert set(report["tasks"]) == {"pqb_error_video_games", "t_dose1"}
    group = report["groups"]["error"]
    assert group["tasks"] == ["pqb_error_video_games"], group["tasks"]
    own = load_results(a)["groups"]["error"]  # the run's own domain average
    task = report["tasks"]["pqb_error_video_games"]["metrics"]
    for metric in ("deg@1", "mrr_deg", "hit@1_error"):
        assert group["metrics"][metric]["a"] == task[metric]["a"] == own[metric]
        assert group["metrics"][metric]["diff"] == task[metric]["diff"]
