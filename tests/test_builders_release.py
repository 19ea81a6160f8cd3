"""Release import: the authors' record shape mapped to the row schema, edits recovered, audit counted.

The two release files below are SYNTHETIC, written in the authors' published shape
(``{asin: [{asin, uid, syntax_query, typo_query}]}``); the real files are used by the slow test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pqb.builders.publish.layout import config_path
from pqb.builders.publish.release import core_term_audit, release_rows, run_release
from pqb.builders.publish.tables import check_dataset, pseudonymize
from pqb.dataset import settings

RELEASE = {
    "B1": [
        {"asin": "B1", "uid": "AUSER1", "syntax_query": "I want a Zowie black mouse for gaming",
         "typo_query": "I want a Zowei black mouse for gaming"},  # edit inside the brand
        {"asin": "B1", "uid": "AUSER2", "syntax_query": "black mouse from Zowie, gaming, black finish",
         "typo_query": None},  # 'black' twice: frequency differs from the partner
    ],
    "B2": [
        {"asin": "B2", "uid": "AUSER1", "syntax_query": "a red pad for racing", "typo_query": "a red pad for racnig"},
    ],
}  # fmt: skip
META = [
    {"parent_asin": "B1", "title": "Zowie Gaming Mouse", "store": "Zowie",
     "details": {"Color": "Black", "Brand": "Zowie", "Style": "Gaming", "Material": "Plastic", "Size": "Medium"},
     "description": ["A medium black plastic mouse."]},  # the seller repeats its attributes: they are attested
]  # fmt: skip


@pytest.fixture
def release_dir(tmp_path: Path) -> Path:
    d = tmp_path / "release"
    d.mkdir()
    (d / "Video_Games.json").write_text(json.dumps(RELEASE))
    (tmp_path / "meta.jsonl").write_text("\n".join(json.dumps(m) for m in META) + "\nnot json\n")
    return d


def test_release_rows_recover_edits_and_pseudonymise(release_dir: Path) -> None:
    rows, counts = release_rows("video_games", RELEASE)
    assert counts == {"records": 3, "with_typo_query": 2, "typo_equals_query": 0, "covered_by_meta": 0}
    r = rows[0]
    assert r["pair_id"] == "video_games:B1" and r["user_id"] == pseudonymize("AUSER1")
    assert r["core_terms"] == [] and r["syntax"] is None
    assert [(e["original"], e["edited"]) for e in r["error_edits"]] == [("Zowie", "Zowei")]


def test_run_release_writes_configs_and_check_reports_findings(release_dir: Path, tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    out = run_release(
        "video_games", release_dir=release_dir, meta_path=tmp_path / "meta.jsonl", dataset_dir=ds
    )
    assert out["rows"] == 3 and out["corpus_documents"] == 1 and out["meta_read"]["malformed"] == 1
    assert pq.read_table(config_path(ds, "video_games-release")).num_rows == 3
    audit = out["core_term_audit"]
    assert audit["pairs"] == 1 and audit["pairs_violating_release_proxy"] == 1  # 'black' 1x vs 2x
    assert audit["error_rows_touching_meta_core_terms"] == 1  # Zowie -> Zowei
    rules = check_dataset(ds, ["video_games-release", "video_games-release-corpus"]).by_rule()
    # a typo on the brand is allowed since the error pairs were rebuilt on readability (docs/design.md §9)
    assert "protected_term_edited" not in rules and "protected_token_edited" not in rules
    assert rules["target_not_in_corpus"] == 1  # B2 has no meta record


def test_core_term_audit_without_meta(release_dir: Path) -> None:
    rows, _ = release_rows("video_games", RELEASE)
    audit = core_term_audit(rows)
    assert "pairs_with_meta_core_terms" not in audit and audit["error_rows"] == 2


@pytest.mark.slow
def test_real_release_imports_completely(tmp_path: Path) -> None:
    if not (settings.PQB_RELEASE_DIR / "Video_Games.json").exists():
        pytest.skip("the authors' release files are not available")
    out = run_release("video_games", dataset_dir=tmp_path)
    assert out["rows"] == 3084 and out["counts"]["with_typo_query"] == 2386
