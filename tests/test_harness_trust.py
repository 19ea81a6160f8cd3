"""``pqb-harness run`` never evaluates broken input silently and never answers with a traceback.

Four tables hold the line (issue 10): a corrupted-dataset matrix (each corruption -> exit code and
one line naming the file or rule, no results written), a message table (argv -> exit code and the
message fragment), the resume key (each differing input recomputes and says why, a matching one is
reused), and a killed run (its finished tasks are resumed from the checkpoint, and the final file
equals an uninterrupted run's). All on the synthetic tiny dataset of ``tests/pqb_fixtures.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pqb_fixtures import make_tiny_dataset, tiny_tables

from pqb.dataset import progress
from pqb.harness.cli import main

TASKS = "pqb_syntactic_video_games,pqb_error_video_games"


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_dataset(tmp_path_factory.mktemp("good"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """(exit code, stderr) of ``pqb-harness`` with ``argv``; argparse's SystemExit becomes a code."""
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


def assert_one_line_error(err: str, fragment: str) -> None:
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0] == err.rstrip("\n").splitlines()[-1], err
    assert fragment in errors[0], errors[0]


def results_files(out: Path) -> list[Path]:
    return sorted(out.glob("*/results_*.json"))


def base_args(dataset: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "--model", "bm25", "--tasks", TASKS, "--dataset_path", str(dataset), "--output_path",
            str(out), "--bootstrap_iters", "20", "--verbosity", "ERROR", *extra]  # fmt: skip


# -- corrupted datasets ------------------------------------------------------------------------------


def _rows_file(d: Path, config: str = "video_games") -> Path:
    return d / f"data/{config}/test-00000-of-00001.parquet"


def _rewrite_rows(d: Path, change: Callable[[list[dict]], None]) -> None:
    rows = tiny_tables()["rows"].to_pylist()
    change(rows)
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(_rows_file(d))), _rows_file(d))


def _drop(config: str, column: str) -> Callable[[Path], None]:
    return lambda d: pq.write_table(
        pq.read_table(_rows_file(d, config)).drop([column]), _rows_file(d, config)
    )


def _set(i: int, key: str, value: str) -> Callable[[Path], None]:
    return lambda d: _rewrite_rows(d, lambda rows: rows[i].__setitem__(key, value))


def _empty(d: Path) -> None:
    pq.write_table(pq.read_table(_rows_file(d)).slice(0, 0), _rows_file(d))


