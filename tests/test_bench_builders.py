"""bench/bench_builders.py: the all-processes peak RSS counts the stage's worker processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
import bench_builders as bb  # noqa: E402

# a parent holding ~20 MB that starts a child holding ~150 MB, then both wait to be killed
TREE = """
import subprocess, sys, time
held = bytearray(20 * 2**20)
child = subprocess.Popen([sys.executable, "-c", "import time; b = bytearray(150 * 2**20); print(1, flush=True); time.sleep(60)"],
                         stdout=subprocess.PIPE)
child.stdout.readline()
print(child.pid, flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(not Path("/proc/self/statm").is_file(), reason="reads /proc (Linux)")
def test_tree_rss_sums_the_children():
    proc = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE)
    child = 0
    try:
        child = int(proc.stdout.readline())
        own = int(Path(f"/proc/{proc.pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
        tree = bb.paper_scale.tree_rss_mb(proc.pid)
        assert own < 100 and tree > own + 150
    finally:
        if child:
            os.kill(child, signal.SIGKILL)
        proc.kill()
        proc.wait()


def test_tables_give_cache_hit_rates_and_the_shares_beside_the_real_slice():
    stage = {"seconds": 2.0, "wall_seconds": 3.0, "cpu_seconds": 5.5, "peak_rss_mb": 100.0,
             "all_processes_peak_rss_mb": 300.0, "cache": {"sents lookups": 200, "sents hits": 1}}  # fmt: skip
    shares = {"reviews": 1000, "distinct_texts": 0.999, "sentences": 5000, "distinct_sentences": 0.995}
    real = {"reviews": 1343, "distinct_texts": 0.954, "sentences": 6714, "distinct_sentences": 0.976}
    row = {"n": 1000, "users": 300, "generate_s": 0.1, "texts": "distinct", "shares": shares, "real_shares": real,
           "stages": {"users": stage}}  # fmt: skip
    out = bb.tables({"load_test": [row]})
    assert "texts distinct" in out
    assert "| 1,000 | users | 2.0 (3.0) | 5.5 | 100 | 300 |  | sents 1/200 (0.5%) |" in out
    assert "| the real slice | 1,343 | 95.4% | 6,714 | 97.6% |" in out
    assert "| LOAD TEST 1,000 (distinct) | 1,000 | 99.9% | 5,000 | 99.5% |" in out


def test_projection_is_linear_from_the_largest_run_without_link():
    stage = {"all_processes_peak_rss_mb": 1.0, "peak_rss_mb": 1.0, "cpu_seconds": 1.0}
    rows = [{"n": n, "users": 1, "generate_s": 0.1, "stages": {
        "users": {**stage, "seconds": 0.036 * n, "wall_seconds": 0.04 * n},
        "link": {**stage, "seconds": 5.0, "wall_seconds": 5.0},
        "profiles": {**stage, "seconds": 0.072 * n, "wall_seconds": 0.08 * n}}} for n in (1000, 2000)]  # fmt: skip
    out = bb.tables({"load_test": rows})
    assert "linear from 2,000 reviews on this machine: 30.0 h per 1M reviews (profiles 20.0 h, users 10.0 h)" in out


def test_affine_projection_separates_a_fixed_cost_from_the_per_review_cost():
    """Two sizes: fixed + per-review × N per stage, so a capped cost (the encoder's training) is paid once
    and not once per review; a slope that only noise can make negative counts as a fixed cost."""
    stage = {"all_processes_peak_rss_mb": 1.0, "peak_rss_mb": 1.0, "cpu_seconds": 1.0}
    rows = [{"n": n, "users": 1, "generate_s": 0.1, "stages": {
        "profiles": {**stage, "seconds": 360.0 + 0.0036 * n, "wall_seconds": 400.0 + 0.0036 * n},
        "pair": {**stage, "seconds": 40.0 - 1e-5 * n, "wall_seconds": 40.0}}} for n in (20_000, 100_000)]  # fmt: skip
    out = bb.tables({"load_test": rows})
    assert "affine from 20,000 and 100,000 reviews (fixed 7 min) on this machine: 1.1 h per 1M reviews (profiles 1.1 h, pair 0.0 h)" in out
    assert "linear from 100,000 reviews on this machine: 2.1 h per 1M reviews (profiles 2.0 h, pair 0.1 h)" in out
