"""Safe in shared folders, builder side (issue 45): one writer per work dir and dataset folder, a
publish readers can read at every instant, and nothing deleted that the tool did not write.

The work dirs here are SYNTHETIC (:func:`test_builders_publish.build_workdir`), except the slow
concurrency test, which builds the embedded real slice.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_builders_publish import build_workdir

from pqb.builders.cli import main as build_main
from pqb.builders.errors import FolderBusyError, UsageError
from pqb.builders.publish.layout import DATA_DIR, card_data_files, config_path, published_configs
from pqb.builders.publish.tables import publish
from pqb.builders.workdir import LOCK_FILE, writer_lock
from pqb.dataset.io import sha256_file


def _one_error_line(err: str, *fragments: str) -> str:
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and all(f in errors[0] for f in fragments), err
    return errors[0]


_HOLDER = """
import sys, time
from pqb.builders.workdir import writer_lock
with writer_lock(sys.argv[1]):
    print("locked", flush=True)
    time.sleep(120)
"""


def _hold(folder: Path) -> subprocess.Popen:
    """Another process holding ``folder``'s writer lock (as a running `pqb-build` does)."""
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(folder), "--distance", "bhattacharyya"],
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout.readline().strip() == "locked"
    return proc


# -- row 1: one writer per work dir ------------------------------------------------------------------------


def test_a_second_writer_of_a_work_dir_stops_at_once_naming_the_holder(tmp_path, capsys) -> None:
    """Two `pqb-build all` on one work dir with different settings both exited 0, and one dataset shipped
    the other build's rows under its own card; nothing locked ``work/<domain>/``."""
    holder = _hold(tmp_path / "work" / "video_games")
    try:
        t0 = time.monotonic()
        code = build_main(
            ["pair", "--workdir", str(tmp_path / "work"), "--domain", "video_games", "--no-progress"]
        )
        assert code == 1 and time.monotonic() - t0 < 30
        _one_error_line(
            capsys.readouterr().err, f"pid {holder.pid}", "--distance bhattacharyya", "one writer"
        )
        from pqb.builders import pipeline

        with pytest.raises(FolderBusyError, match=f"pid {holder.pid}"):  # `pqb-build all` and the Python API
            pipeline.build(
                ["video_games"], work=tmp_path / "work", dataset_dir=tmp_path / "ds", progress=False
            )
        assert not (tmp_path / "ds").exists()
    finally:
        holder.kill()
        holder.wait()


def test_a_second_publish_into_one_dataset_folder_stops_at_once(tmp_path) -> None:
    wd = build_workdir(tmp_path / "work")
    holder = _hold(tmp_path / "ds")
    try:
        with pytest.raises(FolderBusyError, match=f"{tmp_path / 'ds'} is being written by pid {holder.pid}"):
            publish([wd], tmp_path / "ds", build_info={"seed": 0})
    finally:
        holder.kill()
        holder.wait()
    assert not list((tmp_path / "ds").rglob("*.parquet"))


def test_a_killed_writers_lock_is_stale_and_taken_over_with_a_note(tmp_path, capsys) -> None:
    folder = tmp_path / "work" / "video_games"
    holder = _hold(folder)
    os.kill(holder.pid, signal.SIGKILL)  # the kernel releases its flock; its record stays behind
    holder.wait()
    assert json.loads((folder / LOCK_FILE).read_text())["pid"] == holder.pid
    with writer_lock(folder):
        assert json.loads((folder / LOCK_FILE).read_text())["pid"] == os.getpid()
    err = capsys.readouterr().err
    assert f"pid {holder.pid}" in err and "killed" in err
    assert (folder / LOCK_FILE).read_text() == ""  # a normal end leaves no record


def test_the_lock_is_reentrant_within_one_process(tmp_path) -> None:
    with writer_lock(tmp_path / "a"), writer_lock(tmp_path / "a", tmp_path / "b"):
        pass
    holder = _hold(tmp_path / "a")  # released: another process can take it
    holder.kill()
    holder.wait()


# -- row 2: a config folder that is a symbolic link ---------------------------------------------------------


