"""The release comparison (pqb.builders.reports.release_compare) on a tiny release written by the test."""

from __future__ import annotations

import json
from pathlib import Path

from pqb.builders.reports.release_compare import compare_release, core_term_proxy, release_domain_stats

RELEASE = {
    "B1": [
        {"asin": "B1", "uid": "u1", "syntax_query": "I want a Corsair wireless headset with a long cable.",
         "typo_query": "I want a Corsiar wireless headset with a lnog cable."},
        {"asin": "B1", "uid": "u2", "syntax_query": "Looking for a wireless headset by Corsair, long cable please.",
         "typo_query": None},
    ],
    "B2": [
        {"asin": "B2", "uid": "u3", "syntax_query": "A black mouse for gaming.",
         "typo_query": "A black mousse for gamign."},
    ],
}  # fmt: skip


def test_core_term_proxy_keeps_shared_content_words() -> None:
    qs = [r["syntax_query"] for r in RELEASE["B1"]]
    assert core_term_proxy(qs) == {"corsair", "wireless", "headset", "long", "cable"}
    assert core_term_proxy([]) == set()


def test_release_stats_count_core_hits_and_mechanisms() -> None:
    st = release_domain_stats(RELEASE)
    assert st["records"] == 3 and st["records_with_typo"] == 2
    multi = st["asins_with_2plus_queries"]
    assert multi["edits"] == 2 and multi["edits_touching_core"] == 2  # Corsair and long are shared words
    assert multi["mechanism_counts"]["transposition"] == 2
    # exact core terms override the proxy
    exact = release_domain_stats(RELEASE, {"B1": ["wireless headset", "Corsair", "black", "x", "y"]})
    assert exact["asins_with_2plus_queries"]["core_share_exact"] == 0.5
    allq = st["all_asins"]
    assert allq["mechanism_counts"]["repetition"] == 1 and allq["edits_per_query_hist"] == {"2": 2}


def test_compare_release_writes_reports(tmp_path: Path) -> None:
    rel = tmp_path / "release"
    rel.mkdir()
    (rel / "Video_Games.json").write_text(json.dumps(RELEASE))
    out = compare_release(release_dir=rel, out_dir=tmp_path / "out")
    assert "video_games" in out["domains"] and "ours" not in out["domains"]["video_games"]
    md = (tmp_path / "out" / "release_compare.md").read_text()
    assert "## video_games" in md and "edits touching a core term" in md
    assert json.loads((tmp_path / "out" / "release_compare.json").read_text())["seed"] == 0
