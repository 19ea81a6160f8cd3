"""``pqb-harness score``: harness-written TREC runs scored back give identical metrics; runs keep
rr_cutoff documents; qrels are written; a query missing from the run counts as a miss and is reported."""

from __future__ import annotations

from pathlib import Path

import pytest
from pqb_fixtures import make_tiny_dataset

from pqb.harness.cli import main
from pqb.harness.evaluation.results import load_results

TASKS = ("pqb_syntactic_video_games", "pqb_error_video_games")


@pytest.fixture(scope="module")
def harness_run(tmp_path_factory):
    ds = make_tiny_dataset(tmp_path_factory.mktemp("ds"), ("video_games",))
    out = tmp_path_factory.mktemp("res")
    assert main(["run", "--model", "bm25", "--tasks", ",".join(TASKS), "--dataset_path", str(ds), "--output_path",
                 str(out), "--bootstrap_iters", "100", "--log_samples", "--no-progress"]) == 0  # fmt: skip
    return ds, next((out / "bm25").glob("results_*.json"))


def _score(ds: Path, out: Path, task: str, *runs: Path) -> dict:
    assert main(["score", "--run", ",".join(map(str, runs)), "--tasks", task, "--dataset_path", str(ds),
                 "--output_path", str(out), "--name", "bm25", "--bootstrap_iters", "100"]) == 0  # fmt: skip
    return load_results(sorted((out / "bm25").glob("results_*.json"))[-1])


@pytest.mark.parametrize("task", TASKS)
def test_round_trip_gives_identical_metrics(harness_run, tmp_path, task):
    ds, path = harness_run
    original = load_results(path)
    stamp = path.name.removeprefix("results_").removesuffix(".json")
    run = (path.parent.parent / "details" / path.parent.name) / f"run_{task}_{stamp}.trec"
    scored = _score(ds, tmp_path, task, run)
    want = {k: v for k, v in original["results"][task].items() if k != "ties_touch_target"}
    score_only = {"n_queries_missing_from_run", "n_run_docs_not_in_corpus", "n_queries_shallower_than_k",
                  "n_queries_ranks_against_scores"}  # fmt: skip
    got = {k: v for k, v in scored["results"][task].items() if k not in score_only}
    assert got == want  # every metric and CI, bit for bit
    assert all(scored["results"][task][k] == 0 for k in score_only)
    assert scored["config"]["external_run"]["missing_query"].startswith("counted as a miss")
    qrels = (
        ((path.parent.parent / "details" / path.parent.name) / f"qrels_{task}_{stamp}.txt")
        .read_text()
        .splitlines()
    )
    assert len(qrels) == original["results"][task]["n_queries"]
    assert all(q.split()[1] == "0" and q.split()[3] == "1" and len(q.split()) == 4 for q in qrels)


def test_missing_query_counts_as_a_miss(harness_run, tmp_path):
    ds, path = harness_run
    stamp = path.name.removeprefix("results_").removesuffix(".json")
    lines = (
        ((path.parent.parent / "details" / path.parent.name) / f"run_pqb_error_video_games_{stamp}.trec")
        .read_text()
        .splitlines()
    )
    clean = [line for line in lines if "_error " not in line]
    error = [line.replace("_error ", " ", 1) for line in lines if "_error " in line]  # plain row ids
    dropped = error[0].split()[0]
    (tmp_path / "clean.trec").write_text("\n".join(clean) + "\n")
    (tmp_path / "error.trec").write_text("\n".join(x for x in error if x.split()[0] != dropped) + "\n")
    scored = _score(
        ds, tmp_path / "out", "pqb_error_video_games", tmp_path / "clean.trec", tmp_path / "error.trec"
    )
    entry = scored["results"]["pqb_error_video_games"]
    assert entry["n_queries_missing_from_run"] == 1
    ranks = dict(zip(scored["ranks"]["pqb_error_video_games"]["query_id"],
                     scored["ranks"]["pqb_error_video_games"]["rank"], strict=True))  # fmt: skip
    assert ranks[f"{dropped}_error"] is None
    original = load_results(path)["results"]["pqb_error_video_games"]
    assert (
        entry["hit@20_error"] <= original["hit@20_error"]
        and entry["hit@20_clean"] == original["hit@20_clean"]
    )