def _user_folder(tmp_path: Path) -> Path:
    mine = tmp_path / "my_results"
    mine.mkdir()
    (mine / "precious_results.parquet").write_bytes(b"the user's own file")
    (mine / "notes.txt").write_text("mine")
    return mine


def _files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): sha256_file(p) for p in sorted(root.rglob("*")) if p.is_file()}


def test_publish_refuses_a_config_folder_that_is_a_symlink(tmp_path, capsys) -> None:
    """`pqb-build publish` into a dataset whose ``data/<config>/`` was a link to another folder deleted every
    other ``*.parquet`` there (a user's ``precious_results.parquet``), exit 0."""
    wd = build_workdir(tmp_path / "work")
    ds = tmp_path / "pqb_dataset"
    publish([wd], ds, build_info={"seed": 0})
    mine = _user_folder(tmp_path)
    shard = config_path(ds, "video_games")
    os.replace(shard, mine / shard.name)
    (ds / DATA_DIR / "video_games").rmdir()
    (ds / DATA_DIR / "video_games").symlink_to(mine, target_is_directory=True)
    before, card = _files(mine), (ds / "README.md").read_bytes()
    code = build_main(["publish", "--workdir", str(tmp_path / "work"), "--dataset", str(ds)])
    assert code == 2
    _one_error_line(capsys.readouterr().err, "data/video_games is a symbolic link", "writes only inside")
    assert _files(mine) == before and (ds / "README.md").read_bytes() == card
    os.unlink(ds / DATA_DIR / "video_games")  # also a data/ link, or a folder resolving outside
    (ds / DATA_DIR).rename(tmp_path / "elsewhere")
    (ds / DATA_DIR).symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(UsageError, match="data is a symbolic link"):
        publish([wd], ds, build_info={"seed": 0})


def test_publish_deletes_only_the_shards_its_previous_card_listed(tmp_path) -> None:
    """A user's file in a config folder, and a shard the card never listed, stay; the old shards go."""
    ds = tmp_path / "pqb_dataset"
    publish([build_workdir(tmp_path / "w0", seed=0)], ds, build_info={"seed": 0})
    old = config_path(ds, "video_games")
    (ds / DATA_DIR / "video_games" / "my_notes.parquet").write_bytes(b"mine")
    unlisted = ds / DATA_DIR / "video_games-corpus" / "test-00000-of-00001-0123456789abcdef.parquet"
    unlisted.write_bytes(config_path(ds, "video_games-corpus").read_bytes())
    publish([build_workdir(tmp_path / "w1", seed=1)], ds, build_info={"seed": 1})
    new = config_path(ds, "video_games")
    assert new != old and not old.exists() and (ds / DATA_DIR / "video_games" / "my_notes.parquet").exists()
    assert unlisted.exists()  # not the card's: never deleted (the card says which shard is the config's)
    assert card_data_files(ds)["video_games"] == [new.relative_to(ds).as_posix()]
    assert not (ds / ".pqb-publish").exists()
    withdrawn = publish([], ds, withdraw=["video_games"])  # withdraw: the same rule
    assert sorted(withdrawn) == [f"video_games{k}" for k in ("", "-corpus", "-qrels", "-queries", "-users")]
    assert not new.exists() and (ds / DATA_DIR / "video_games" / "my_notes.parquet").exists()
    assert unlisted.exists() and published_configs(ds) == [
        "video_games-corpus"
    ]  # the unlisted shard's folder


# -- row 12: readers never see a half-published folder -------------------------------------------------------


def _harness_loads(ds: Path) -> int:
    """Rows the harness loads for the syntactic task of ``ds`` (raises what `pqb-harness run` would)."""
    from pqb.harness.evaluation.evaluator import load_tasks
    from pqb.harness.evaluation.task_registry import TaskRegistry

    cfg = TaskRegistry().tasks["pqb_syntactic_video_games"]
    loaded, skipped = load_tasks([cfg], str(ds))
    assert not skipped, skipped
    return len(loaded[cfg.task].rows)


