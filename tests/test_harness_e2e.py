"""End to end through the CLI entry on the synthetic tiny dataset (tests/pqb_fixtures.py).

Metrics are recomputed here independently: bm25s scored one query at a time, ranks by an explicit
sort on (-score, corpus index), metrics by plain Python formulas — no harness code in the loop.
"""

from __future__ import annotations

import json
import math
from itertools import combinations
from pathlib import Path

import bm25s
import pytest
from pqb_fixtures import make_tiny_dataset, tiny_tables

from pqb.harness.cli import main
from pqb.harness.evaluation.results import load_results, validate_results

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_tiny_dataset(tmp_path_factory.mktemp("ds"), ("video_games", "baby_products"))


def run_cli(dataset, out, *extra):
    args = ["--model", "bm25", "--tasks", "pqb", "--dataset_path", str(dataset), "--output_path", str(out)]
    assert main([*args, "--bootstrap_iters", "200", "--verbosity", "WARNING", *extra]) == 0
    files = sorted((out / "bm25").glob("results_*.json"))
    return load_results(files[-1]), files[-1]


def independent_ranks(domain):
    t = tiny_tables(domain)
    docs = sorted(t["corpus"].to_pylist(), key=lambda d: d["id"])
    ids = [d["id"] for d in docs]
    model = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    model.index(
        bm25s.tokenize([d["text"] for d in docs], stopwords="en", return_ids=False, show_progress=False),
        show_progress=False,
    )

    def rank(query, target):
        toks = [
            x
            for x in bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
            if x in model.vocab_dict
        ]
        scores = model.get_scores(toks) if toks else [0.0] * len(ids)
        order = sorted(range(len(ids)), key=lambda i: (-float(scores[i]), i))
        return order.index(ids.index(target)) + 1

    return t["rows"].to_pylist(), rank


def rr(r):
    return 1 / r if r <= 200 else 0.0


def test_end_to_end_metrics_schema_samples(dataset, tmp_path):
    res, path = run_cli(dataset, tmp_path, "--log_samples")
    validate_results(json.loads(path.read_text()))  # the file as written (lm-eval's shape)
    assert set(res["results"]) == {
        f"pqb_{p}_{d}" for p in ("syntactic", "error") for d in ("video_games", "baby_products")
    }
    assert set(res["skipped"]) == {"pqb_syntactic_musical_instruments", "pqb_error_musical_instruments"}
    assert res["group_subtasks"]["error"] == ["pqb_error_baby_products", "pqb_error_video_games"]

    rows, rank = independent_ranks("video_games")
    # syntactic: all cross-user pairs sharing pair_id (p4 has 3 users -> 3 pairs)
    r_of = {r["id"]: rank(r["query"], r["asin"]) for r in rows}
    by_pair = {}
    for r in rows:
        by_pair.setdefault(r["pair_id"], []).append(r["id"])
    pairs = [p for ids in by_pair.values() for p in combinations(ids, 2)]
    syn = res["results"]["pqb_syntactic_video_games"]
    assert syn["n_pairs"] == len(pairs) == 6 and syn["n_queries"] == 9
    for k in (1, 5, 10, 20):
        assert syn[f"flip@{k}"] == pytest.approx(
            sum((r_of[a] <= k) != (r_of[b] <= k) for a, b in pairs) / len(pairs)
        )
        assert syn[f"hit@{k}"] == pytest.approx(sum(v <= k for v in r_of.values()) / 9)
    assert syn["rrstd"] == pytest.approx(
        sum(abs(rr(r_of[a]) - rr(r_of[b])) / 2 for a, b in pairs) / len(pairs)
    )
    assert syn["mrr"] == pytest.approx(sum(rr(v) for v in r_of.values()) / 9)
    assert syn["ndcg@10"] == pytest.approx(sum(1 / math.log2(v + 1) for v in r_of.values() if v <= 10) / 9)
    assert syn["ties_touch_target"] >= 2  # G01 has an exact duplicate (G00X) that sorts first
    lo, hi = syn["rrstd_ci_lower"], syn["rrstd_ci_upper"]
    assert lo <= syn["rrstd"] <= hi

    err_rows = [r for r in rows if r["error_query"] is not None]
    clean = [rank(r["query"], r["asin"]) for r in err_rows]
    noisy = [rank(r["error_query"], r["asin"]) for r in err_rows]
    e = res["results"]["pqb_error_video_games"]
    assert e["n_pairs"] == len(err_rows) == 6
    for k in (1, 5, 10, 20):
        assert e[f"deg@{k}"] == pytest.approx(
            sum((c <= k) - (n <= k) for c, n in zip(clean, noisy, strict=False)) / 6
        )
        assert e[f"hit@{k}_error"] == pytest.approx(sum(n <= k for n in noisy) / 6)
    assert e["mrr_deg"] == pytest.approx(sum(rr(c) - rr(n) for c, n in zip(clean, noisy, strict=False)) / 6)
    assert e["mrr_clean"] - e["mrr_error"] == pytest.approx(e["mrr_deg"])

    # group = equal-weight mean over the member tasks that ran
    g = res["groups"]["syntactic"]
    assert g["flip@1"] == pytest.approx(
        (syn["flip@1"] + res["results"]["pqb_syntactic_baby_products"]["flip@1"]) / 2
    )
    bd = res["breakdowns"]["pqb_error_video_games"]
    assert bd["mechanism"]["transposition"]["n"] == 3 and bd["n_edits"]["2"]["n"] == 1
    assert bd["location"]["content_word"]["n"] == 6 and bd["location"]["function_word_only"]["n"] == 0
    assert sum(v["n"] for v in bd["position"].values()) >= 6 and "unknown" not in bd["position"]
    assert bd["profile"]["all"]["n"] == bd["profile"]["personal"]["n"] == 6
    assert res["config"]["model_info"]["library"] == "bm25s" and res["config"]["model_info"]["k1"] == 1.5

    samples = [
        json.loads(x)
        for x in next(
            (path.parent.parent / "details" / path.parent.name).glob("samples_pqb_error_video_games_*.jsonl")
        )
        .read_text()
        .splitlines()
    ]
    assert len(samples) == 12 and {s["side"] for s in samples} == {"clean", "error"}
    assert [s["rank"] for s in samples[:6]] == clean
    trec = (
        next((path.parent.parent / "details" / path.parent.name).glob("run_pqb_error_video_games_*.trec"))
        .read_text()
        .splitlines()
    )
    assert trec[0].split()[1] == "Q0" and len(trec) == 12 * min(100, 36)


