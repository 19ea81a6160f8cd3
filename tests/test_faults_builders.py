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