def test_same_run_for_both_sides_is_noted_and_refused_under_strict(harness_run, tmp_path, capsys):
    """``--run clean.trec,clean.trec`` (or a copy) scored the clean ranking as the error side: Deg@K and
    MRRdeg 0 [0, 0], exit 0, with no word, read as perfect robustness. (A system that ranks every typo'd
    query as its clean one writes the same bytes, so it is a note, and --strict refuses.)"""
    ds, path = harness_run
    clean = [line for line in _task_run(path, TASKS[1]) if "_error " not in line]
    for name in ("clean.trec", "copy.trec"):
        (tmp_path / name).write_text("\n".join(clean) + "\n")
    for second in ("clean.trec", "copy.trec"):
        argv = ["score", "--run", f"{tmp_path / 'clean.trec'},{tmp_path / second}", "--tasks", TASKS[1],
                "--dataset_path", str(ds), "--bootstrap_iters", "40"]  # fmt: skip
        assert main([*argv, "--strict", "--output_path", str(tmp_path / "strict")]) == 1
        assert "--strict and the two run files" in capsys.readouterr().err
        assert main([*argv, "--output_path", str(tmp_path / f"out-{second}")]) == 0
        assert "have the same bytes" in capsys.readouterr().err
    assert not (tmp_path / "strict").exists()


def test_harness_runs_keep_rr_cutoff_documents(tmp_path):
    from pqb.harness.evaluation.evaluator import run_file_depth
    from pqb.harness.evaluation.task_registry import task_from_dict

    cfg = task_from_dict({"task": "t", "dataset_name": "x", "pair_type": "error", "run_depth": 100})
    assert run_file_depth(cfg) == 200  # MRR counts ranks up to 200, so the run must hold them
    assert (
        run_file_depth(
            task_from_dict({"task": "t", "dataset_name": "x", "pair_type": "error", "rr_cutoff": None})
        )
        == 100
    )


def test_bad_run_line_is_one_error(harness_run, tmp_path, capsys):
    ds, _ = harness_run
    (tmp_path / "bad.trec").write_text("q1 Q0 D1 1\n")
    assert (
        main(["score", "--run", str(tmp_path / "bad.trec"), "--tasks", TASKS[0], "--dataset_path", str(ds)])
        == 1
    )
    assert "bad.trec:1: a TREC run line has 6 fields" in capsys.readouterr().err


# -- run lines naming documents outside the corpus ----------------------------------------------------------


def _task_run(path: Path, task: str) -> list[str]:
    stamp = path.name.removeprefix("results_").removesuffix(".json")
    return (
        (path.parent.parent / "details" / path.parent.name / f"run_{task}_{stamp}.trec")
        .read_text()
        .splitlines()
    )


def test_run_of_another_corpus_is_refused(harness_run, tmp_path, capsys):
    """Every doc id lower-cased: nothing can be a hit, and Flip = 0 [0, 0] must not read as robustness."""
    ds, path = harness_run
    lines = _task_run(path, TASKS[0])
    (tmp_path / "lower.trec").write_text(
        "\n".join(" ".join([p[0], p[1], p[2].lower(), *p[3:]]) for p in map(str.split, lines)) + "\n"
    )
    argv = ["score", "--run", str(tmp_path / "lower.trec"), "--tasks", TASKS[0], "--dataset_path", str(ds),
            "--output_path", str(tmp_path / "out"), "--bootstrap_iters", "10"]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "name a document id that is not in its corpus" in err and "none names one that is" in err
    assert "lower.trec:1: document 'g" in err  # the first offending lines, by file:line
    assert not (tmp_path / "out").exists()


