"""``pqb-build validate`` must not report on artifacts an upstream stage has since made stale.

SYNTHETIC work dir: hand-made sentences, users and 2-D embeddings recorded through the manifest like the
real stages, so the check runs in a second. Before the fix, ``pqb-build users --force --min-sentences 14``
followed by ``pqb-build validate syntax`` printed "up to date, skipped" and the old table (99 users on
the real slice, while the users stage now qualified 90), exit 0; ``pqb-build publish`` refused the same
work dir as stale.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from pqb.builders.config import BuildConfig
from pqb.builders.errors import UsageError
from pqb.builders.reports.attribution import run_validate_syntax
from pqb.builders.workdir import (
    EMBEDDINGS,
    EMBEDDINGS_SCHEMA,
    SENTENCES,
    SENTENCES_SCHEMA,
    USERS,
    USERS_TABLE_SCHEMA,
    WorkDir,
    write_parquet,
)

USERS_IDS = ("ua", "ub", "uc")


def _users_stage(wd: WorkDir, min_sentences: int) -> None:
    sents, users = [], []
    for u in USERS_IDS:
        for k in range(8):
            split = "profile" if k < 6 else "heldout"
            sents.append({"user_id": u, "parent_asin": "P1", "review_idx": k, "sent_idx": 0,
                          "sentence_id": f"{u}r{k}s0", "text": f"{u} wrote sentence {k}.", "split": split})  # fmt: skip
        users.append({"user_id": u, "n_sentences": 8, "n_profile": 6, "n_heldout": 2,
                      "qualified": min_sentences <= 8})  # fmt: skip
    stage = wd.stage("users", [], {"min_sentences": min_sentences}, [SENTENCES, USERS])
    write_parquet(pa.Table.from_pylist(sents, schema=SENTENCES_SCHEMA), wd.file(SENTENCES))
    write_parquet(pa.Table.from_pylist(users, schema=USERS_TABLE_SCHEMA), wd.file(USERS))
    stage.done({"users_qualified": sum(u["qualified"] for u in users)})


def _profiles_stage(wd: WorkDir) -> None:
    rng = np.random.default_rng(0)
    stage = wd.stage("profiles", [wd.path / SENTENCES, wd.path / USERS], {"seed": 0}, [EMBEDDINGS])
    rows = []
    for i, u in enumerate(USERS_IDS):
        for k in range(8):
            z = (rng.normal(size=2) + 3 * i).tolist()
            rows.append({"sentence_id": f"{u}r{k}s0", "user_id": u, "split": "profile" if k < 6 else "heldout",
                         "z": z})  # fmt: skip
    write_parquet(pa.Table.from_pylist(rows, schema=EMBEDDINGS_SCHEMA), wd.file(EMBEDDINGS))
    stage.done({"gaussians": len(USERS_IDS)})


def test_validate_syntax_refuses_embeddings_of_an_earlier_users_stage(tmp_path: Path) -> None:
    wd = WorkDir(tmp_path / "work", "toy")
    _users_stage(wd, min_sentences=5)
    _profiles_stage(wd)
    cfg = BuildConfig(n_boot=5)
    assert run_validate_syntax(wd, cfg)["users"] == 3
    assert run_validate_syntax(wd, cfg).get("skipped")  # fresh: the recorded table

    _users_stage(wd, min_sentences=10)  # `pqb-build users --force --min-sentences 10`: nobody qualifies now
    assert [name for name, _ in wd.stale_stages()] == ["profiles"]
    with pytest.raises(UsageError, match=r"the profiles stage .* is stale: its input users\.parquet changed"):
        run_validate_syntax(wd, cfg)
    with pytest.raises(UsageError, match="is stale"):
        run_validate_syntax(wd, cfg, force=True)


def test_validate_syntax_ignores_stale_stages_it_does_not_read(tmp_path: Path) -> None:
    """A stale pair stage (e.g. after ``profiles --force`` with other settings) leaves the syntax
    study valid: it reads only the users' and profiles' artifacts."""
    wd = WorkDir(tmp_path / "work", "toy")
    _users_stage(wd, min_sentences=5)
    _profiles_stage(wd)
    pair = wd.stage("pair", [wd.path / EMBEDDINGS], {"seed": 0}, ["pairs.txt"])
    wd.file("pairs.txt").write_text("pairs")
    pair.done()
    wd.file("pairs.txt").write_text("edited by hand")
    assert [name for name, _ in wd.stale_stages()] == ["pair"]
    assert run_validate_syntax(wd, BuildConfig(n_boot=5))["users"] == 3


def test_validate_errors_and_typos_refuse_a_stale_work_dir(tmp_path: Path) -> None:
    """The error study reads ``errors/profiles.json``, the typo study the injected queries: both are
    refused when the users stage ran again since the errors stage read its artifacts."""
    from pqb.builders.reports.error_study import run_error_study
    from pqb.builders.reports.typo_study import run_typo_study

    wd = WorkDir(tmp_path / "work", "toy")
    _users_stage(wd, min_sentences=5)
    errors = wd.stage("errors", [wd.path / SENTENCES, wd.path / USERS], {}, ["errors/profiles.json"])
    wd.file("errors/profiles.json").write_text("{}")
    errors.done()
    _users_stage(wd, min_sentences=10)
    with pytest.raises(UsageError, match=r"the errors stage .* is stale"):
        run_error_study(wd, n_boot=5)
    with pytest.raises(UsageError, match=r"the errors stage .* is stale"):
        run_typo_study(wd, n_boot=5)
