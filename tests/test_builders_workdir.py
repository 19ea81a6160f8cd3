"""The build work directory's manifest: freshness, and several WorkDir objects on one folder."""

from __future__ import annotations

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