def test_a_reader_during_a_publish_reads_one_whole_generation(tmp_path, monkeypatch) -> None:
    """Publish wrote the new shards (deleting the old ones) first and the card last: for most of a publish
    the card named shards that were gone, and 28 of 32 `run`s started meanwhile failed with "dataset
    unavailable". The harness reads the folder at the moment the card is written, and after."""
    import pqb.builders.publish.card as card

    ds = tmp_path / "pqb_dataset"
    publish([build_workdir(tmp_path / "w0", seed=0)], ds, build_info={"seed": 0})
    n_old = _harness_loads(ds)
    real, seen = card.write_card, []

    def write_card_while_read(*args, **kwargs):
        seen.append(_harness_loads(ds))  # the folder as readers see it just before the new card
        return real(*args, **kwargs)

    monkeypatch.setattr(card, "write_card", write_card_while_read)
    wd1 = build_workdir(tmp_path / "w1", seed=1)
    publish([wd1], ds, build_info={"seed": 1})
    assert seen == [n_old]
    from pqb.builders.workdir import PAIRS, read_parquet

    assert _harness_loads(ds) == read_parquet(wd1.file(PAIRS)).num_rows


def test_a_reader_whose_card_was_replaced_mid_read_reads_again(tmp_path, monkeypatch) -> None:
    import pqb.harness.evaluation.data as data
    from pqb.harness.errors import DatasetNotFoundError

    ds = tmp_path / "pqb_dataset"
    publish([build_workdir(tmp_path / "w0", seed=0)], ds, build_info={"seed": 0})
    real, calls = data._load_config, []

    def shard_gone_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:  # the reader read the old card, then a publish swapped it and deleted its shards
            publish([build_workdir(tmp_path / "w1", seed=1)], ds, build_info={"seed": 1})
            raise DatasetNotFoundError(
                "dataset config 'video_games' is declared ... its data files are missing"
            )
        return real(*args, **kwargs)

    monkeypatch.setattr(data, "_load_config", shard_gone_once)
    assert data.load_config(str(ds), "video_games").num_rows > 0 and len(calls) == 2

    def gone(*args, **kwargs):
        calls.append(1)
        raise DatasetNotFoundError("dataset config 'video_games' not found")

    calls.clear()
    monkeypatch.setattr(data, "_load_config", gone)
    with pytest.raises(DatasetNotFoundError):  # the card did not change: a real absence, not read again
        data.load_config(str(ds), "video_games")
    assert len(calls) == 1


# -- row 9: a line is capped before it is held -----------------------------------------------------------------


def test_a_compressed_bomb_line_costs_the_cap_not_the_line(tmp_path) -> None:
    """A 6 MB ``.jsonl.gz`` holding one 6 GiB line was read whole before the 20,000-character text cap:
    2.7 GB RSS, then a ``MemoryError`` traceback (here 64 MiB, 64 KB compressed: the same path, scaled)."""
    import gzip
    import tracemalloc

    from pqb.builders.errors import MalformedLineError
    from pqb.builders.source.amazon import ReadStats, iter_json_objects
    from pqb.dataset.io import MAX_LINE_BYTES

    path = tmp_path / "Video_Games.jsonl.gz"
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(b'{"user_id": "u1", "parent_asin": "B1", "text": "fine"}\n{"user_id": "u2", "text": "')
        for _ in range(64):
            f.write(b"a" * 2**20)
        f.write(b'"}\n{"user_id": "u3", "parent_asin": "B1", "text": "good"}\n')
    stats = ReadStats()
    tracemalloc.start()
    try:
        kept = [obj["user_id"] for _, obj in iter_json_objects(path, stats)]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert kept == ["u1", "u3"] and stats.counts["malformed"] == 1
    assert stats.examples["malformed"] == [
        f"{path.name}:2: line longer than {MAX_LINE_BYTES} bytes (not read)"
    ]
    assert peak < 3 * MAX_LINE_BYTES, (
        peak
    )  # gzip's buffers hold the cap twice; once: the whole 64 MiB line and more
    with pytest.raises(MalformedLineError, match=r"Video_Games\.jsonl\.gz:2: line longer than"):
        list(iter_json_objects(path, ReadStats(), strict=True))


# -- the concurrency check: two differently configured builds on one work dir, five times ---------------------

