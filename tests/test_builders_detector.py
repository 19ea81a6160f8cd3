"""The slip detector's rules on hand-picked review fragments, and its measurement on the labelled set."""

from __future__ import annotations

import functools
from collections import Counter

import pytest

from pqb.builders.nlp import load_spacy
from pqb.builders.reports.detector_eval import LABELS, load_labels, score
from pqb.builders.writing_errors.detection import SymSpellCorrector
from pqb.dataset import settings


@functools.lru_cache(maxsize=1)
def detector() -> SymSpellCorrector:
    return SymSpellCorrector(extra_words={"clicky", "keycaps"}, names={"helsing"}, nlp=load_spacy())


def flags(text: str) -> list[tuple[str, str]]:
    doc = detector().nlp.make_doc(text)
    return [(doc[i].text, fix) for i, fix in detector().flags(doc)]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("A lot of thrilling details abaout stalking!", [("abaout", "about")]),  # not "aba" + "out"
        ("The clicky keycaps feel great.", []),  # domain lexicon
        ("Althought there are some nice characters.", [("Althought", "Although")]),  # sentence-initial
        ("You take the role of Van Helsing, vampire hunter.", []),  # mid-sentence capitals are names
        ('I prefer this game over the "udraw".', []),  # a quoted word is mentioned, not used
        ("So I was reallly expecting a card.", [("reallly", "really")]),  # lengthening that hides a word
        ("It was sooo good.", []),  # expressive lengthening
        ("The game is so crashy and glitchy.", []),  # derived from a known stem
        ("PLEAE LET ME IN NOW.", [("PLEAE", "PLEASE")]),  # shouted sentence
        ("Lastly, you need alot of room.", [("alot", "a lot")]),  # merged words
    ],
)
def test_rules_on_review_fragments(text: str, want: list[tuple[str, str]]) -> None:
    assert flags(text) == want


def test_labelled_set_is_large_varied_and_well_formed() -> None:
    header, rows = load_labels()
    assert "LLM-agent labelling" in header["_header"]
    assert len(rows) >= 3 * 92 and sum(r["source"].startswith("flagged") for r in rows) >= 190
    assert len({r["category"] for r in rows}) >= 2 and len({r["user"] for r in rows}) >= 100
    assert Counter(r["is_slip"] for r in rows)[1] >= 200
    for r in rows:
        assert r["fragment"][r["offset"] : r["offset"] + len(r["token"])] == r["token"]
        assert r["is_slip"] in (0, 1) and (r["kind"] in ("char", "merge", "apostrophe", "realword")) == bool(
            r["is_slip"]
        )


def test_score_counts_precision_and_both_recalls() -> None:
    rows = [
        {"category": "c", "fragment": "f", "offset": i, "token": "t", "is_slip": s, "kind": k}
        for i, (s, k) in enumerate([(1, "char"), (1, "char"), (1, "merge"), (0, ""), (0, "")])
    ]
    got = score(rows, {("c", "f", 0), ("c", "f", 2), ("c", "f", 3)}, unlabelled=4)
    assert got["precision"] == pytest.approx(2 / 3) and got["recall_char"] == pytest.approx(1 / 2)
    assert got["recall_all"] == pytest.approx(2 / 3) and got["flags_unlabelled"] == 4


@pytest.mark.slow
@pytest.mark.skipif(
    not (settings.PQB_AMAZON_DIR / "Video_Games.jsonl").is_file(), reason="amazon2023-mini absent"
)
def test_measured_quality_matches_the_committed_numbers() -> None:
    from pqb.builders.reports.detector_eval import evaluate, quality

    got, committed = evaluate(settings.PQB_AMAZON_DIR, labels_path=LABELS), quality()
    assert committed is not None
    for k in ("precision", "recall_char", "recall_all", "flags_labelled"):
        assert got[k] == pytest.approx(committed[k]), k
