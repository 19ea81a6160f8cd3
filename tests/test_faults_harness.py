"""Faults at the harness's edges (issue 30): each case fails loudly, in one line, instead of going on wrong."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_harness_trust import run as _run  # (exit code, stderr) of pqb-harness

from pqb.dataset.schema import CORPUS_SCHEMA

# -- 2. the dataset cache key covers every file the card names ---------------------------------------

_CARD = """---
configs:
- config_name: video_games-corpus
  data_files:
  - split: test
    path: video_games/test-*.parquet
---
# a custom dataset
"""


def _custom_folder(root: Path, n_docs: int) -> Path:
    """A dataset folder whose shard lies beside the card, not under data/."""
    folder = root / "ds"
    (folder / "video_games").mkdir(parents=True, exist_ok=True)
    (folder / "README.md").write_text(_CARD)
    docs = [{"id": f"B{i:03d}", "title": f"p{i}", "text": "t"} for i in range(n_docs)]
    pq.write_table(pa.Table.from_pylist(docs, schema=CORPUS_SCHEMA),
                   folder / "video_games" / "test-00000-of-00001.parquet")  # fmt: skip
    return folder


def test_the_cache_key_changes_with_shards_outside_data(tmp_path, monkeypatch) -> None:
    from pqb.dataset import settings
    from pqb.harness.evaluation.data import load_config

    monkeypatch.setattr(settings, "PQB_CACHE_DIR", tmp_path / "cache")
    first = load_config(str(_custom_folder(tmp_path, 3)), "video_games-corpus")
    assert first["id"] == ["B000", "B001", "B002"]
    again = load_config(str(_custom_folder(tmp_path, 5)), "video_games-corpus")  # rebuilt, same names
    assert again["id"] == ["B000", "B001", "B002", "B003", "B004"]


# -- shared helpers: the synthetic tiny dataset and the CLI ------------------------------------------


def _one_error_line(err: str, fragment: str) -> None:
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and fragment in errors[0], err


def _rows_file(d: Path, config: str = "video_games") -> Path:
    return d / f"data/{config}/test-00000-of-00001.parquet"


def _rewrite_rows(d: Path, change) -> None:
    rows = pq.read_table(_rows_file(d)).to_pylist()
    change(rows)
    pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(_rows_file(d))), _rows_file(d))


def _tiny(tmp_path: Path) -> Path:
    from pqb_fixtures import make_tiny_dataset

    return make_tiny_dataset(tmp_path / "ds")


def _run_args(dataset: Path, out: Path, *extra: str, tasks: str = "pqb_error_video_games") -> list[str]:
    return ["run", "--model", "bm25", "--tasks", tasks, "--dataset_path", str(dataset), "--output_path",
            str(out), "--bootstrap_iters", "20", "--verbosity", "ERROR", "--no-progress", *extra]  # fmt: skip


# -- 3. built error rows carry their edits -----------------------------------------------------------


def _first_error_row(rows: list[dict]) -> dict:
    return next(r for r in rows if r["error_query"])


def _unrelated(rows: list[dict]) -> None:
    r = _first_error_row(rows)
    r.update(error_query="completely unrelated words here", error_edits=[], error_chain=[])


def _no_edits_chain_kept(rows: list[dict]) -> None:
    _first_error_row(rows)["error_edits"] = None


@pytest.mark.parametrize(
    ("change", "rule"), [(_unrelated, "missing_edits"), (_no_edits_chain_kept, "missing_edits")]
)
def test_a_built_error_row_without_edits_stops_validate_and_run(tmp_path, capsys, change, rule) -> None:
    dataset = _tiny(tmp_path)
    _rewrite_rows(dataset, change)
    code = _run(capsys, "validate", "--tasks", "pqb_error_video_games", "--dataset_path", str(dataset))[0]
    assert code == 1
    code, err = _run(capsys, *_run_args(dataset, tmp_path / "out"))
    assert code == 1 and rule in err
    assert not list((tmp_path / "out").glob("*/results_*.json"))


def test_only_a_release_config_may_lack_edits_and_it_is_counted() -> None:
    from pqb.dataset.schema import check_rows

    row = {"id": "r1", "asin": "A", "user_id": "u", "pair_id": "p", "query": "a red pad",
           "error_query": "a rde pad", "error_edits": [], "error_chain": None, "core_terms": []}  # fmt: skip
    built = check_rows([row], require_core_terms=False)
    assert {"missing_edits", "missing_chain"} <= set(built.by_rule())
    release = check_rows([row], require_core_terms=False, release=True)
    assert release.ok and release.checked["release_error_rows_unannotated"] == 1
    assert "release_error_rows_unannotated" in release.summary()


# -- 4. every value has a range ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--model_args", "k1=inf"], "k1=inf"),
        (["--model_args", "k1=1e308"], "k1=1e+308"),
        (["--model_args", "k1=1.2,b=0.5,k1=0.9"], "'k1' is given twice"),
        (["--bootstrap_iters", "100000000000"], "--bootstrap_iters"),
    ],
)
def test_out_of_range_values_are_usage_errors(tmp_path, capsys, extra, fragment) -> None:
    args = _run_args(_tiny(tmp_path), tmp_path / "out")
    i = args.index("--bootstrap_iters")
    args[i : i + 2] = []  # the case under test sets its own
    code, err = _run(capsys, *args, *extra)
    assert code == 2
    _one_error_line(err, fragment)


# -- 5. checksummed caches -----------------------------------------------------------------------------


def _cache() -> Path:
    from pqb.dataset import settings

    return Path(settings.PQB_CACHE_DIR)


def _metrics(out: Path) -> dict:
    import json

    [path] = sorted(out.glob("bm25/results_*.json"))[-1:]
    res = json.loads(path.read_text())["results"]["pqb_error_video_games"]
    return {k: v for k, v in res.items() if isinstance(v, float)}


def _vocab_edit(folder: Path) -> None:
    (folder / "vocab.json").write_text('["zzz"]', encoding="utf-8")


def _postings_truncate(folder: Path) -> None:
    data = (folder / "postings.npz").read_bytes()
    (folder / "postings.npz").write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize(
    "damage", [_vocab_edit, _postings_truncate], ids=["vocab_edited", "postings_truncated"]
)
def test_a_damaged_bm25_index_is_rebuilt_with_one_line(tmp_path, capsys, damage) -> None:
    dataset = _tiny(tmp_path)
    assert _run(capsys, *_run_args(dataset, tmp_path / "a", "--no_run_cache"))[0] == 0
    [folder] = list((_cache() / "index" / "bm25").iterdir())
    damage(folder)
    code, err = _run(capsys, *_run_args(dataset, tmp_path / "b", "--no_run_cache"))
    assert code == 0 and "Traceback" not in err
    assert len([line for line in err.splitlines() if "BM25 index" in line and "rebuilding" in line]) == 1, err
    assert _metrics(tmp_path / "b") == _metrics(tmp_path / "a")  # not 0.00: the index was rebuilt
    assert _run(capsys, *_run_args(dataset, tmp_path / "c", "--no_run_cache"))[1].count("BM25 index") == 0


def test_a_damaged_run_cache_shard_is_recomputed_with_one_line(tmp_path, capsys) -> None:
    dataset = _tiny(tmp_path)
    assert _run(capsys, *_run_args(dataset, tmp_path / "a"))[0] == 0
    shards = sorted((_cache() / "runs").rglob("shard_*.npz"))
    assert shards
    for shard in shards:
        shard.write_bytes(shard.read_bytes()[:40])  # truncated: once a BadZipFile traceback
    code, err = _run(capsys, *_run_args(dataset, tmp_path / "b"))
    assert code == 0 and "Traceback" not in err
    assert err.count("run cache shard") == len(shards), err
    assert _metrics(tmp_path / "b") == _metrics(tmp_path / "a")


def test_an_edited_embedding_cache_is_re_encoded_with_one_line(tmp_path, capsys) -> None:
    import numpy as np

    from pqb.harness.retrievers.neural.encoding import ArrayCache

    cache = ArrayCache(tmp_path, "dense", {"model": "m", "corpus": "c"})
    cache.save({"doc_embeddings": np.ones((3, 4), np.float32)})
    assert cache.exists() and capsys.readouterr().err == ""
    np.save(cache.path / "doc_embeddings.npy", np.zeros((3, 4), np.float32))  # edited: a valid .npy
    assert not cache.exists()  # once: loaded, every score 0
    assert "doc_embeddings.npy does not match its checksum" in capsys.readouterr().err


# -- 6. resume keeps everything ------------------------------------------------------------------------


def _details(out: Path) -> dict[str, bytes]:
    """Samples, runs and qrels of the newest results file, by name without the timestamp."""
    from pqb.harness.evaluation.results import stamp_of

    stamp = stamp_of(sorted(out.glob("bm25/results_*.json"))[-1])
    return {
        p.name.replace(stamp, "<ts>"): p.read_bytes() for p in (out / "details" / "bm25").glob(f"*_{stamp}.*")
    }


def test_a_killed_log_samples_run_resumes_to_the_files_of_an_uninterrupted_run(
    tmp_path, capsys, monkeypatch
) -> None:

    import pqb.harness.evaluation.evaluator as ev
    from pqb.harness.evaluation.results import CHECKPOINT_GLOB, load_results

    dataset = _tiny(tmp_path)
    tasks = "pqb_syntactic_video_games,pqb_error_video_games"
    full, out = tmp_path / "full", tmp_path / "out"
    assert _run(capsys, *_run_args(dataset, full, "--log_samples", tasks=tasks))[0] == 0
    real, calls = ev.finish_task, []

    def dies_on_second_task(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # killed after its first task finished
        return real(*args, **kwargs)

    monkeypatch.setattr(ev, "finish_task", dies_on_second_task)
    with pytest.raises(KeyboardInterrupt):
        _run(capsys, *_run_args(dataset, out, "--log_samples", tasks=tasks))
    monkeypatch.setattr(ev, "finish_task", real)
    code, err = _run(
        capsys, *_run_args(dataset, out, "--log_samples", "--overwrite", "only-missing", tasks=tasks)
    )
    assert code == 0 and err.count("reused from ") == 1, err
    want, have = _details(full), _details(out)
    assert len(want) == 6 and have == want  # samples, TREC run and qrels of both tasks, byte for byte
    results = load_results(sorted(out.glob("bm25/results_*.json"))[-1])["results"]  # the flat view
    [source] = [e["reused_from"] for e in results.values() if "reused_from" in e]
    assert Path(source).is_file()
    assert not list(out.glob("details/bm25/" + CHECKPOINT_GLOB))  # out of the resume glob


def test_log_samples_recomputes_a_task_whose_earlier_run_kept_no_samples(tmp_path, capsys) -> None:
    dataset = _tiny(tmp_path)
    out = tmp_path / "out"
    assert _run(capsys, *_run_args(dataset, out))[0] == 0  # no --log_samples
    code, err = _run(capsys, *_run_args(dataset, out, "--log_samples", "--overwrite", "only-missing"))
    assert code == 0 and "kept no samples" in err, err
    assert len(_details(out)) == 3


# -- 7. paths are confined -----------------------------------------------------------------------------


def _files_outside(root: Path, allowed: list[Path]) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not any(a in p.parents for a in allowed)]


def test_a_task_name_that_climbs_out_of_the_output_path_is_refused(tmp_path, capsys) -> None:
    dataset = _tiny(tmp_path)
    folder = tmp_path / "inc"
    folder.mkdir()
    template = Path(__file__).parent.parent / "tasks" / "pqb" / "_default_template_yaml"
    (folder / "evil.yaml").write_text(
        f"include: {template}\ntask: ../../../../{tmp_path.name}/x\ndataset_name: video_games\npair_type: syntactic\n"
    )
    evil = f"../../../../{tmp_path.name}/x"
    argv = _run_args(dataset, tmp_path / "out", "--log_samples", "--include_path", str(folder), tasks=evil)
    code, err = _run(capsys, *argv)
    assert code == 2
    _one_error_line(err, "not a safe file name")
    assert _files_outside(tmp_path, [dataset, folder, tmp_path / "out"]) == []


def test_a_run_tag_of_dots_stays_under_the_output_path(tmp_path, capsys) -> None:
    dataset = _tiny(tmp_path)
    out = tmp_path / "a" / "b" / "out"
    assert _run(capsys, *_run_args(dataset, tmp_path / "bm25run", "--log_samples"))[0] == 0
    [trec] = list((tmp_path / "bm25run" / "details" / "bm25").glob("run_*.trec"))
    tagged = tmp_path / "dots.trec"
    tagged.write_text(
        "".join(" ".join([*ln.split()[:5], ".."]) + "\n" for ln in trec.read_text().splitlines())
    )
    argv = ["score", "--run", str(tagged), "--tasks", "pqb_error_video_games", "--dataset_path", str(dataset),
            "--output_path", str(out), "--bootstrap_iters", "10", "--log_samples"]  # fmt: skip
    assert _run(capsys, *argv)[0] == 0
    assert list(out.glob("*/results_*.json"))
    assert _files_outside(tmp_path / "a", [out]) == []


# -- 8. validate and run agree -------------------------------------------------------------------------


def _no_card(d: Path) -> None:
    (d / "README.md").unlink()


def _duplicate_corpus_id(d: Path) -> None:
    f = _rows_file(d, "video_games-corpus")
    table = pq.read_table(f)
    pq.write_table(pa.concat_tables([table, table.slice(0, 1)]), f)


def _no_error_pairs(d: Path) -> None:
    def clear(rows: list[dict]) -> None:
        for r in rows:
            r.update(error_query=None, error_edits=[], error_chain=[], profile_evidence=None, backoff=None)

    _rewrite_rows(d, clear)


@pytest.mark.parametrize(
    ("damage", "fragment"),
    [(_no_card, "no dataset card"), (_duplicate_corpus_id, "duplicate"), (_no_error_pairs, "0 pairs")],
    ids=["no_card", "duplicate_corpus_id", "zero_pairs"],
)
def test_validate_and_run_both_exit_1(tmp_path, capsys, damage, fragment) -> None:
    dataset = _tiny(tmp_path)
    damage(dataset)
    code, err = _run(capsys, "validate", "--tasks", "pqb_error_video_games", "--dataset_path", str(dataset))
    assert code == 1 and "Traceback" not in err
    code, err = _run(capsys, *_run_args(dataset, tmp_path / "out"))
    assert code == 1 and fragment in err, err
    _one_error_line(err, "")


@pytest.mark.parametrize("command", ["run", "validate", "score"])
def test_an_empty_task_list_is_a_usage_error(tmp_path, capsys, command) -> None:
    argv = {"run": _run_args(_tiny(tmp_path), tmp_path / "out", tasks=""),
            "validate": ["validate", "--tasks", ""],
            "score": ["score", "--run", str(tmp_path / "x.trec"), "--tasks", ""]}[command]  # fmt: skip
    (tmp_path / "x.trec").write_text("q1 Q0 d1 1 1.0 t\n")
    code, err = _run(capsys, *argv)
    assert code == 2
    _one_error_line(err, "names no task")


# -- 9. one error: line instead of tracebacks ------------------------------------------------------------


def _not_a_folder(tmp_path: Path) -> Path:
    f = tmp_path / "file"
    f.write_text("x")
    return f


def test_an_output_path_that_is_a_file_stops_run_before_any_work(tmp_path, capsys, monkeypatch) -> None:
    import pqb.harness.evaluation.evaluator as ev

    monkeypatch.setattr(ev, "load_tasks", lambda *a, **k: pytest.fail("a task was loaded"))
    code, err = _run(capsys, *_run_args(_tiny(tmp_path), _not_a_folder(tmp_path)))
    assert code == 2
    _one_error_line(err, "--output_path")


def test_an_unwritable_cache_dir_stops_run_before_any_work(tmp_path, capsys, monkeypatch) -> None:
    from pqb.dataset import settings

    monkeypatch.setattr(settings, "PQB_CACHE_DIR", _not_a_folder(tmp_path) / "cache")
    code, err = _run(capsys, *_run_args(_tiny(tmp_path), tmp_path / "out"))
    assert code == 2
    _one_error_line(err, "PQB_CACHE_DIR")
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").rglob("*.json"))


def test_efbig_is_one_line_and_the_previous_file_stays(tmp_path) -> None:
    """A real file-size limit (RLIMIT_FSIZE) in a child process: the write fails with EFBIG."""
    import subprocess
    import sys

    target = tmp_path / "results.json"
    target.write_text("previous")
    code = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))\n"
        "from pqb.dataset.io import atomic_write_bytes, write_failure\n"
        "try:\n"
        f"    atomic_write_bytes({str(target)!r}, b'x' * 5000)\n"
        "except OSError as exc:\n"
        "    print('error: ' + write_failure(exc), file=sys.stderr); sys.exit(1)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "File too large" in proc.stderr, proc.stderr
    _one_error_line(proc.stderr, "no earlier file was replaced")
    assert target.read_text() == "previous"


def test_a_write_refused_mid_run_is_one_line_exit_1(tmp_path, capsys, monkeypatch) -> None:
    import errno

    import pqb.harness.evaluation.results as results

    def full(path, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(results, "atomic_write_json", full)
    code, err = _run(capsys, *_run_args(_tiny(tmp_path), tmp_path / "out"))
    assert code == 1
    _one_error_line(err, "No space left on device")


def test_a_corpus_of_empty_documents_is_a_violation_not_an_index_error(tmp_path, capsys) -> None:
    dataset = _tiny(tmp_path)
    f = _rows_file(dataset, "video_games-corpus")
    table = pq.read_table(f)
    blank = pa.array([""] * table.num_rows)
    pq.write_table(table.set_column(1, "title", blank).set_column(2, "text", blank), f)
    code, err = _run(capsys, *_run_args(dataset, tmp_path / "out"))
    assert code == 1 and "empty_documents" in err
    _one_error_line(err, "violation")


def test_bm25_indexes_a_corpus_without_tokens() -> None:
    from pqb.harness.retrievers.base import Corpus
    from pqb.harness.retrievers.lexical.bm25 import BM25Retriever

    r = BM25Retriever()
    r.index(Corpus(("a", "b"), ("", ""), ("", "")))  # once: IndexError in Postings.build


def test_an_unavailable_hub_model_exits_1(tmp_path, capsys) -> None:
    args = _run_args(_tiny(tmp_path), tmp_path / "out")
    args[args.index("bm25")] = "gte-base"  # a Hub checkpoint, offline here
    code, err = _run(capsys, *args)
    assert code == 1, err
    _one_error_line(err, "thenlper/gte-base")