def test_byte_order_mark_and_crlf_score_as_the_plain_file(harness_run, tmp_path):
    """A run saved by a Windows editor (BOM, CRLF): the BOM once became part of the first query id, so that
    query's first document was ranked under an id no task has and the query scored without it, silently."""
    ds, path = harness_run
    lines = _task_run(path, TASKS[0])
    (tmp_path / "plain.trec").write_text("\n".join(lines) + "\n")
    (tmp_path / "bom.trec").write_bytes(b"\xef\xbb\xbf" + ("\r\n".join(lines) + "\r\n").encode())
    plain = _score(ds, tmp_path / "a", TASKS[0], tmp_path / "plain.trec")
    bom = _score(ds, tmp_path / "b", TASKS[0], tmp_path / "bom.trec")
    assert bom["ranks"][TASKS[0]] == plain["ranks"][TASKS[0]]
    assert bom["results"][TASKS[0]]["mrr"] == plain["results"][TASKS[0]]["mrr"]


def test_unknown_documents_are_counted_noted_and_refused_under_strict(harness_run, tmp_path, capsys):
    ds, path = harness_run
    lines = _task_run(path, TASKS[0])
    bad = lines[0].split()
    lines[0] = " ".join([*bad[:2], "NOT-A-DOC", *bad[3:]])
    (tmp_path / "one.trec").write_text("\n".join(lines) + "\n")
    scored = _score(ds, tmp_path / "out", TASKS[0], tmp_path / "one.trec")
    assert scored["results"][TASKS[0]]["n_run_docs_not_in_corpus"] == 1
    assert scored["config"]["external_run"]["n_docs_not_in_corpus"] == {TASKS[0]: 1}
    assert (
        f"note: {TASKS[0]}: 1 of {len(lines)} run lines ({100 / len(lines):.1f}%) name a document not in the corpus"
        in capsys.readouterr().err
    )
    assert main(["score", "--run", str(tmp_path / "one.trec"), "--tasks", TASKS[0], "--dataset_path", str(ds),
                 "--output_path", str(tmp_path / "strict"), "--strict"]) == 1  # fmt: skip
    err = capsys.readouterr().err
    assert "--strict and 1 run line(s)" in err and "one.trec:1: document 'NOT-A-DOC'" in err


def test_floor_is_saturated_like_the_ceiling():
    """Hit@K = 0 on both sides: Deg@K = 0 [0, 0] is a floor (nothing retrieved), not robustness."""
    from pqb.harness.evaluation.results import saturated_at, summary_table

    entry = {"flip@10_expected": 0.0, "deg@10": 0.0, "deg@10_ci_lower": 0.0, "deg@10_ci_upper": 0.0,
             "hit@10_clean": 0.0, "hit@10_error": 0.0, "n_pairs": 5}  # fmt: skip
    assert saturated_at(entry, "error") == [10]
    assert saturated_at({**entry, "hit@10_clean": 0.5, "hit@10_error": 0.5}, "error") == []
    table = summary_table({"results": {"t": {**entry, "saturated_at": [10]}}, "groups": {}})
    assert "floor: nothing retrieved" in table


# -- a task at a fixed error dose has its own query ids ----------------------------------------------------


@pytest.fixture(scope="module")
def dose_task(tmp_path_factory):
    """``t_dose2``: the tiny dataset's error task at dose 2 (its rows carry chains of 0 to 2 edits)."""
    inc = tmp_path_factory.mktemp("inc")
    (inc / "t_dose2.yaml").write_text(
        "task: t_dose2\ndataset_name: video_games\npair_type: error\nerror_dose: 2\nbootstrap: {n_boot: 10, seed: 0}\n"
    )
    return inc


