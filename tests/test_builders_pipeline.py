"""``pqb-build all``: domain discovery, the embedded default, the summary, and (slow) a real rebuild that
must reproduce the committed ``pqb_dataset/`` parquet files byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders.cli import build_parser
from builders.pipeline import EMBEDDED_DEFAULT, BuildConfig, DomainResult, discover_domains, summary
from pqb_dataset import settings


def test_discover_domains_needs_reviews_and_meta(tmp_path: Path) -> None:
    for name in ("Video_Games.jsonl", "meta_Video_Games.jsonl", "Baby_Products.jsonl.gz",
                 "meta_Baby_Products.jsonl.gz", "Software.jsonl", "README.md"):  # fmt: skip
        (tmp_path / name).write_text("")
    assert discover_domains(tmp_path) == ["baby_products", "video_games"]
    with pytest.raises(FileNotFoundError, match="PQB_AMAZON_DIR"):
        discover_domains(tmp_path / "absent")


def test_no_arguments_means_all_with_the_embedded_default() -> None:
    args = build_parser().parse_args(["all"])
    assert args.link == EMBEDDED_DEFAULT.link == "any"
    assert args.threshold_kind == "heldout" and args.threshold_q == 0.95
    assert args.backend == "realizer" and args.n == 50 and args.max_pairs_tried == 1
    assert BuildConfig().link == "reviewers"  # the paper's setting stays the library default


def test_summary_reports_counts_gates_and_skips() -> None:
    ok = DomainResult("video_games")
    ok.stats = {
        "ingest": {"products": 10, "targets": 4, "reviews": 50},
        "generate": {"gates": {"generated": 200, "kept": 150, "rejected_lexical": 50,
                               "products_without_valid_candidates": 1}},
        "pair": {"rows": 4, "counts": {"paired": 2, "error_pairs": 3, "fail_no_candidates": 1,
                                       "fail_one_user": 1, "inject_ok": 3, "inject_no_profile": 1}},
    }  # fmt: skip
    ok.seconds = {"ingest": 0.1}
    skipped = DomainResult("software", note="no target products")
    text = summary([ok, skipped], 1.0)
    assert "4 rows = 2 syntactic pairs, 3 error pairs" in text
    assert "{'no_candidates': 1, 'one_user': 1}" in text and "lexical=50" in text
    assert "software (Software): skipped: no target products" in text


@pytest.mark.slow
def test_real_slice_rebuild_reproduces_the_committed_dataset(tmp_path: Path) -> None:
    """One full offline build of the embedded default (minutes on 2 cores) into a temp dir."""
    from builders.pipeline import build

    committed = settings.REPO_ROOT / "pqb_dataset" / "data"
    if not settings.PQB_AMAZON_DIR.is_dir() or not committed.is_dir():
        pytest.skip("needs ../shared/data/amazon2023-mini and a committed pqb_dataset/")
    results = build(None, work=tmp_path / "work", dataset_dir=tmp_path / "ds", progress=False)
    assert any(r.rows for r in results)
    ours = {
        p.relative_to(tmp_path / "ds" / "data"): p.read_bytes()
        for p in (tmp_path / "ds" / "data").rglob("*.parquet")
    }
    theirs = {
        p.relative_to(committed): p.read_bytes()
        for p in committed.rglob("*.parquet")
        if "-release" not in str(p)
    }
    assert ours.keys() == theirs.keys()
    assert [str(k) for k in ours if ours[k] != theirs[k]] == []
    assert (tmp_path / "ds" / "README.md").read_text() == (committed.parent / "README.md").read_text()
