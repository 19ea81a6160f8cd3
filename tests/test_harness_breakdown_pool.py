"""The leaderboard's pooled error breakdown ("all domains, pooled by pair count") pools each domain's own
task only, as the domain averages do.

Before the fix every error task of the selected runs entered the pool: ``run --tasks pqb,my_error_cut10``
(a user's task on video_games' rows with ``rr_cutoff: 10``) counted video_games twice, so the pooled
"brand" row of bm25 on the embedded dataset said n = 54 and MRRdeg 16.33% where the one domain has 27
pairs and 16.12%.
"""

from __future__ import annotations

from pqb_fixtures import make_tiny_dataset

from pqb.harness.cli import main
from pqb.harness.reporting.collect import breakdown_frame, load_runs

TASK = "task: my_error_cut1\ndataset_name: video_games\npair_type: error\nrr_cutoff: 1\nbootstrap: {n_boot: 10, seed: 0}\n"


def test_pooled_breakdown_counts_each_domain_once(tmp_path):
    ds = make_tiny_dataset(tmp_path / "ds", ("video_games",))
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "my_error_cut1.yaml").write_text(TASK)
    out = tmp_path / "res"
    assert main(["run", "--model", "bm25", "--tasks", "pqb_error_video_games,my_error_cut1", "--include_path",
                 str(inc), "--dataset_path", str(ds), "--output_path", str(out), "--bootstrap_iters", "10",
                 "--no-progress", "--verbosity", "WARNING"]) == 0  # fmt: skip
    frame = breakdown_frame(load_runs([out]))
    key = ["by", "stratum", "metric"]
    pooled = frame[frame["domain"] == "all"].set_index(key)[["value", "n"]].sort_index()
    domain = frame[frame["domain"] == "video_games"].set_index(key)[["value", "n"]].sort_index()
    assert not domain.empty and set(frame["domain"]) == {"all", "video_games", "my_error_cut1"}
    # one domain: the pool is that domain's own task, not the user's task on the same rows added in
    assert pooled.index.equals(domain.index)
    assert (pooled["n"] == domain["n"]).all()
    assert (pooled["value"] - domain["value"]).abs().max() < 1e-12
