"""Faults at the builders' edges (issue 30): each case fails loudly, in one line, instead of going on wrong."""

from __future__ import annotations

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
