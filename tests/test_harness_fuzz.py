"""Fuzzing the harness's readers (issue 30), as ``test_builders_amazon_fuzz.py`` fuzzes the builders':
whatever the bytes of a results file, a checkpoint, a TREC run, a task YAML, a cache file or a dataset
folder, a reader parses them or raises the harness's own one-line error (a :class:`PQBHarnessError`);
a damaged cache is rebuilt (``None``/``False``/fewer entries), never a traceback, never a wrong value."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pqb.harness.errors import DataError, PQBHarnessError, ResultsSchemaError, TaskConfigError

FUZZ = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
SLOW = settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
ODD_BYTES = [b"", b"\xff\xfe\x00", b"[" * 100_000, b'{"a": ' + b"9" * 5000 + b"}", b"null", b"[]", b'"x"',
             b"\xef\xbb\xbf{}", b'{"a": "\\ud800"}', b"NaN"]  # fmt: skip


@st.composite
def damaged(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` truncated, with bytes flipped or inserted, or replaced by odd bytes."""
    how = draw(st.integers(0, 3))
    if how == 0:
        return data[: draw(st.integers(0, len(data)))]
    if how == 1 and data:
        out = bytearray(data)
        for _ in range(draw(st.integers(1, 4))):
            out[draw(st.integers(0, len(out) - 1))] = draw(st.integers(0, 255))
        return bytes(out)
    if how == 2:
        at = draw(st.integers(0, len(data)))
        return data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at:]
    return draw(st.sampled_from(ODD_BYTES) | st.binary(max_size=40))


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:3]):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def edited(draw: st.DrawFn, obj: Any) -> Any:
    """A deep copy of ``obj`` with one value replaced by any JSON value, or one key removed."""
    obj = json.loads(json.dumps(obj))
    path = draw(st.sampled_from(_paths(obj)[1:]))
    parent = obj
    for p in path[:-1]:
        parent = parent[p]
    if isinstance(parent, dict) and draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(json_values)
    return obj


# -- a valid results file, from a real tiny run --------------------------------------------------------------


@pytest.fixture(scope="module")
def results_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    from pqb_fixtures import make_tiny_dataset

    from pqb.dataset import settings as pqb_settings
    from pqb.harness.cli import main

    tmp = tmp_path_factory.mktemp("fuzz_run")
    old = pqb_settings.PQB_CACHE_DIR
    pqb_settings.PQB_CACHE_DIR = tmp / "cache"
    try:
        dataset = make_tiny_dataset(tmp / "ds")
        code = main(["run", "--model", "bm25", "--tasks", "pqb_error_video_games", "--dataset_path", str(dataset),
                     "--output_path", str(tmp / "out"), "--bootstrap_iters", "20", "--verbosity", "ERROR",
                     "--no-progress"])  # fmt: skip
    finally:
        pqb_settings.PQB_CACHE_DIR = old
    assert code == 0
    [path] = sorted((tmp / "out").glob("bm25/results_*.json"))
    return _pinned(json.loads(path.read_bytes()), str(tmp))