_BUILD = """
import sys
from dataclasses import replace
from pathlib import Path

from pqb.builders.config import EMBEDDED_DEFAULT, EncoderConfig
from pqb.builders.errors import FolderBusyError
from pqb.builders.pipeline import build

distance, work, dataset = sys.argv[1:]
d = EMBEDDED_DEFAULT  # made cheap (10 candidates a product, a 2-epoch encoder), real data all the same
config = replace(d, n_candidates=10, encoder=EncoderConfig(epochs=2), pair=replace(d.pair, distance=distance))
try:
    build(["video_games"], work=Path(work), dataset_dir=Path(dataset), config=config, progress=False)
except FolderBusyError as exc:
    print(f"error: {exc}", file=sys.stderr)
    sys.exit(1)
"""


def self_consistent(dataset: Path, distance: str) -> list[str]:
    """Why a published folder does not describe itself (``[]`` when it does): ``pqb-build check``'s rules,
    each shard's content-addressed name (the card's digests) against its sha256, and the card's provenance
    (the pair stage's distance and row count) against the build that wrote the folder and its rows."""
    import re

    import pyarrow.parquet as pq

    from pqb.builders.publish.tables import check_dataset

    problems = [] if (report := check_dataset(dataset)).ok else [report.summary(max_lines=3)]
    for config, paths in card_data_files(dataset).items():
        for rel in paths:
            m = re.search(r"-([0-9a-f]{16})\.parquet$", rel)
            if not (dataset / rel).is_file() or (m and sha256_file(dataset / rel)[:16] != m.group(1)):
                problems.append(f"{config}: the card's {rel} is not that file")
    card = (dataset / "README.md").read_text(encoding="utf-8")
    provenance = json.loads(card.split("```json\n", 1)[1].split("\n```", 1)[0])
    pair = provenance["domains"]["video_games"]["stages"]["pair"]
    if {provenance["build"]["config"]["pair"]["distance"], pair["config"]["distance"]} != {distance}:
        problems.append(f"built with {distance}, the card says {pair['config']['distance']}")
    if pair["stats"]["rows"] != pq.read_metadata(config_path(dataset, "video_games")).num_rows:
        problems.append(f"the card's pair stage made {pair['stats']['rows']} rows, the shard holds others")
    return problems


@pytest.mark.slow
def test_two_builds_with_other_settings_on_one_work_dir_never_mix(tmp_path) -> None:
    """Two `pqb-build all` on one work dir, the default and `--distance bhattacharyya`, both exited 0, and one
    dataset shipped the default build's 210 rows under a card that said bhattacharyya (1 of 2 attempts). Five
    times: one stops at once naming the other, or both datasets describe themselves."""
    from pqb.dataset import settings

    if not (settings.PQB_AMAZON_DIR / "Video_Games.jsonl").is_file():
        pytest.skip("needs the embedded slice (PQB_AMAZON_DIR)")
    outcomes = []
    for i in range(5):
        argv = {d: [sys.executable, "-c", _BUILD, d, str(tmp_path / "work"), str(tmp_path / f"{d}{i}")]
                for d in ("sym_kl", "bhattacharyya")}  # fmt: skip
        procs = {d: subprocess.Popen(a, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for d, a in argv.items()}  # fmt: skip
        ends = {d: (p.wait(timeout=3600), p.stderr.read()) for d, p in procs.items()}
        assert all(code in (0, 1) for code, _ in ends.values()), ends
        for distance, (code, err) in ends.items():
            if code == 1:  # refused at once, naming the writer: nothing of its own was published
                # the holder is named by pid, or, in the moment between its lock and its record, said to
                # have just started (builders/workdir.py): either way the refusal names the folder's writer
                assert "one writer per folder" in err, err
                assert "is being written by pid" in err or "it has just started and not yet said which" in err, err
                assert not (tmp_path / f"{distance}{i}" / "README.md").exists()
            else:
                assert self_consistent(tmp_path / f"{distance}{i}", distance) == [], distance
        outcomes.append(sorted(d for d, (code, _) in ends.items() if code == 0))
    assert all(outcomes), outcomes  # every time at least one build published
