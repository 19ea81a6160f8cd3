"""The build work directory's manifest: freshness, and several WorkDir objects on one folder."""

from __future__ import annotations

import hashlib
from pathlib import Path

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


def test_a_stage_whose_input_was_rewritten_is_stale_however_the_work_dir_is_spelled(
    tmp_path, monkeypatch
) -> None:
    """``pqb-build profiles --force`` with other settings once left ``pairs.parquet`` selected under the
    old Gaussians, and ``publish`` wrote those rows beside the new Gaussians' statistics. Each stage now
    records the work-dir artifacts it read by content and path inside the work dir, so the check holds
    whether ``--workdir`` was relative, absolute, or the recorded spelling no longer resolves."""
    import pytest

    from pqb.builders.errors import UsageError

    monkeypatch.chdir(tmp_path)
    relative = WorkDir("work", "toy")  # the stage commands' spelling
    _run_stage(relative, "users", {"link": "any"})
    pair = relative.stage("pair", [relative.path / "users.txt"], {"seed": 0}, ["pair.txt"])
    relative.file("pair.txt").write_text("pairs")
    pair.done()
    published = WorkDir(tmp_path / "work", "toy")  # publish's spelling
    assert published.stale_stages() == []
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # the recorded relative paths resolve to nothing here
    assert published.stale_stages() == []
    published.require_consistent()
    users = published.stage("users", [], {"link": "reviewers"}, ["users.txt"])  # rerun, other settings
    published.file("users.txt").write_text("other users")
    users.done({"rows": 2})
    assert [name for name, _ in published.stale_stages()] == ["pair"]
    with pytest.raises(UsageError, match=r"the pair stage .*: its input users\.txt changed since it ran; "
                       r"run `pqb-build pair --domain toy --workdir .*work`"):  # fmt: skip
        published.require_consistent()
    published.file("users.txt").write_text("edited by hand")  # now users itself is stale, and named first
    assert [name for name, _ in published.stale_stages()] == ["users", "pair"]


def test_a_folder_input_is_fingerprinted_by_its_content(tmp_path) -> None:
    """A folder input (a model checkpoint) was hashed as "missing": replacing its files changed nothing."""
    from pqb.builders.workdir import fingerprint_inputs

    folder = tmp_path / "checkpoint"
    (folder / "sub").mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "sub" / "weights.bin").write_bytes(b"\x00" * 8)
    before = fingerprint_inputs([folder], {})
    assert fingerprint_inputs([tmp_path / "absent"], {}) != before
    (folder / ".cache").mkdir()
    (folder / ".cache" / "download.metadata").write_text("etag, timestamp")  # not content: ignored
    assert fingerprint_inputs([folder], {}) == before
    (folder / "sub" / "weights.bin").write_bytes(b"\x01" * 8)
    assert fingerprint_inputs([folder], {}) != before


def test_the_code_fingerprint_covers_the_dataset_package_by_relative_path(tmp_path) -> None:
    """An edit of ``pqb_dataset/schema.py`` (whose ``words`` decide core terms) left every stage "up to
    date"; and files are keyed by their path inside the package, not their bare name."""
    import shutil

    import pqb.dataset
    from pqb.builders import workdir

    roots = workdir.code_roots()
    assert roots["dataset"] == Path(pqb.dataset.__file__).parent
    copies = {name: tmp_path / name for name in roots}
    for name, root in roots.items():
        shutil.copytree(root, copies[name], ignore=shutil.ignore_patterns("__pycache__", "data"))
    base = workdir.source_digest(copies)
    schema = copies["dataset"] / "schema.py"
    schema.write_text(schema.read_text() + "\n# the word regex changed\n")
    assert workdir.source_digest(copies) != base
    schema.write_text(schema.read_text().removesuffix("\n# the word regex changed\n"))
    assert workdir.source_digest(copies) == base
    # same file name and bytes, same place in the sorted walk, another folder: keyed by name it collided
    (copies["builders"] / "cli" / "a").mkdir()
    (copies["builders"] / "cli" / "all.py").rename(copies["builders"] / "cli" / "a" / "all.py")
    assert workdir.source_digest(copies) != base


def test_a_source_edited_while_a_forced_stage_reads_it_leaves_the_stage_stale(tmp_path) -> None:
    """Under --force the inputs were first hashed by done(), after the reads: the manifest named the edited
    file while the outputs came from the old one, and every later run took the stage as built."""
    source = tmp_path / "meta.jsonl"
    source.write_text("old title\n")
    wd = WorkDir(tmp_path / "work", "toy")
    stage = wd.stage("ingest", [source], {}, ["products.txt"])
    assert stage.cached(force=True) is None
    wd.file("products.txt").write_text(source.read_text())  # the stage reads its input ...
    source.write_text("new title\n")  # ... and the file changes before the stage ends
    stage.done({"rows": 1})
    assert not wd.stage("ingest", [source], {}, ["products.txt"]).is_fresh()
    recorded = dict(_source_files(wd))["meta.jsonl"]
    assert recorded == hashlib.sha256(b"old title\n").hexdigest()  # the card cites the file as read


def test_the_manifest_reads_the_same_under_a_non_utf8_locale(tmp_path) -> None:
    """The manifest is written as UTF-8 (stage stats hold text such as the threshold rule's "D²"); it was
    read back in the locale's encoding, so under a Latin-1 locale ``pqb-build publish`` wrote "DÂ²" into
    the card and the manifest, and under an ASCII one it failed. A C locale without coercion or UTF-8
    mode (an ASCII encoding) stands in for any locale that is not UTF-8."""
    import os
    import subprocess
    import sys

    wd = WorkDir(tmp_path, "toy")
    stage = wd.stage("profiles", inputs=[], config={}, outputs=["profiles.txt"])
    wd.file("profiles.txt").write_text("p")
    stage.done({"threshold_rule": "quantile of the calibration D²"})
    env = dict(os.environ, LC_ALL="C", PYTHONUTF8="0", PYTHONCOERCECLOCALE="0")
    code = ("import sys; from pqb.builders.workdir import WorkDir; "
            "print(ascii(WorkDir(sys.argv[1], 'toy').manifest['stages']['profiles']['stats']['threshold_rule']))")  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ascii("quantile of the calibration D²")