def _pinned(obj: Any, tmp: str) -> bytes:
    """The results file with what differs between runs and machines (dates, timings, paths, the git hash,
    the numeric environment) set to fixed values, so the derandomized fuzzers see the same bytes
    everywhere; it still passes the schema, and is sealed again (its content digest: a valid file)."""
    from pqb.harness.evaluation.integrity import seal
    from pqb.harness.evaluation.results import validate_results

    def walk(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x.replace(tmp, "/fuzz") if isinstance(x, str) else x

    obj = walk(obj)
    obj.update(date=0.0, total_evaluation_time_seconds=0.0, git_hash="0000000")
    env = obj["config"]["numeric_environment"]
    env.update(cpu_count=1, processor="", threadpools=[], variables={})
    validate_results(obj)
    return json.dumps(seal(obj), sort_keys=True).encode()


def _load(reader: Any, path: Path) -> Any:
    """The reader's value, or the error it raised if it is the harness's own (anything else fails)."""
    try:
        return reader(path)
    except ResultsSchemaError as exc:
        assert str(exc)
        return exc


def test_the_valid_results_file_loads(results_bytes: bytes, tmp_path: Path) -> None:
    from pqb.harness.evaluation.results import load_results

    (tmp_path / "r.json").write_bytes(results_bytes)
    assert "pqb_error_video_games" in load_results(tmp_path / "r.json")["results"]


@pytest.mark.parametrize("raw", ODD_BYTES, ids=range(len(ODD_BYTES)))
def test_odd_results_and_checkpoint_bytes_raise_the_schema_error(tmp_path: Path, raw: bytes) -> None:
    from pqb.harness.evaluation.results import load_checkpoint, load_results

    (tmp_path / "r.json").write_bytes(raw)
    assert isinstance(_load(load_results, tmp_path / "r.json"), ResultsSchemaError)
    assert isinstance(_load(load_checkpoint, tmp_path / "r.json"), ResultsSchemaError)


@FUZZ
@given(data=st.data())
def test_results_files_parse_or_raise_the_schema_error(results_bytes: bytes, tmp_path: Path, data) -> None:
    from pqb.harness.evaluation.results import load_results

    valid = json.loads(results_bytes)
    raw = data.draw(damaged(results_bytes) | edited(valid).map(lambda o: json.dumps(o).encode()))
    (tmp_path / "r.json").write_bytes(raw)
    out = _load(load_results, tmp_path / "r.json")
    if isinstance(out, dict):
        assert isinstance(out.get("results"), dict)


# -- checkpoints ----------------------------------------------------------------------------------------------


@FUZZ
@given(data=st.data())
def test_checkpoints_parse_or_raise_the_schema_error(results_bytes: bytes, tmp_path: Path, data) -> None:
    from pqb.harness.evaluation.results import load_checkpoint, write_checkpoint

    valid = json.loads(results_bytes)
    path = tmp_path / "checkpoint_20260101-000000.json.partial"
    write_checkpoint(path, valid, {"pqb_error_video_games": {"hit@10": np.linspace(0, 1, 5)}})
    good = path.read_bytes()
    with_reps = json.loads(good)
    raw = data.draw(damaged(good) | edited(with_reps).map(lambda o: json.dumps(o).encode()))
    path.write_bytes(raw)
    out = _load(load_checkpoint, path)
    if isinstance(out, tuple):
        results, reps = out
        assert isinstance(results, dict)
        for per_task in reps.values():
            for arr in per_task.values():
                assert isinstance(arr, np.ndarray) and arr.dtype == np.float64 and arr.ndim == 1


@FUZZ
@given(reps=json_values)
@example(reps=[1])
@example(reps={"pqb_error_video_games": [1]})
@example(reps={"pqb_error_video_games": {"hit@10": "x"}})
@example(reps={"pqb_error_video_games": {"hit@10": [[1.0], [2.0]]}})
@example(reps={"pqb_error_video_games": {"hit@10": 0.5}})
def test_damaged_checkpoint_replicates_raise_the_schema_error(results_bytes: bytes, tmp_path: Path, reps) -> None:
    from pqb.harness.evaluation.results import load_checkpoint

    path = tmp_path / "checkpoint_20260101-000000.json.partial"
    path.write_text(json.dumps({**json.loads(results_bytes), "replicates": reps}), encoding="utf-8")
    out = _load(load_checkpoint, path)
    if isinstance(out, tuple):
        assert all(a.ndim == 1 for r in out[1].values() for a in r.values())


# -- TREC runs (pqb-harness score --run) -------------------------------------------------------------------------

token = st.text(st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), min_size=1, max_size=6)
number = st.sampled_from(["1", "2", "10", "-3", "1.5", "nan", "inf", "-inf", "1e400", "x", "", "0x1"])
trec_line = st.one_of(
    st.tuples(token, st.just("Q0"), token, number, number, token).map(" ".join),
    st.tuples(st.sampled_from(["q1", "q2", "q1_error"]), st.just("Q0"), st.sampled_from(["d1", "d2", "d3"]),
              st.integers(1, 5).map(str), st.sampled_from(["1.0", "0.5", "0.25"]), st.just("t")).map(" ".join),
    st.text(max_size=30).map(lambda s: s.replace("\n", " ").replace("\r", " ")),
)  # fmt: skip


def _parsed_lines(raw: bytes) -> list[list[str]]:
    return [ln.split() for ln in raw.decode("utf-8").splitlines() if ln.split()]


