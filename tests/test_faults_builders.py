"""Faults at the builders' edges (issue 30): each case fails loudly, in one line, instead of going on wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from pqb.builders.errors import CorruptFileError
from pqb.builders.workdir import WorkDir


def _run_stage(wd: WorkDir, name: str, inputs: list, text: str = "a\nb\nc\n") -> None:
    stage = wd.stage(name, inputs=inputs, config={"v": 1}, outputs=[f"{name}.txt"])
    wd.file(f"{name}.txt").write_text(text)
    stage.done({"rows": text.count("\n")})


def _one_error_line(err: str, fragment: str) -> None:
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and fragment in errors[0], err


def _not_a_folder(tmp_path: Path) -> Path:
    f = tmp_path / "file"
    f.write_text("x")
    return f


# -- 1. stage freshness verifies the outputs' bytes ----------------------------------------------------


def test_an_edited_output_makes_its_stage_stale_with_one_line_naming_the_file(tmp_path, capsys) -> None:
    wd = WorkDir(tmp_path, "toy")
    _run_stage(wd, "pair", [])
    assert wd.stage("pair", [], {"v": 1}, ["pair.txt"]).is_fresh()
    wd.file("pair.txt").write_text("a\n")  # 2 rows deleted: same name, fewer rows
    assert not wd.stage("pair", [], {"v": 1}, ["pair.txt"]).is_fresh()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pair.txt" in err[0] and "sha256" in err[0]
    assert wd.stage("pair", [], {"v": 1}, ["pair.txt"]).cached() is None  # the stage reruns


def test_an_unreadable_output_is_stale_not_a_traceback(tmp_path, capsys) -> None:
    wd = WorkDir(tmp_path, "toy")
    _run_stage(wd, "pair", [])
    out = wd.file("pair.txt")
    out.unlink()
    out.mkdir()  # cannot be read as a file
    (out / "x").write_text("")
    assert not wd.stage("pair", [], {"v": 1}, ["pair.txt"]).is_fresh()


def test_a_truncated_artifact_read_by_the_next_stage_names_its_producer(tmp_path) -> None:
    wd = WorkDir(tmp_path, "toy")
    _run_stage(wd, "users", [])
    wd.file("users.txt").write_bytes(b"a\n")  # truncated after the users stage wrote it
    with pytest.raises(CorruptFileError, match=r"users\.txt .*pqb-build users"):
        wd.stage("pair", [wd.path / "users.txt"], {"v": 1}, ["pair.txt"])


# -- 4. every value has a range --------------------------------------------------------------------


def test_generate_refuses_a_candidate_count_no_memory_holds(capsys) -> None:
    from pqb.builders.cli import main as build_main

    with pytest.raises(SystemExit) as exc:
        build_main(["generate", "--domain", "video_games", "--n", "100000000"])
    assert exc.value.code == 2
    _one_error_line(capsys.readouterr().err, "--n")


# -- 5. checksummed caches -------------------------------------------------------------------------


def test_the_parse_cache_rebuilds_a_file_that_is_not_a_database(tmp_path, capsys) -> None:
    import sqlite3

    from pqb.builders.parses import ParseCache

    path = tmp_path / "parses.sqlite"
    path.write_bytes(b"random bytes, not SQLite " * 100)
    cache = ParseCache(path)  # once: DatabaseError traceback
    assert "parse cache" in capsys.readouterr().err
    cache.put_many({"k1": [["a", 1]], "k2": [["b", 2]]})
    assert cache.get_many(["k1", "k2"]) == {"k1": [["a", 1]], "k2": [["b", 2]]}
    cache.close()
    with sqlite3.connect(path) as con:  # an edited row: no longer what the parse gave
        con.execute("UPDATE parses_v2 SET value = ? WHERE key = 'k1'", ('[["x", 9]]',))
    cache = ParseCache(path)
    assert cache.get_many(["k1", "k2"]) == {"k2": [["b", 2]]}  # k1 is parsed again
    assert "fail their checksum" in capsys.readouterr().err
    cache.close()


def test_the_correction_cache_recomputes_rows_that_fail_their_checksum(tmp_path, capsys) -> None:
    import sqlite3

    from pqb.builders.writing_errors.detection import CachedCorrector

    class Upper:
        backend_id = "upper"
        calls = 0

        def correct(self, sentences: list[str]) -> list[str]:
            Upper.calls += len(sentences)
            return [s.upper() for s in sentences]

    path = tmp_path / "gec_cache.sqlite"
    path.write_bytes(b"\x00" * 4096)
    cached = CachedCorrector(Upper(), path)
    assert cached.correct(["a b", "c d"]) == ["A B", "C D"]
    assert "correction cache" in capsys.readouterr().err
    with sqlite3.connect(path) as con:
        con.execute("UPDATE gec_v2 SET out = 'WRONG' WHERE out = 'A B'")
    assert cached.correct(["a b", "c d"]) == ["A B", "C D"] and Upper.calls == 3
    assert "fail their checksum" in capsys.readouterr().err


# -- 7. paths are confined -------------------------------------------------------------------------


def test_a_domain_that_climbs_out_of_the_work_dir_is_a_usage_error(tmp_path, capsys) -> None:
    from pqb.builders.cli import main as build_main
    from pqb.builders.errors import UsageError
    from pqb.builders.workdir import WorkDir

    with pytest.raises(SystemExit) as exc:
        build_main(["ingest", "--domain", "../../x", "--workdir", str(tmp_path / "work")])
    assert exc.value.code == 2
    _one_error_line(capsys.readouterr().err, "not a safe file name")
    with pytest.raises(UsageError, match="not a safe file name"):
        WorkDir(tmp_path / "work", "../x")  # every other way in (all, publish, release)
    assert not any(tmp_path.rglob("x"))


# -- 9. one error: line instead of tracebacks ------------------------------------------------------------


def test_publish_push_only_offline_is_one_line_exit_1(tmp_path, capsys, monkeypatch) -> None:
    from pqb.builders.cli import main
    from pqb.dataset import settings

    monkeypatch.setattr(settings, "HF_HUB_OFFLINE", True)
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "README.md").write_text("---\n---\n")
    code = main(["publish", "--push-only", "--repo", "org/pqb", "--dataset", str(tmp_path / "ds")])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert [line for line in err.splitlines() if line.startswith("error:")] == err.strip().splitlines()
    assert "HF_HUB_OFFLINE" in err


def test_a_work_dir_that_is_a_file_is_one_line(tmp_path, capsys) -> None:
    from pqb.builders.cli import main as build_main

    assert build_main(["users", "--workdir", str(_not_a_folder(tmp_path)), "--no-progress"]) == 2
    _one_error_line(capsys.readouterr().err, "--workdir")


# -- 10. local workers die with their parent ------------------------------------------------------------


def _alive(pid: int) -> bool:
    """``pid`` runs and is not a zombie (a dead orphan is reaped by init; a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_kill_9_of_the_parent_leaves_no_worker(tmp_path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    code = (
        "import sys, time\n"
        "from pqb.builders.executor import LocalExecutor\n"
        "ex = LocalExecutor(2)\n"
        "list(ex.map(time.sleep, [0.01, 0.01, 0.01, 0.01]))\n"
        "print(*ex._pool._processes, flush=True)\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    workers = [int(p) for p in parent.stdout.readline().split()]
    assert len(workers) == 2 and all(_alive(p) for p in workers)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait(timeout=30)
    deadline = time.monotonic() + 20
    while any(_alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [p for p in workers if _alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)  # do not leave them behind even when the test fails
    assert left == []