def test_determinism_run_cache_and_resume(dataset, tmp_path):
    first, _ = run_cli(dataset, tmp_path)
    assert first["config"]["stats"]["index_calls"] == 2 and first["config"]["stats"]["queries_scored"] > 0
    second, _ = run_cli(dataset, tmp_path)  # --overwrite always: recomputes metrics from the run cache
    assert second["results"] == first["results"] and second["groups"] == first["groups"]
    assert second["config"]["stats"]["index_calls"] == 0 and second["config"]["stats"]["queries_scored"] == 0
    third, _ = run_cli(dataset, tmp_path, "--overwrite", "only-missing")
    assert sorted(third["config"]["reused_tasks"]) == sorted(first["results"])
    stats = third["config"]["stats"]
    assert stats["index_calls"] == 0 and stats["queries_scored"] == 0 and stats["run_cache_hits"] == 0
    strip = lambda d: {k: {m: v for m, v in e.items() if m != "reused_from"} for k, e in d.items()}  # noqa: E731
    assert strip(third["results"]) == strip(first["results"])
    # a fresh process-level cache miss: no run cache -> re-rank, but the on-disk index is reused
    fourth, _ = run_cli(dataset, tmp_path, "--no_run_cache")
    assert fourth["results"] == first["results"] and fourth["config"]["stats"]["index_cache_hits"] == 2


def test_overwrite_never_refuses(dataset, tmp_path, capsys):
    run_cli(dataset, tmp_path)
    args = [
        "--model",
        "bm25",
        "--tasks",
        "syntactic",
        "--dataset_path",
        str(dataset),
        "--output_path",
        str(tmp_path),
    ]
    assert main([*args, "--overwrite", "never"]) == 2
    assert "already exist" in capsys.readouterr().err


def test_strict_and_nothing_to_run(dataset, tmp_path):
    base = [
        "--model",
        "random",
        "--dataset_path",
        str(dataset),
        "--output_path",
        str(tmp_path),
        "--bootstrap_iters",
        "10",
    ]
    assert main([*base, "--tasks", "pqb", "--strict"]) == 1
    assert main([*base, "--tasks", "pqb_error_musical_instruments"]) == 1
    assert main([*base, "--tasks", "pqb_error_video_games", "--limit", "4"]) == 0  # pairs, not rows
    res = load_results(sorted((tmp_path / "random").glob("results_*.json"))[-1])
    assert res["results"]["pqb_error_video_games"]["n_pairs"] == 4 and res["config"]["limit"] == 4


def test_evaluate_module_agrees(dataset, tmp_path):
    import evaluate

    from pqb.harness.integrations.evaluate_metric import PQB_ROBUSTNESS_PATH

    res, path = run_cli(dataset, tmp_path, "--log_samples")
    samples = [
        json.loads(x)
        for x in next(
            (path.parent.parent / "details" / path.parent.name).glob("samples_pqb_error_video_games_*.jsonl")
        )
        .read_text()
        .splitlines()
    ]
    r = [math.inf if s["rank"] is None else s["rank"] for s in samples]
    got = evaluate.load(PQB_ROBUSTNESS_PATH).compute(predictions=r[:6], references=r[6:], pair_type="error")
    want = res["results"]["pqb_error_video_games"]
    for key in ("deg@1", "deg@10", "mrr_deg", "flip@1", "rrstd", "hit@5_clean", "mrr_error", "ndcg@10_error"):
        assert got[key] == pytest.approx(want[key]), key
    from pqb.harness.evaluation.pairtypes import PAIR_TYPES

    keys = PAIR_TYPES["error"].metric_names((1, 5, 10, 20))  # every key the harness reports, ratio included
    assert "flip@10_ratio" in keys and set(keys) <= set(got)
    for key in keys:
        assert got[key] == pytest.approx(math.nan if want[key] is None else want[key], nan_ok=True), key


def test_validate_cli(dataset, capsys):
    assert main(["validate", "--tasks", "pqb_error_video_games", "--dataset_path", str(dataset)]) == 0
    assert "OK: no violations" in capsys.readouterr().out


def test_stored_example_results_keep_loading():
    for path in sorted(DATA.glob("results_*.json")):
        res = load_results(path)
        assert res["results"] and res["schema_version"]