@FUZZ
@given(lines=st.lists(trec_line, max_size=10), tail=st.sampled_from([b"", b"\n", b"\xff", b"\r\n"]))
@example(lines=["q1 Q0 d1 1 nan t", "q1 Q0 d2 2 1.0 t"], tail=b"")
@example(lines=["q1 Q0 d1 1 1.0 t"], tail=b"\xff")
def test_trec_runs_parse_or_raise_a_data_error(tmp_path: Path, lines: list[str], tail: bytes) -> None:
    from pqb.harness.evaluation.external_runs import read_runs

    raw = "\n".join(lines).encode("utf-8") + tail
    (tmp_path / "run.trec").write_bytes(raw)
    try:
        run = read_runs([tmp_path / "run.trec"])
    except DataError as exc:
        assert str(exc)
        return
    rows = _parsed_lines(raw)
    assert {r[0] for r in rows} == set(run.lists)  # every query kept, none invented
    for qid, docs in run.lists.items():
        assert sorted(set(docs)) == sorted({r[2] for r in rows if r[0] == qid})
        scores = run.scores[qid]
        assert len(scores) == len(docs) and not np.isnan(scores).any()  # no NaN score ordered silently
        ranks = {(r[0], r[2]): int(r[3]) for r in rows}
        order = [(ranks[(qid, d)], -sc, d) for d, sc in zip(docs, scores, strict=True)]
        assert order == sorted(order)  # the file's rank column, ties by score then docid


# -- task YAML ------------------------------------------------------------------------------------------------

_TASK_DIR = Path(__file__).resolve().parent.parent / "tasks" / "pqb"
yaml_text = st.one_of(
    st.text(max_size=60),
    st.lists(st.tuples(st.sampled_from(["task", "group", "include", "k_values", "rr_cutoff", "dataset_name",
                                        "pair_type", "tag", "metadata", "bootstrap", "run_depth", "x"]),
                       st.sampled_from(["", "1", "-1", "[1, 1]", "[]", "{}", "null", "a: b", "[", "'",
                                        "_default_template_yaml", "nope.yaml", "*a", "&a x", "!!python/name:os.system",
                                        "0x10", "1e9", ".inf", "[pqb_fuzz]", "error"])),
             max_size=6).map(lambda kv: "\n".join(f"{k}: {v}" for k, v in kv)),
)  # fmt: skip


