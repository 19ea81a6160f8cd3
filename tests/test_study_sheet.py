"""The human study end to end: export a blinded sheet, import filled sheets (a checked-in fixture),
adjudicate, and check the §06 numbers against values computed by hand."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from study_fixture import CANDIDATES, SEED, fixture_pool

from pqb.builders.cli import main
from pqb.builders.study.pool import _allocate, stratified
from pqb.builders.study.sheet import SHEET_COLUMNS, export_sheet, load_key, read_filled

DATA = Path(__file__).parent / "data" / "study"
FILLED = [DATA / "filled_ann1.csv", DATA / "filled_ann2.csv"]
ADJUDICATOR = DATA / "filled_ann3.csv"


@pytest.fixture
def key_path(tmp_path: Path) -> Path:
    export_sheet(fixture_pool(), tmp_path / "sheet", tmp_path / "key.json", {"seed": SEED})
    return tmp_path / "key.json"


def test_sheet_is_blinded_and_self_contained(key_path: Path) -> None:
    sheet = key_path.parent / "sheet"
    rows = list(csv.DictReader((sheet / "sheet.csv").open(encoding="utf-8")))
    assert tuple(rows[0]) == SHEET_COLUMNS
    assert not {"source", "truth", "ref", "condition"} & set(rows[0])
    assert all(re.fullmatch(r"it_[0-9a-f]{10}", r["item_id"]) for r in rows)
    assert all(
        not r[c] for r in rows for c in ("naturalness", "attribution", "error_consistency", "annotator")
    )
    # shuffled: the sheet's order is not the candidates' (task, source) order
    tasks = [r["task"] for r in rows]
    assert tasks != sorted(tasks, key=["syntactic", "attribution", "error"].index)
    page = (sheet / "form.html").read_text(encoding="utf-8")
    assert not re.search(r"https?://|src=|<link", page), "the form must load nothing from the network"
    assert all(r["item_id"] in page for r in rows)
    key = load_key(key_path)
    assert {it["source"] for it in key["items"]} == {"pqb", "authors", "real"}
    assert not (sheet / "key.json").exists()


def test_the_key_may_not_sit_in_the_sheet_folder(tmp_path: Path) -> None:
    from pqb.builders.errors import UsageError

    with pytest.raises(UsageError, match="must not sit in the sheet folder"):
        export_sheet(fixture_pool(), tmp_path / "s", tmp_path / "s" / "key.json", {})


def test_stratified_draw_is_seeded_and_fills_short_sources() -> None:
    assert _allocate(12, {"pqb": 100, "authors": 1, "real": 100}) == {"pqb": 6, "authors": 1, "real": 5}
    assert _allocate(12, {"pqb": 3, "authors": 0, "real": 2}) == {"pqb": 3, "authors": 0, "real": 2}
    a, alloc = stratified(CANDIDATES, 10, SEED)
    b, _ = stratified(CANDIDATES, 10, SEED)
    c, _ = stratified(CANDIDATES, 10, SEED + 1)
    assert [i.item_id for i in a] == [i.item_id for i in b]
    assert {i.item_id for i in a}.isdisjoint({i.item_id for i in c})  # ids depend on the seed
    assert alloc["video_games/attribution"]["by_source"]["pqb"]["drawn"] == 2  # authors' share moved over


def test_round_trip_means_agreement_and_adjudication(key_path: Path, tmp_path: Path, capsys) -> None:
    adj = tmp_path / "adjudication"
    assert (
        main(
            ["study", "adjudicate", "--key", str(key_path), "--sheets", *map(str, FILLED), "--out", str(adj)]
        )
        == 0
    )
    to_adjudicate = {r["item_id"] for r in csv.DictReader((adj / "sheet.csv").open(encoding="utf-8"))}
    filled_adjudication = {r["item_id"] for r in csv.DictReader(ADJUDICATOR.open(encoding="utf-8"))}
    assert to_adjudicate == filled_adjudication and len(to_adjudicate) == 3
    out = tmp_path / "report"
    argv = ["study", "report", "--key", str(key_path), "--sheets", *map(str, FILLED),
            "--adjudication", str(ADJUDICATOR), "--out", str(out), "--n-boot", "200"]  # fmt: skip
    assert main(argv) == 0
    rep = json.loads((out / "study_report.json").read_text(encoding="utf-8"))["human"]
    pqb, authors, real = (rep["by_source"][s] for s in ("pqb", "authors", "real"))
    # naturalness: PQB items rated (4, 5) -> 4.5 and (2, 4) -> adjudicated 3 (median of 2, 4, 3)
    assert pqb["naturalness"]["value"] == pytest.approx(3.75)
    assert pqb["syntactic_quality"]["value"] == pytest.approx(3.5)
    assert authors["naturalness"]["value"] == 3 and real["naturalness"]["value"] == 5
    # attribution: one decisive and right (A = A), one adjudicated to "none"
    assert pqb["attribution"]["value"] == 1.0 and pqb["no_preference"]["value"] == 0.5
    assert real["attribution"]["value"] == 1.0 and real["no_preference"]["value"] == 0.0
    # error: strict, adjudicated acceptable, fail
    assert pqb["error_strict"]["value"] == pytest.approx(1 / 3)
    assert pqb["error_acceptable"]["value"] == pytest.approx(2 / 3)
    # nominal alpha by hand (coincidence matrix): values s,s | a,s | f,f -> n = 6, D_o = 2/6,
    # D_e = 2(3*1 + 3*2 + 1*2)/(6*5) = 22/30, alpha = 1 - (2/6)/(22/30) = 12/22; attribution the same shape
    for dim in ("error_consistency", "attribution"):
        assert rep["agreement"][dim]["alpha"] == pytest.approx(12 / 22)
        # kappa: p_o = 2/3, p_e = 1/3 -> 0.5
        assert rep["agreement"][dim]["kappa"]["mean"] == pytest.approx(0.5)
    assert rep["counts"]["naturalness"] == {"items": 4, "disagreements": 1, "adjudicated": 1}
    assert rep["counts"]["syntactic_quality"]["disagreements"] == 0
    assert rep["annotators"] == ["ann1", "ann2"] and rep["adjudicators"] == ["ann3"]
    md = (out / "study_report.md").read_text(encoding="utf-8")
    assert "| Naturalness (1–5) |" in md and "4.21" in md and "0.72" in md  # the paper's values beside
    assert "Rated by: human annotators ann1, ann2" in md and "| pqb Human |" in md
    # sheets filled by AI agents are named so, and their columns are never headed "Human"
    assert main([*argv, "--raters", "AI helper agents"]) == 0
    md = (out / "study_report.md").read_text(encoding="utf-8")
    assert "Rated by: AI helper agents ann1, ann2" in md and "| pqb Panel |" in md and "pqb Human" not in md
    assert (
        json.loads((out / "study_report.json").read_text(encoding="utf-8"))["human"]["raters"]
        == "AI helper agents"
    )


def test_bad_rows_are_counted_with_their_line_or_refused(key_path: Path, tmp_path: Path, capsys) -> None:
    rows = list(csv.DictReader(FILLED[0].open(encoding="utf-8")))
    syn = next(r for r in rows if r["task"] == "syntactic")
    bad = [
        {**syn, "naturalness": "7"},  # line 2: out of range
        {**syn, "item_id": "it_0000000000"},  # line 3: unknown
        {**syn, "attribution": "A"},  # line 4: a dimension this task does not ask (and a duplicate)
    ]
    path = tmp_path / "bad.csv"
    with path.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=SHEET_COLUMNS)
        w.writeheader()
        w.writerows(bad)
    got = read_filled([path], load_key(key_path))
    assert got.counts["bad_value"] == 1 and got.counts["unknown_item"] == 1 and got.counts["duplicate"] == 1
    assert any(p.startswith("bad.csv:2:") for p in got.problems)
    rc = main(
        [
            "study",
            "report",
            "--key",
            str(key_path),
            "--sheets",
            str(path),
            "--strict",
            "--out",
            str(tmp_path / "r"),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 1 and err.startswith("error: bad.csv:2:") and err.count("\n") == 1


def test_report_without_the_study_extra_is_one_line(key_path: Path, monkeypatch, capsys) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "krippendorff" else real(n, *a)
    )
    rc = main(["study", "report", "--key", str(key_path), "--sheets", str(FILLED[0])])
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and line == (
        'error: pqb-build study needs pqb-benchmark[study], not installed here; install it with: pip install "pqb-benchmark[study]"'
    )


def test_a_baseline_build_is_a_source_of_its_own(tmp_path: Path) -> None:
    """``--baseline-dataset-path``: a second PQB build (the before of a before/after) is rated in the same
    blinded pool as source ``pqb_baseline``; without the path, asking for that source is one line."""
    from pqb.builders.errors import UsageError
    from pqb.builders.study.pool import UserWriting, domain_candidates, pqb_candidates

    rows = [
        {"id": "r1", "pair_id": "p1", "user_id": "u1", "asin": "A", "query": "a blue pad for PS4",
         "error_query": "a blue pda for PS4", "backoff": True},
        {"id": "r2", "pair_id": "p1", "user_id": "u2", "asin": "A", "query": "PS4 pad in blue", "error_query": None},
    ]  # fmt: skip
    cands = pqb_candidates("video_games", rows, {}, UserWriting.from_sentences([]), 0, source="pqb_baseline")
    assert {k for k in cands} == {("syntactic", "pqb_baseline"), ("error", "pqb_baseline")}
    assert {it.source for items in cands.values() for it in items} == {"pqb_baseline"}
    a, _ = stratified({"video_games": {**CANDIDATES["video_games"], **cands}}, 12, SEED)
    assert "pqb_baseline" in {it.source for it in a}
    with pytest.raises(UsageError, match="needs --baseline-dataset-path"):
        domain_candidates("video_games", sources=["pqb_baseline"], dataset_dir=None, release_dir=None,
                          amazon_dir=tmp_path, seed=0)  # fmt: skip