def test_dosed_task_does_not_score_a_run_of_the_personal_dose(harness_run, dose_task, tmp_path, capsys):
    """A run of the published ``<id>_error`` texts was scored as the dosed task: same ids, other texts."""
    ds, path = harness_run
    run = tmp_path / "personal.trec"
    run.write_text("\n".join(_task_run(path, "pqb_error_video_games")) + "\n")
    assert main(["score", "--run", str(run), "--tasks", "t_dose2", "--include_path", str(dose_task),
                 "--dataset_path", str(ds), "--output_path", str(tmp_path / "out"), "--name", "x"]) == 0  # fmt: skip
    res = load_results(next((tmp_path / "out" / "x").glob("results_*.json")))
    entry = res["results"]["t_dose2"]
    assert entry["n_pairs"] == 1 and entry["n_queries_missing_from_run"] == 1  # the dosed side, not matched
    assert [q for q in res["ranks"]["t_dose2"]["query_id"] if "_error" in q] == ["r4_error2"]
    err = capsys.readouterr().err
    assert "1 of them are this task's 2-edit queries, <row id>_error2" in err
    assert (
        "the run ranks 1 of them as <row id>_error" in err and "--log_samples" in err and "error_chain" in err
    )


def test_dosed_task_round_trips_its_own_ids(dose_task, tmp_path, caplog):
    """The harness's own run of the dosed task (``<id>_error2`` ids) scores back bit for bit; the rows whose
    chain is shorter than the dose are counted (task_info, n-samples) and warned about, not dropped silently."""
    ds = make_tiny_dataset(tmp_path / "ds", ("video_games",))
    out = tmp_path / "res"
    with caplog.at_level("WARNING", logger="pqb.harness.evaluation.evaluator"):
        assert main(["run", "--model", "bm25", "--tasks", "t_dose2", "--include_path", str(dose_task),
                     "--dataset_path", str(ds), "--output_path", str(out), "--log_samples", "--no-progress"]) == 0  # fmt: skip
    warned = [
        r.getMessage() for r in caplog.records if "shorter than the task's error_dose" in r.getMessage()
    ]
    assert warned == ["t_dose2: 8 of 9 rows have an error_chain shorter than the task's error_dose 2 and were not "
                      "evaluated (counted as n_short_chain)"]  # fmt: skip
    path = next((out / "bm25").glob("results_*.json"))
    res = load_results(path)
    assert res["results"]["t_dose2"]["n_short_chain"] == 8 and res["results"]["t_dose2"]["n_pairs"] == 1
    assert res["n-samples"]["t_dose2"] == {"original": 9, "effective": 1}
    lines = _task_run(path, "t_dose2")
    assert {ln.split()[0] for ln in lines} == {"r4", "r4_error2"}
    scored = _score_with(ds, tmp_path / "scored", ["t_dose2", "--include_path", str(dose_task)], tmp_path / "r.trec",
                         lines)  # fmt: skip
    original = load_results(path)
    assert scored["results"]["t_dose2"]["n_queries_missing_from_run"] == 0
    assert scored["results"]["t_dose2"]["mrr_deg"] == original["results"]["t_dose2"]["mrr_deg"]


def _score_with(ds: Path, out: Path, tasks: list[str], run: Path, lines: list[str]) -> dict:
    run.write_text("\n".join(lines) + "\n")
    assert main(["score", "--run", str(run), "--tasks", *tasks, "--dataset_path", str(ds), "--output_path", str(out),
                 "--name", "bm25"]) == 0  # fmt: skip
    return load_results(next((out / "bm25").glob("results_*.json")))