@pytest.fixture
def task_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A task folder with the shipped template and one valid task; the shipped tasks are not loaded."""
    from pqb.harness.evaluation import task_registry

    empty = tmp_path / "builtin"
    empty.mkdir()
    monkeypatch.setattr(task_registry, "builtin_task_dir", lambda: empty)
    folder = tmp_path / "tasks"
    folder.mkdir()
    shutil.copy(_TASK_DIR / "_default_template_yaml", folder / "_default_template_yaml")
    return folder


def _registry(folder: Path, text: bytes) -> Any:
    from pqb.harness.evaluation.task_registry import TaskRegistry

    (folder / "pqb_fuzz.yaml").write_bytes(text)
    try:
        return TaskRegistry([folder])
    except PQBHarnessError as exc:
        assert isinstance(exc, TaskConfigError | PQBHarnessError) and str(exc)
        return exc


@FUZZ
@given(raw=yaml_text.map(str.encode) | st.binary(max_size=40))
@example(raw=b"task: [")
@example(raw=b"task: x\ninclude: [1]")  # once TypeError in Path()
@example(raw=b"\x80task: x")  # once UnicodeDecodeError
@example(raw=b"[" * 100_000)  # once RecursionError
@example(raw=b"task: x\nrun_depth: " + b"9" * 5000)  # once ValueError (int digits limit)
@example(raw=b"task: 0\ngroup:")  # once TypeError in _as_tuple
@example(raw=b"include: _default_template_yaml\ntask: t\ndataset_name: d\npair_type: [error]")  # unhashable
@example(raw=b"include: _default_template_yaml\ntask: t\ndataset_name: d\npair_type: error\nmetadata: x")
def test_random_task_yaml_loads_or_raises_a_task_config_error(task_folder: Path, raw: bytes) -> None:
    _registry(task_folder, raw)


@FUZZ
@given(data=st.data())
def test_mutated_task_yaml_loads_or_raises_a_task_config_error(task_folder: Path, data) -> None:
    valid = (_TASK_DIR / "pqb_error_video_games.yaml").read_bytes().replace(b"pqb_error_video_games", b"pqb_fuzz")
    assert not isinstance(_registry(task_folder, valid), Exception)
    _registry(task_folder, data.draw(damaged(valid)))


# -- cache files ---------------------------------------------------------------------------------------------


@FUZZ
@given(data=st.data(), name=st.sampled_from(["postings.npz", "vocab.json", "index.json",
                                             "postings.npz.sha256", "vocab.json.sha256"]))  # fmt: skip
@example(data=None, name="index.json")  # "[" * 100_000: once RecursionError
def test_a_damaged_bm25_index_is_rebuilt_not_a_crash(tmp_path: Path, data, name: str) -> None:
    from pqb.harness.retrievers.lexical import inverted_index as ii

    folder = tmp_path / "idx"
    shutil.rmtree(folder, ignore_errors=True)
    postings = ii.Postings(np.array([0, 1, 2]), np.array([0, 1]), np.array([1, 2]), np.array([1, 2]))
    ii.save(folder, postings, {"a": 0, "b": 1})
    good = ii.load(folder)
    assert good is not None and good[1] == {"a": 0, "b": 1}
    before = (folder / name).read_bytes()
    after = b"[" * 100_000 if data is None else data.draw(damaged(before))
    (folder / name).write_bytes(after)
    out = ii.load(folder)  # None (rebuild) or the index: never an exception
    if out is not None and name != "index.json":
        assert after == before or out[1] == {"a": 0, "b": 1}


@FUZZ
@given(meta=st.one_of(json_values.map(json.dumps).map(str.encode), st.binary(max_size=30),
                      st.sampled_from(ODD_BYTES),
                      st.dictionaries(st.sampled_from(["sha256", "key_parts"]), json_values).map(
                          lambda d: json.dumps(d).encode())))  # fmt: skip
@example(meta=b'{"sha256": [1]}')
@example(meta=b'{"sha256": {"a\\u0000b": "x"}}')
@example(meta=b"[" * 100_000)
def test_a_damaged_embedding_cache_meta_is_re_encoded_not_a_crash(tmp_path: Path, meta: bytes) -> None:
    from pqb.harness.retrievers.neural.encoding import ArrayCache

    cache = ArrayCache(tmp_path, "dense", {"model": "m"})
    cache.save({"doc_embeddings": np.ones((2, 3), np.float32)})
    (cache.path / "meta.json").write_bytes(meta)
    assert cache.exists() in (True, False)


@FUZZ
@given(data=st.data())
def test_a_damaged_run_cache_shard_is_recomputed_not_a_crash(tmp_path: Path, data) -> None:
    from pqb.dataset.io import checksum_path
    from pqb.harness.evaluation.run_cache import RankEntry, RunCache

    root = tmp_path / "c"
    shutil.rmtree(root, ignore_errors=True)
    cache = RunCache(root, {"m": 1}, "fp", 3)
    entry = RankEntry(2.0, False, np.array([1, 0, 2]), np.array([0.9, 0.5, 0.1], np.float32))
    cache.add([("q", "d", entry)])
    [shard] = cache.folder.glob("shard_*.npz")
    target = data.draw(st.sampled_from([shard, checksum_path(shard)]))
    before = target.read_bytes()
    after = data.draw(damaged(before))
    target.write_bytes(after)
    again = RunCache(root, {"m": 1}, "fp", 3)
    got = again.get("q", "d")
    # a hit only when what the checksum protects is intact: the shard's bytes, the sidecar's digest
    # (its surrounding whitespace is not part of the digest)
    same = after == before or (target != shard and after.strip() == before.strip())
    assert got is None or (same and got.rank == 2.0)


# -- dataset folders --------------------------------------------------------------------------------------------

card_text = st.one_of(
    st.text(max_size=80),
    st.text(max_size=60).map(lambda s: f"---\n{s}\n---\n"),
    st.lists(st.sampled_from(["configs:", "- config_name: video_games", "  data_files:", "  - split: test",
                              "    path: data/video_games/test-00000-of-00001.parquet", "configs: 3",
                              "- 1", "  data_files: 7", "[", "- config_name: [a]", "  data_files: {path: 1}"]),
             max_size=8).map(lambda ls: "---\n" + "\n".join(ls) + "\n---\n"),
)  # fmt: skip


@pytest.fixture(scope="module")
def tiny_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pqb_fixtures import make_tiny_dataset

    return make_tiny_dataset(tmp_path_factory.mktemp("fuzz_ds") / "ds")


def _copy(src: Path, dst: Path) -> Path:
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    return dst


@FUZZ
@given(card=card_text)
@example(card="---\n[\n---\n")
@example(card="---\n- 1\n---\n")
@example(card="---\nconfigs: 3\n---\n")
def test_a_random_card_lists_configs_or_raises_a_data_error(tiny_dataset: Path, tmp_path: Path, card: str) -> None:
    from pqb.harness.evaluation.data import local_configs

    ds = tmp_path / "ds"
    if not ds.exists():
        _copy(tiny_dataset, ds)
    (ds / "README.md").write_text(card, encoding="utf-8")
    try:
        names = local_configs(str(ds))
    except DataError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert isinstance(names, set)


@SLOW
@given(data=st.data(), config=st.sampled_from(["video_games", "video_games-corpus", "video_games-queries"]))
def test_a_corrupted_parquet_raises_a_data_error(tiny_dataset: Path, tmp_path: Path, data, config: str) -> None:
    from pqb.harness.evaluation.data import load_config

    ds = _copy(tiny_dataset, tmp_path / "ds")
    shard = ds / "data" / config / "test-00000-of-00001.parquet"
    before = shard.read_bytes()
    after = data.draw(damaged(before))
    shard.write_bytes(after)
    try:
        out = load_config(str(ds), config)
    except DataError as exc:
        assert str(exc)
        return
    assert len(out) == len(load_config(str(_copy(tiny_dataset, tmp_path / "ok")), config))


# -- through the CLI: exit 0, 1 or 2 and, on failure, one ``error:`` line ---------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    from pqb.harness.cli import main

    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert code in (0, 1, 2) and "Traceback" not in err, err
    if code:
        assert len([ln for ln in err.splitlines() if ln.startswith("error:")]) == 1, err
    return code, err


@st.composite
def score_runs(draw: st.DrawFn) -> bytes:
    """A TREC run over the tiny dataset's ids, with random lines, then damaged at random."""
    qids = ["r1", "r4", "r1_error", "r9_error", "nope"]
    docs = [f"B{i:03d}" for i in range(5)] + ["zzz"]
    lines = draw(st.lists(st.tuples(st.sampled_from(qids), st.sampled_from(docs), st.integers(-1, 5),
                                    st.sampled_from(["1.0", "0.5", "-2", "inf"])), max_size=12))  # fmt: skip
    raw = "".join(f"{q} Q0 {d} {r} {sc} sys\n" for q, d, r, sc in lines).encode()
    return draw(st.just(raw) | damaged(raw)) if raw else raw