def _truncate(d: Path) -> None:
    data = _rows_file(d).read_bytes()
    _rows_file(d).write_bytes(data[: len(data) // 2])


CORRUPTIONS = [
    ("no_error_query_column", _drop("video_games", "error_query"), 1, "missing_column"),
    ("no_query_column", _drop("video_games", "query"), 1, "missing_column"),
    ("no_corpus_text_column", _drop("video_games-corpus", "text"), 1, "missing_column"),
    ("duplicate_row_id", _set(1, "id", "r1"), 1, "duplicate_id"),
    ("target_not_in_corpus", _set(0, "asin", "NOPE"), 1, "target_not_in_corpus"),
    ("pair_with_one_row", _set(2, "pair_id", "lonely"), 1, "pair_singleton"),
    ("zero_rows", _empty, 1, "has 0 rows"),
    ("truncated_parquet", _truncate, 1, "damaged parquet file"),
]


@pytest.mark.parametrize(
    ("name", "corrupt", "code", "fragment"), CORRUPTIONS, ids=[c[0] for c in CORRUPTIONS]
)
def test_corrupted_dataset_stops_run(tmp_path, capsys, name, corrupt, code, fragment):
    dataset = make_tiny_dataset(tmp_path / "ds")
    corrupt(dataset)
    got, err = run(capsys, *base_args(dataset, tmp_path / "out"))
    assert got == code
    assert fragment in err
    assert_one_line_error(err, "error:")
    assert not results_files(tmp_path / "out"), "nothing may be evaluated on a broken dataset"
    if name in {"zero_rows", "truncated_parquet"}:
        assert str(_rows_file(dataset)) in err  # the damaged file is named


def test_validate_reports_the_one_row_pair_too(tmp_path, capsys):
    dataset = make_tiny_dataset(tmp_path / "ds")
    _set(2, "pair_id", "lonely")(dataset)
    assert main(["validate", "--tasks", "pqb_syntactic_video_games", "--dataset_path", str(dataset)]) == 1
    assert "pair_singleton: pair 'lonely' has 1 row" in capsys.readouterr().out


# -- message table -----------------------------------------------------------------------------------


def _yaml_task(tmp_path: Path, **values: object) -> list[str]:
    folder = tmp_path / "inc"
    folder.mkdir(exist_ok=True)
    template = Path(__file__).parent.parent / "tasks" / "pqb" / "_default_template_yaml"
    lines = [f"include: {template}", "task: my_task", "dataset_name: video_games", "pair_type: syntactic"]
    lines += [f"{k}: {json.dumps(v)}" for k, v in values.items()]
    (folder / "my_task.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ["--include_path", str(folder), "--tasks", "my_task"]


MESSAGES = [
    ("limit_0", ["--limit", "0"], 2, "argument --limit: must be an integer >= 1 (pairs) or a share strictly between 0 and 1, got '0'"),
    ("limit_negative", ["--limit", "-1"], 2, "argument --limit: must be an integer >= 1 (pairs) or a share"),
    ("bootstrap_negative", ["--bootstrap_iters", "-3"], 2, "argument --bootstrap_iters: must be >= 0"),
    ("seed_text", ["--seed", "x"], 2, "argument --seed: must be an integer"),
    ("batch_size_0", ["--batch_size", "0"], 2, "argument --batch_size: must be >= 1"),
    ("k1_text", ["--model_args", "k1=abc"], 2, "--model_args k1='abc': must be a number"),
    ("k1_negative", ["--model_args", "k1=-5"], 2, "--model_args k1=-5: must be a number > 0"),
    ("b_above_1", ["--model_args", "b=7"], 2, "--model_args b=7: must be a number in [0, 1]"),
    ("unknown_arg", ["--model_args", "nonsense=1"], 2, "accepted: b, chunk_size, field, k1"),
    ("bad_stemmer", ["--model_args", "stemmer=klingon"], 2, "stemmer='klingon': must be none or one of"),
    ("malformed_args", ["--model_args", "k1"], 2, "is not key=value"),
    ("unknown_model", ["--model", "bm52"], 2, "Did you mean 'bm25'?"),
    ("unknown_task", ["--tasks", "pqb_sintactic"], 2, "Unknown task 'pqb_sintactic'"),
    ("unknown_option", ["--limt", "3"], 2, "unrecognized arguments: --limt 3"),
    # neural models: checked before any weights load (rules merge along the class hierarchy)
    ("dense_batch_0", ["--model", "minilm", "--model_args", "batch_size=0"], 2,
     "batch_size=0: must be an integer >= 1 or one of auto"),
    ("dense_max_len", ["--model", "minilm", "--model_args", "max_seq_length=-1"], 2,
     "max_seq_length=-1: must be an integer >= 1 or one of None"),
    ("splade_len", ["--model", "splade-tiny", "--model_args", "doc_max_length=0"], 2,
     "doc_max_length=0: must be an integer >= 1"),
    ("hybrid_weights", ["--model", "minilm-splade-tiny", "--model_args", "weights=-1+1"], 2,
     "weights='-1+1': must be numbers >= 0, not all 0"),
    ("reranker_k", ["--model", "cross-encoder", "--model_args", "pretrained=x,rerank_k=0"], 2,
     "rerank_k=0: must be an integer >= 1"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "extra", "code", "fragment"), MESSAGES, ids=[m[0] for m in MESSAGES])
def test_message_table(good, tmp_path, capsys, name, extra, code, fragment):
    argv = base_args(good, tmp_path / "out")
    if "--model" in extra:  # replace, do not repeat, the model
        argv[argv.index("--model") : argv.index("--model") + 2] = []
    got, err = run(capsys, *argv, *extra)
    assert got == code, err
    assert_one_line_error(err, fragment)
    assert not results_files(tmp_path / "out")


YAML_MESSAGES = [
    ("test_split_absent", {"test_split": "train"}, 2, "test_split 'train' (set at {file}:5) is not a split"),
    ("k_values_not_positive", {"k_values": [0, -3, 10]}, 2, "{file}:5: k_values must be"),
    ("k_values_float", {"k_values": [1.5]}, 2, "{file}:5: k_values must be"),
    ("rr_cutoff_zero", {"rr_cutoff": 0}, 2, "{file}:5: rr_cutoff must be a positive integer"),
    ("n_boot_negative", {"bootstrap": {"n_boot": -1}}, 2, "{file}:5: bootstrap n_boot must be"),
    ("gate_out_of_range", {"similarity_gate": 2}, 2, "{file}:5: similarity_gate must be"),
]


@pytest.mark.parametrize(
    ("name", "values", "code", "fragment"), YAML_MESSAGES, ids=[m[0] for m in YAML_MESSAGES]
)
def test_yaml_message_table(good, tmp_path, capsys, name, values, code, fragment):
    task_args = _yaml_task(tmp_path, **values)
    got, err = run(capsys, *base_args(good, tmp_path / "out"), *task_args)
    assert got == code, err
    assert_one_line_error(err, fragment.format(file=tmp_path / "inc" / "my_task.yaml"))
    assert not results_files(tmp_path / "out")


def test_bootstrap_zero_is_stated_and_gives_no_cis(good, tmp_path, capsys):
    code, err = run(
        capsys, *base_args(good, tmp_path / "out"), "--bootstrap_iters", "0", "--verbosity", "WARNING"
    )
    assert code == 0 and "no confidence intervals are computed" in err
    res = json.loads(results_files(tmp_path / "out")[-1].read_text())
    assert res["confidence_intervals"]["pqb_error_video_games"]["deg@10"] == [None, None]
    assert "deg@10_stderr," not in res["results"]["pqb_error_video_games"]  # no CI, no standard error


def test_offline_without_dataset(tmp_path, capsys, monkeypatch):
    from pqb.dataset import settings

    monkeypatch.setattr(settings, "PQB_DATASET_DIR", tmp_path / "absent")
    monkeypatch.setattr(settings, "CHECKOUT_DATASET_DIR", None)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(settings, "HF_HUB_OFFLINE", True)
    got, err = run(capsys, "run", "--model", "bm25", "--tasks", TASKS, "--output_path", str(tmp_path / "o"))
    assert got == 1
    assert_one_line_error(
        err, "dataset unavailable: 'pqb-benchmark/pqb' is not a local folder (no dataset card in "
    )


def test_failed_hub_push_is_one_line_and_keeps_results(good, tmp_path, capsys, monkeypatch):
    import huggingface_hub

    def refuse(self, **kwargs):
        raise huggingface_hub.errors.OfflineModeIsEnabled("Cannot reach https://huggingface.co: offline")

    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", refuse)
    got, err = run(capsys, *base_args(good, tmp_path / "out"), "--hub_results_repo", "me/pqb-results")
    assert got == 1
    assert_one_line_error(err, "to Hub dataset 'me/pqb-results' failed (OfflineModeIsEnabled")
    assert len(results_files(tmp_path / "out")) == 1


def test_pyserini_missing_names_the_extra(good, tmp_path, capsys, monkeypatch):
    import importlib.metadata as md

    real = md.version

    def version(name: str) -> str:
        if name == "pyserini":
            raise md.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(md, "version", version)
    argv = base_args(good, tmp_path / "out")
    argv[argv.index("bm25")] = "bm25-pyserini"
    got, err = run(capsys, *argv)
    assert got == 2
    assert_one_line_error(err, 'pip install "pqb-benchmark[pyserini]"')


def test_no_progress_silences_every_bar(good, tmp_path, capsys, monkeypatch):
    import datasets

    from pqb.harness.evaluation import evaluator
    from pqb.harness.retrievers.neural.encoding import progress as encoder_progress

    seen, real = [], evaluator.evaluate

    def spy(*args, **kwargs):
        bar_off = encoder_progress(range(3), desc="encoding").disable
        seen.append((progress.enabled(), datasets.is_progress_bar_enabled(), bar_off))
        return real(*args, **kwargs)

    monkeypatch.setattr(evaluator, "evaluate", spy)
    assert main(base_args(good, tmp_path / "out", "--no-progress")) == 0
    assert seen == [(False, False, True)]  # during the run: ours, the encoders' and datasets' bars off
    assert progress.enabled() and datasets.is_progress_bar_enabled()  # restored afterwards
    assert "ranking" not in capsys.readouterr().err


# -- resume ------------------------------------------------------------------------------------------


@pytest.fixture()
def baseline(good, tmp_path, capsys) -> Path:
    """An output folder holding one finished run (limit 6, seed 0, 20 replicates, paper BM25)."""
    out = tmp_path / "out"
    assert main(base_args(good, out, "--limit", "6")) == 0
    capsys.readouterr()
    return out


def _changed_dataset(tmp_path: Path) -> Path:
    d = make_tiny_dataset(tmp_path / "other")
    def edit(rows: list) -> None:  # a row of both tasks (its error query keeps its edits' positions)
        rows[0].update(query=rows[0]["query"] + " please", error_query=rows[0]["error_query"] + " please")

    _rewrite_rows(d, edit)
    return d


RESUME_CASES = [
    ("limit", lambda tmp: ["--limit", "5"], "limit: 6 -> 5"),
    ("seed", lambda tmp: ["--limit", "6", "--seed", "7"], "bootstrap.seed: 0 -> 7"),
    (
        "bootstrap_iters",
        lambda tmp: ["--limit", "6", "--bootstrap_iters", "30"],
        "bootstrap.n_boot: 20 -> 30",
    ),
    ("model_args", lambda tmp: ["--limit", "6", "--model_args", "k1=1.2"], "model_settings.k1: 1.5 -> 1.2"),
    (
        "dataset",
        lambda tmp: ["--limit", "6", "--dataset_path", str(_changed_dataset(tmp))],
        "dataset_fingerprint",
    ),
]


@pytest.mark.parametrize(("name", "extra", "why"), RESUME_CASES, ids=[c[0] for c in RESUME_CASES])
def test_resume_recomputes_when_an_input_differs(baseline, good, tmp_path, capsys, name, extra, why):
    got, err = run(capsys, *base_args(good, baseline), "--overwrite", "only-missing", *extra(tmp_path))
    assert got == 0, err
    lines = [line for line in err.splitlines() if line.startswith("resume: ")]
    assert len(lines) == 2 and all("recomputing: " in line and why in line for line in lines), err
    res = json.loads(results_files(baseline)[-1].read_text())
    assert res["config"]["reused_tasks"] == []


def test_resume_reuses_a_matching_task(baseline, good, capsys):
    got, err = run(capsys, *base_args(good, baseline), "--overwrite", "only-missing", "--limit", "6")
    assert got == 0
    assert err.count("reused from ") == 2
    first, second = (json.loads(p.read_text()) for p in results_files(baseline))
    assert sorted(second["config"]["reused_tasks"]) == sorted(TASKS.split(","))
    assert second["config"]["stats"]["queries_scored"] == 0
    strip = lambda r: {t: {k: v for k, v in e.items() if k != "reused_from"} for t, e in r["results"].items()}  # noqa: E731
    assert strip(second) == strip(first) and second["resume"] == first["resume"]


@pytest.mark.parametrize(("key", "a", "b", "why"), [("k_values", [1, 10], [1, 20], "task.k_values"),
                                                     ("rr_cutoff", 200, 100, "task.rr_cutoff: 200 -> 100")])  # fmt: skip
def test_resume_recomputes_when_task_settings_differ(good, tmp_path, capsys, key, a, b, why):
    out = tmp_path / "out"
    assert main([*base_args(good, out), *_yaml_task(tmp_path, **{key: a})]) == 0
    got, err = run(
        capsys, *base_args(good, out), "--overwrite", "only-missing", *_yaml_task(tmp_path, **{key: b})
    )
    assert got == 0 and f"resume: my_task: recomputing: {why}" in err, err


def test_resume_recomputes_when_the_tie_rule_changes(baseline, good, capsys, monkeypatch):
    import pqb.harness.evaluation.resume

    monkeypatch.setattr(pqb.harness.evaluation.resume, "TIE_RTOL", 1e-3)
    got, err = run(capsys, *base_args(good, baseline), "--overwrite", "only-missing", "--limit", "6")
    assert got == 0 and err.count("tie_rule.rtol: 1e-06 -> 0.001") == 2, err


def test_killed_run_resumes_from_its_finished_tasks(good, tmp_path, capsys, monkeypatch):
    import pqb.harness.evaluation.evaluator as ev

    full = tmp_path / "full"
    assert main(base_args(good, full, "--tasks", "pqb")) == 0  # uninterrupted reference
    real, calls = ev.finish_task, []

    def dies_on_second_task(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the run is killed after its first task finished
        return real(*args, **kwargs)

    out = tmp_path / "out"
    monkeypatch.setattr(ev, "finish_task", dies_on_second_task)
    with pytest.raises(KeyboardInterrupt):
        main(base_args(good, out, "--tasks", "pqb"))
    monkeypatch.setattr(ev, "finish_task", real)
    assert not results_files(out) and len(list(out.glob("details/bm25/checkpoint_*.json.partial"))) == 1
    capsys.readouterr()
    got, err = run(capsys, *base_args(good, out, "--tasks", "pqb", "--overwrite", "only-missing"))
    assert got == 0 and err.count("reused from ") == 1 and "checkpoint_" in err, err
    assert not list(out.glob("details/bm25/checkpoint_*.json.partial"))  # consumed: its tasks are in the final file
    want, have = (json.loads(results_files(d)[-1].read_text()) for d in (full, out))
    strip = lambda r: {t: {k: v for k, v in e.items() if k != "reused_from"} for t, e in r.items()}  # noqa: E731
    assert strip(have["results"]) == strip(want["results"])
    assert have["groups"] == want["groups"]  # group CIs too: the checkpoint kept the replicates
    for key in ("configs", "breakdowns", "dataset", "resume", "n-samples", "task_hashes"):
        assert have[key] == want[key], key
