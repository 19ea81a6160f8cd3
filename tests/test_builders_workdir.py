"""The build work directory's manifest: freshness, and several WorkDir objects on one folder."""

from __future__ import annotations

import hashlib

from pqb.builders.publish.card import _source_files
from pqb.builders.workdir import WorkDir


def _run_stage(wd: WorkDir, name: str, config: dict) -> None:
    stage = wd.stage(name, inputs=[], config=config, outputs=[f"{name}.txt"])
    wd.file(f"{name}.txt").write_text(name)
    stage.done({"rows": 1})


def test_two_workdir_objects_never_shadow_each_others_stages(tmp_path) -> None:
    pipeline_view = WorkDir(tmp_path, "toy")  # opened first, like the pipeline
    _run_stage(WorkDir(tmp_path, "toy"), "users", {"link": "any"})  # a stage function's own WorkDir
    assert pipeline_view.manifest["stages"]["users"]["config"] == {"link": "any"}
    _run_stage(pipeline_view, "pair", {"seed": 0})  # must not drop the "users" record
    assert set(WorkDir(tmp_path, "toy").manifest["stages"]) == {"users", "pair"}


def test_stage_is_fresh_until_its_config_or_outputs_change(tmp_path) -> None:
    wd = WorkDir(tmp_path, "toy")
    _run_stage(wd, "users", {"link": "any"})
    assert wd.stage("users", [], {"link": "any"}, ["users.txt"]).is_fresh()
    assert not wd.stage("users", [], {"link": "reviewers"}, ["users.txt"]).is_fresh()
    wd.file("users.txt").unlink()
    assert not wd.stage("users", [], {"link": "any"}, ["users.txt"]).is_fresh()


def test_the_card_cites_the_raw_sources_a_stage_read_however_the_work_dir_was_spelled(
    tmp_path, monkeypatch
) -> None:
    """A stage run with ``--workdir work`` records its inputs as relative paths; publishing from the
    absolute path once listed the work dir's own artifact (``products.parquet``) as a raw source, and
    hashed the raw file as it was at publish time, not as the stage read it."""
    monkeypatch.chdir(tmp_path)
    raw = tmp_path / "amazon" / "Video_Games.jsonl"
    raw.parent.mkdir()
    raw.write_text('{"read": 1}\n')
    read_digest = hashlib.sha256(raw.read_bytes()).hexdigest()
    relative = WorkDir("work", "toy")  # the stage command's spelling
    relative.file("products.parquet").write_text("an artifact")
    stage = relative.stage("users", [relative.path / "products.parquet", raw], {}, ["users.txt"])
    relative.file("users.txt").write_text("users")
    stage.done()
    raw.write_text('{"edited": "after the build"}\n')
    published = WorkDir(tmp_path / "work", "toy")  # publish's spelling
    assert _source_files(published) == [("Video_Games.jsonl", read_digest)]
