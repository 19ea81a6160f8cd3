"""The paper's published tables and the comparison of our measurements with them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pqb.dataset import settings
from pqb.harness.cli import main
from pqb.harness.reporting import paper

DATA = Path(__file__).parent / "data" / "leaderboard" / "results"


def test_packaged_tables_name_their_source() -> None:
    tables = paper.load_paper_tables()
    assert "PersonalQuery-Benchmark" in tables["source"]
    assert tables["syntactic_robustness"]["rows"][0] == ["BM25", 41.67, 28.22, 27.76, 22.54, 5.38]


def test_packaged_tables_equal_the_shared_transcription() -> None:
    shared = settings.PQB_PAPER_TABLES
    if not shared.exists():
        pytest.skip(f"shared paper tables not found at {shared}")
    reference = json.loads(shared.read_text(encoding="utf-8"))
    ours = paper.load_paper_tables()
    for key, value in reference.items():
        assert ours[key] == value, key


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("bm25", "bm25", None, None), ("BM25", "same system")),
        (("bge-m3", "bge-m3", "/models/BAAI/bge-m3", None), ("BGE-M3 Hybrid", "same system")),
        (("gte-base", "dense", "sentence-transformers/all-MiniLM-L6-v2", None), ("GTE-base", "stand-in (sentence-transformers/all-MiniLM-L6-v2)")),
        (("minilm", "dense", "x/all-MiniLM-L6-v2", "thenlper/gte-base"), ("GTE-base", "stand-in (x/all-MiniLM-L6-v2)")),
        (("dense", "dense", "x/unknown", None), None),
        (("bm25", "bm25", None, None, "b=0.1,k1=0.3"), ("BM25", "other settings (b=0.1,k1=0.3)")),
        (("bm25", "bm25", None, None, "rewriter=symspell"), ("BM25", "other settings (rewriter=symspell)")),
        (("bge-m3", "bge-m3", "/models/BAAI/bge-m3", None, "pretrained=/models/BAAI/bge-m3"), ("BGE-M3 Hybrid", "same system")),
    ],
)  # fmt: skip
def test_match_paper_system(args: tuple, expected: tuple | None) -> None:
    assert paper.match_paper_system(*args) == expected


def test_compare_paper_prints_our_models_beside_the_paper(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare-paper", str(DATA)]) == 0
    out = capsys.readouterr().out
    assert paper.load_paper_tables()["source"] in out
    bm25 = next(line for line in out.splitlines() if line.startswith("| bm25 | BM25 | same system"))
    groups = json.loads((DATA / "bm25" / "results_2026-01-12T10-00-00.000000.json").read_text())["groups"]
    ours = 100 * groups["syntactic"]["flip@1"]
    assert f"**{ours:.2f}** / 41.67 ({ours - 41.67:+.2f})" in bm25
    assert "| minilm | GTE-base | stand-in (sentence-transformers/all-MiniLM-L6-v2)" in out
    assert "Paper systems without a measured counterpart here: BGE-M3 Hybrid" in out
