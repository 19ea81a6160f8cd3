"""bench/paper_scale.py: the process-tree CPU counts the workers, the serial/parallel split and the
projections follow their model, and the report renders from a run's record."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
import paper_scale as ps  # noqa: E402

BUSY = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass\ntime.sleep(30)"


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="reads /proc (Linux)")
def test_tree_cpu_counts_live_and_ended_children() -> None:
    before = ps.tree_cpu_s()
    live = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        deadline = time.monotonic() + 60
        while ps.tree_cpu_s() - before < 0.5 and time.monotonic() < deadline:  # a live child, from /proc
            time.sleep(0.1)
        assert ps.tree_cpu_s() - before >= 0.5
    finally:
        live.kill()
        live.wait()
    assert ps.tree_cpu_s() - before >= 0.5  # reaped: from getrusage, counted once
    assert ps.tree_cpu_s() - before < 5


def test_serial_and_parallel_are_the_stage_process_and_its_workers() -> None:
    s, p = ps.serial_parallel({"cpu_s": 160.0, "own_cpu_s": 40.0})
    assert (s, p) == (40.0, 120.0)
    assert ps.on_cores(s, p, 16) == pytest.approx(40 + 120 / 16)
    assert ps.serial_parallel({"cpu_s": 10.0, "own_cpu_s": 10.5}) == (
        10.5,
        0.0,
    )  # sampling jitter: no negative
    assert ps.affine(1.0, 10.0, 3.0, 30.0) == pytest.approx((0.0, 10.0))
    assert ps.affine(1.0, 30.0, 3.0, 10.0) == (10.0, 0.0)  # a falling cost (noise) counts as flat


def _record(scale: float, tokens: float, factor: float) -> dict:
    stages = [{"stage": "users", "wall_s": 100.0 * factor, "cpu_s": 180.0 * factor, "own_cpu_s": 20.0 * factor,
               "peak_rss_mb": 900.0, "cache": {"sents lookups": 10, "sents hits": 1},
               "stats": {"users_qualified": 7, "sentences": 50, "train_sentences": int(100 * factor)}},
              {"stage": "profiles", "wall_s": 110.0 * factor, "cpu_s": 110.0 * factor, "own_cpu_s": 110.0 * factor,
               "peak_rss_mb": 900.0, "cache": {},
               "stats": {"encoder_seconds": 100.0 * factor, "train_sentences": int(2000 * factor),
                         "encoder_eligible_sentences": int(2000 * factor), "encoder_max_sentences": 50_000}},
              {"stage": "publish", "wall_s": 5.0, "cpu_s": 5.0, "own_cpu_s": 5.0, "peak_rss_mb": 400.0, "cache": {},
               "stats": {"rows": 3}}]  # fmt: skip
    return {"domain": "video_games", "scale": scale, "tokens": tokens, "build": {"stages": stages}}


def test_projections_and_tables_render() -> None:
    main, fit = _record(1.0, 4.6e6 * 75.6, 10.0), _record(0.1, 4.6e5 * 75.6, 1.0)
    proj = ps.projections(main, fit, workers=2, cores=16, nodes=[2, 4])
    users = proj["stages"][0]
    assert users["serial_s"] == pytest.approx(200.0) and users["parallel_cpu_s"] == pytest.approx(1600.0)
    assert users["2_cores_s"] == pytest.approx(1000.0) and users["16_cores_s"] == pytest.approx(300.0)
    assert users["ray_4x16_s"] == pytest.approx(225.0)
    vg = proj["domains"]["video_games"]
    assert vg["kind"] == "measured" and proj["domains"]["baby_products"]["kind"] == "projected"
    # the fit passes through the main run; the encoder (50 ms a sentence, 20,000 of them) apart from it
    assert vg["2_workers_s"] == pytest.approx(1000.0 + 100.0 + 1000.0 + 5.0)
    assert proj["fits"]["profiles"]["serial"]["fixed_s"] == pytest.approx(0.0)  # 10 s and 100 s: no encoder
    assert proj["encoder"] == {"seconds_per_sentence": 0.05, "cap": 50_000, "measured_train_sentences": 20_000}
    big = ps._encoder_model(main["build"]["stages"][1], main["tokens"])
    assert big["at"](main["tokens"] * 10) == pytest.approx(0.05 * 50_000)  # past the cap: a fixed cost
    assert "projected apart" in proj["notes"][0]
    res = {"what": "x", "reviews": 10, "users": 5, "products": 2, "preset": "paper", "workers": 2, "commit": "c",
           "machine": "m", "date": "d", "load_average": {"start": 3.0, "end": 3.0}, "noisy": True, "generate_s": 1.0,
           "generator": {"means": {"reviews_per_user": 1.6, "tokens_per_review": 75.0},
                         "realised": {"users_ge50_sentences": 3, "ge50_sentences": 0.01}},
           "stages": main["build"]["stages"], "exit": 0, "wall_s": 105.0, "cpu_s": 185.0, "peak_rss_mb": 900.0,
           "linked_users": 4, "publishing": [{"what": "products step", "wall_s": 1.0, "cpu_s": 1.0,
                                               "peak_rss_mb": 100.0, "records": 2, "targets": 1}],
           "harness": [{"model": "bm25", "wall_s": 2.0, "cpu_s": 2.0, "peak_rss_mb": 300.0}],
           "fit_run": {"scale": 0.1}, "projection": proj, "scale": 1.0}  # fmt: skip
    text = ps.tables(res)
    assert (
        "NOISY" in text
        and "| users | 1000.0 | 1800.0 | 900 | users_qualified 7, sentences 50, train_sentences 1,000 |"
        in text
    )
    assert "sents 1/10 (10.0%)" in text and "`pqb-harness run --model bm25`" in text
    assert "| baby_products | projected" in text and "| video_games | measured" in text
    assert "note: the encoder's training is projected apart" in text
