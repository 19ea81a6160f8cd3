"""A two-node Ray cluster started with ``ray start`` on this machine (``bench/ray_two_nodes.py``) builds a
LOAD TEST domain to the same bytes as two local worker processes (issue 46). Slow: two ``ray start`` nodes
and two cold builds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pqb.dataset import settings

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.mark.slow
def test_two_node_ray_cluster_builds_the_local_bytes(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="Ray is the optional `ray` extra (installed by scripts/setup.sh)")
    if not (settings.PQB_AMAZON_DIR / "Video_Games.jsonl").is_file():
        pytest.skip("needs the offline slice at $PQB_AMAZON_DIR")
    sys.path.insert(0, str(BENCH))
    import ray_two_nodes

    res = ray_two_nodes.compare("video_games", 0.001, tmp_path)
    assert res["rows_files"] > 5 and res["differ"] == [], res["differ"][:10]