def test_a_run_shallower_than_the_largest_k_is_counted_noted_and_refused_under_strict(harness_run, tmp_path, capsys):
    """A top-1 run: targets below rank 1 are read as misses at every K above 1 (Hit@20 falls), which
    trec_eval's convention allows but a PQB run never does; the count and a note say so."""
    ds, path = harness_run
    lines, kept, seen = _task_run(path, TASKS[1]), [], set()
    for line in lines:
        if line.split()[0] not in seen:
            seen.add(line.split()[0])
            kept.append(line)
    (tmp_path / "top1.trec").write_text("\n".join(kept) + "\n")
    scored = _score(ds, tmp_path / "out", TASKS[1], tmp_path / "top1.trec")["results"][TASKS[1]]
    stamp = path.name.removeprefix("results_").removesuffix(".json")
    qrels = (path.parent.parent / "details" / path.parent.name / f"qrels_{TASKS[1]}_{stamp}.txt").read_text()
    target = {q.split()[0]: q.split()[2] for q in qrels.splitlines()}
    err = capsys.readouterr().err
    shallow = scored["n_queries_shallower_than_k"]
    assert shallow == sum(1 for line in kept if line.split()[2] != target[line.split()[0]])
    assert shallow > 0 and f"note: {TASKS[1]}: {shallow} of {scored['n_queries']} queries have fewer than 20" in err
    assert main(["score", "--run", str(tmp_path / "top1.trec"), "--tasks", TASKS[1], "--dataset_path", str(ds),
                 "--output_path", str(tmp_path / "strict"), "--strict"]) == 1  # fmt: skip
    assert "--strict and" in capsys.readouterr().err


def test_too_few_bootstrap_replicates_are_noted(harness_run, tmp_path, capsys):
    ds, path = harness_run
    run = path.parent.parent / "details" / path.parent.name
    stamp = path.name.removeprefix("results_").removesuffix(".json")
    argv = ["score", "--run", str(run / f"run_{TASKS[0]}_{stamp}.trec"), "--tasks", TASKS[0], "--dataset_path",
            str(ds), "--output_path", str(tmp_path / "o")]  # fmt: skip
    assert main([*argv, "--bootstrap_iters", "5"]) == 0
    assert "a 95% percentile interval needs at least 40 replicates" in capsys.readouterr().err
    assert main([*argv, "--bootstrap_iters", "40"]) == 0
    assert "percentile interval" not in capsys.readouterr().err


def test_two_run_files_named_by_one_tag_are_noted_in_the_leaderboard(harness_run, tmp_path, caplog):
    """Anserini tags every run 'Anserini': system A scored on both tasks, then system B on the error task,
    both unnamed, made one leaderboard row (A's syntactic numbers, B's error numbers) without a word."""
    import logging

    from pqb.harness.reporting.collect import load_runs, tidy_frame

    ds, path = harness_run
    a = tmp_path / "a.trec"
    a.write_text("\n".join(_task_run(path, TASKS[0]) + _task_run(path, TASKS[1])) + "\n")
    b_lines = _task_run(path, TASKS[1])
    b_lines[0], b_lines[1] = b_lines[1], b_lines[0]  # another system: other bytes (same tag)
    b = tmp_path / "b.trec"
    b.write_text("\n".join(b_lines) + "\n")
    out = tmp_path / "out"
    for run, tasks in ((a, ",".join(TASKS)), (b, TASKS[1])):
        assert main(["score", "--run", str(run), "--tasks", tasks, "--dataset_path", str(ds), "--output_path",
                     str(out), "--bootstrap_iters", "0"]) == 0  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="pqb.harness.reporting.collect"):
        tidy_frame(load_runs([out]))
    notes = [r.getMessage() for r in caplog.records if "named by their run tag" in r.getMessage()]
    assert len(notes) == 1 and "'bm25'" in notes[0] and TASKS[0] in notes[0]
    caplog.clear()
    named = tmp_path / "named"
    for run, tasks in ((a, TASKS[0]), (b, TASKS[1])):  # one system, one file per task, named: no note
        assert main(["score", "--run", str(run), "--tasks", tasks, "--name", "mine", "--dataset_path", str(ds),
                     "--output_path", str(named), "--bootstrap_iters", "0"]) == 0  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="pqb.harness.reporting.collect"):
        tidy_frame(load_runs([named]))
    assert not [r for r in caplog.records if "named by their run tag" in r.getMessage()]


