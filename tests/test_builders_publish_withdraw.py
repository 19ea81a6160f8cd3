"""A rebuild of a domain that yields no pairs removes that domain's configs of an earlier build.

Before: ``pqb-build all`` published only the domains with pairs and rewrote the card over every config
in the folder, so a domain whose rebuild gave no pairs kept its earlier rows, listed by the new card
beside this build's settings, with exit code 0.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from test_builders_publish import build_workdir

from pqb.builders import pipeline
from pqb.builders.errors import UsageError
from pqb.builders.publish.card import declare_local_configs
from pqb.builders.publish.layout import published_configs
from pqb.builders.publish.tables import publish, write_config
from pqb.builders.workdir import WorkDir, read_parquet


def _published(tmp_path: Path) -> Path:
    """A dataset folder holding video_games's five built configs and an imported release config."""
    ds = tmp_path / "pqb_dataset"
    wd = build_workdir(tmp_path / "work")
    publish([wd], ds, build_info={"seed": 0})
    write_config(read_parquet(wd.file("pairs.parquet")).slice(0, 0), ds, "video_games-release")
    return ds


def test_publish_withdraws_the_built_configs_and_keeps_the_release(tmp_path: Path) -> None:
    ds = _published(tmp_path)
    assert "video_games" in published_configs(ds)
    counts = publish([], ds, build_info={"seed": 1}, withdraw=["video_games"])
    assert counts == dict.fromkeys(
        ["video_games", "video_games-corpus", "video_games-queries", "video_games-qrels", "video_games-users"], 0
    )
    assert published_configs(ds) == ["video_games-release"]
    assert not (ds / "data" / "video_games").exists()
    card = (ds / "README.md").read_text()  # rewritten: it no longer lists the withdrawn configs
    assert "config_name: video_games" not in card and "Domains in this build: (none built)" in card


def test_build_removes_a_domain_that_now_yields_no_pairs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ds = _published(tmp_path)
    note = "no pairs passed the selection gates"
    monkeypatch.setattr(
        pipeline, "build_domain", lambda d, *a, **k: pipeline.DomainResult(d, {"pair": {"rows": 0}}, note=note)
    )
    log = io.StringIO()
    results = pipeline.build(["video_games"], work=tmp_path / "work", dataset_dir=ds, progress=False, log=log)
    assert published_configs(ds) == ["video_games-release"]
    assert results[0].note.startswith(note) and "5 configs from an earlier build were removed" in results[0].note
    assert "were removed" in log.getvalue()


def test_build_without_publishing_leaves_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ds = _published(tmp_path)
    before = published_configs(ds)
    monkeypatch.setattr(pipeline, "build_domain", lambda d, *a, **k: pipeline.DomainResult(d, note="none"))
    pipeline.build(["video_games"], work=tmp_path / "work", dataset_dir=ds, progress=False, log=io.StringIO(),
                   publish=False)  # fmt: skip
    assert published_configs(ds) == before


def test_publish_refuses_a_folder_holding_another_built_domain(tmp_path: Path) -> None:
    """The card has one build block and provenance for the published work dirs only: another domain's
    earlier rows in the folder were listed under this build's settings with no provenance, exit 0."""
    ds = _published(tmp_path)
    for kind in ("", "-corpus", "-queries", "-qrels", "-users"):  # toys, as an earlier `pqb-build all` left it
        shutil.copytree(ds / "data" / f"video_games{kind}", ds / "data" / f"toys{kind}")
    declare_local_configs(ds)  # ... and its card listed it (withdraw deletes only what the card listed)
    card = (ds / "README.md").read_bytes()
    wd = WorkDir(tmp_path / "work", "video_games")
    with pytest.raises(UsageError, match=r"already holds the built domain\(s\) toys"):
        publish([wd], ds, build_info={"seed": 0})
    assert (ds / "README.md").read_bytes() == card
    publish([wd], ds, build_info={"seed": 0}, withdraw=["toys"])  # a build of toys that gave no pairs
    assert "video_games" in published_configs(ds) and not any(c.startswith("toys") for c in published_configs(ds))


def test_all_honours_no_semantic_for_a_model_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`pqb-build all --backend llm --no-semantic` ran the semantic gate anyway (the pipeline switched it on
    whenever MiniLM was installed), so `all` and `generate` built different candidate pools from one flag."""
    from pqb.builders.cli import main

    seen = []

    def fake_domain(domain, work, config, **kwargs):
        seen.append(config.filters.semantic)
        return pipeline.DomainResult(domain, note="none")

    monkeypatch.setattr(pipeline, "semantic_available", lambda *a: True)
    monkeypatch.setattr(pipeline, "build_domain", fake_domain)
    argv = ["all", "--domain", "video_games", "--workdir", str(tmp_path / "w"), "--dataset", str(tmp_path / "d"),
            "--backend", "llm", "--generator-model", "some/model", "--no-publish", "--no-progress"]  # fmt: skip
    main([*argv, "--no-semantic"])
    main([*argv, "--semantic"])
    assert seen == [False, True]


def test_a_build_with_nothing_to_publish_or_withdraw_leaves_another_domain_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = _published(tmp_path)
    card = (ds / "README.md").read_bytes()
    monkeypatch.setattr(pipeline, "build_domain", lambda d, *a, **k: pipeline.DomainResult(d, note="no targets"))
    results = pipeline.build(["software"], work=tmp_path / "work", dataset_dir=ds, progress=False, log=io.StringIO())
    assert results[0].note == "no targets" and (ds / "README.md").read_bytes() == card
    assert "video_games" in published_configs(ds)