@SLOW
@given(raw=score_runs())
@example(raw=b"r1 Q0 B000 1 nan sys\n")
def test_score_on_a_fuzzed_run_exits_cleanly(tiny_dataset: Path, tmp_path: Path, capsys, raw: bytes) -> None:
    (tmp_path / "run.trec").write_bytes(raw)
    _cli(capsys, "score", "--run", str(tmp_path / "run.trec"), "--tasks", "pqb_error_video_games",
         "--dataset_path", str(tiny_dataset), "--output_path", str(tmp_path / "out"), "--bootstrap_iters", "5",
         "--name", "fuzz")  # fmt: skip


@SLOW
@given(data=st.data())
def test_leaderboard_on_a_fuzzed_results_file_exits_cleanly(results_bytes: bytes, tmp_path: Path, capsys,
                                                             data) -> None:  # fmt: skip
    raw = data.draw(damaged(results_bytes) | edited(json.loads(results_bytes)).map(lambda o: json.dumps(o).encode()))
    folder = tmp_path / "res" / "bm25"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results_2026-01-01T00-00-00.json").write_bytes(raw)
    _cli(capsys, "leaderboard", str(tmp_path / "res"), "--out", str(tmp_path / "lb"), "--no-plots", "--no-html",
         "--no-paper")  # fmt: skip


@SLOW
@given(card=card_text)
@example(card="---\n[\n---\n")
@example(card="---\nconfigs: 3\n---\n")
def test_validate_with_a_random_card_exits_cleanly(tiny_dataset: Path, tmp_path: Path, capsys, card: str) -> None:
    ds = tmp_path / "ds"
    if not ds.exists():
        _copy(tiny_dataset, ds)
    (ds / "README.md").write_text(card, encoding="utf-8")
    _cli(capsys, "validate", "--tasks", "pqb_error_video_games", "--dataset_path", str(ds))


def test_leaderboard_refuses_a_results_file_with_a_null_cut_off(results_bytes: bytes, tmp_path: Path, capsys) -> None:
    """Found by the fuzz test above: ``k_values: [null, 5, ...]`` passed the schema and crashed the tables.
    (An edit after the run: ``--allow-edited`` reads it past its digest.)"""
    obj = json.loads(results_bytes)
    for cfg in obj["configs"].values():
        cfg["k_values"] = [None, 5, 10, 20]
    folder = tmp_path / "res" / "bm25"
    folder.mkdir(parents=True)
    (folder / "results_2026-01-01T00-00-00.json").write_text(json.dumps(obj))
    code, err = _cli(capsys, "leaderboard", str(tmp_path / "res"), "--out", str(tmp_path / "lb"), "--no-plots",
                     "--no-html", "--no-paper", "--allow-edited")  # fmt: skip
    assert code == 1 and "k_values" in err, err