def test_ranks_against_scores_are_counted_noted_and_refused_under_strict(harness_run, tmp_path, capsys):
    """Ranks written in the reverse of the scores: PQB follows the rank column (MRR near 0 here), trec_eval
    re-sorts by score (MRR as the harness's own run), and nothing said the two disagree."""
    ds, path = harness_run
    lines, by_q = _task_run(path, TASKS[0]), {}
    for line in lines:
        by_q.setdefault(line.split()[0], []).append(line.split())
    flipped = [" ".join([q, "Q0", p[2], str(len(ps) - int(p[3]) + 1), p[4], p[5]]) for q, ps in by_q.items() for p in ps]
    (tmp_path / "flipped.trec").write_text("\n".join(flipped) + "\n")
    scored = _score(ds, tmp_path / "out", TASKS[0], tmp_path / "flipped.trec")["results"][TASKS[0]]
    n = scored["n_queries_ranks_against_scores"]
    assert n == sum(len(ps) > 1 and float(ps[0][4]) > float(ps[-1][4]) for ps in by_q.values()) and n > 0
    assert f"note: {TASKS[0]}: {n} of {scored['n_queries']} queries rank a document above" in capsys.readouterr().err
    assert main(["score", "--run", str(tmp_path / "flipped.trec"), "--tasks", TASKS[0], "--dataset_path", str(ds),
                 "--output_path", str(tmp_path / "strict"), "--strict"]) == 1  # fmt: skip
    assert "--strict and" in capsys.readouterr().err


def test_written_scores_strictly_decrease_and_read_back() -> None:
    """Near-ties (3.723988 above 3.723989, ordered by corpus id under the tie rule) and exact ties."""
    import itertools
    import math

    import numpy as np

    from pqb.harness.evaluation.evaluator import monotone_scores

    scores = np.array([5.0, 3.7239878, 3.7239888, 1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    texts = monotone_scores(scores)
    values = [float(t) for t in texts]
    assert all(b < a for a, b in itertools.pairwise(values)), texts
    assert texts[:2] == ["5.0", "3.7239878"] and texts[3] == "1.0"  # the shortest text of each float32
    assert values[2] == math.nextafter(values[1], -math.inf)  # the near-tie: just below the line above
    assert all(abs(v - float(s)) <= 1e-6 * max(abs(float(s)), 1e-12) or s == 0 for v, s in zip(values, scores, strict=True))


def test_the_harness_s_own_runs_pass_strict_and_trec_eval_s_order(tmp_path: Path) -> None:
    """Issue 44: scores at 6 decimals put a document above a higher score in 6 of the embedded build's 420
    error queries; ``score --strict`` refused the harness's own run and trec_eval re-sorted them."""
    import pqb.harness as ph
    from pqb.dataset import settings

    ds = settings.REPO_ROOT / "pqb_dataset"
    ph.evaluate(model="bm25", tasks=list(TASKS), dataset_path=str(ds), bootstrap_iters=0, log_samples=True,
                output_path=tmp_path / "run", progress=False, notify=lambda line: None)  # fmt: skip
    for task in TASKS:
        (run,) = (tmp_path / "run" / "details" / "bm25").glob(f"run_{task}_*.trec")
        by_query: dict[str, list[tuple[int, float, str]]] = {}
        for line in run.read_text().splitlines():
            qid, _, doc, rank, score, _ = line.split()
            by_query.setdefault(qid, []).append((int(rank), float(score), doc))
        for qid, docs in by_query.items():  # trec_eval sorts by score (desc): the same order as the ranks
            assert sorted(docs) == sorted(docs, key=lambda d: -d[1]), qid
        assert main(["score", "--run", str(run), "--tasks", task, "--dataset_path", str(ds), "--strict",
                     "--output_path", str(tmp_path / "scored"), "--bootstrap_iters", "0", "--no-progress"]) == 0  # fmt: skip
