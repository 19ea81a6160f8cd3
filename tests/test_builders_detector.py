"""The slip detector's rules on hand-picked review fragments, and its measurement on the dev and held-out
labelled sets."""

from __future__ import annotations

import functools
from collections import Counter

import pytest

from pqb.builders.nlp import load_spacy
from pqb.builders.reports.detector_eval import HELDOUT, LABELS, evaluate, load_labels, score, user_key
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
        ("I put it oneand it looked nice.", [("oneand", "one and")]),  # a frequent pair around "and"
        ("An online backup addon with realtime scans.", []),  # closed compounds people write as one
        ("The sequel was dumbed down.", []),  # dumb + ed, not a slip for "dumped"
        ("The new controler feels cheap.", [("controler", "controller")]),  # the stem's own derivation
        ("It was basicly fun.", [("basicly", "basically")]),
        ("The story was 90% ffx with no twist.", []),  # f -> a is no slip people make
        ("An opressed people rise.", [("opressed", "oppressed")]),  # the first letter is kept
        ("Todo correcto.", []),  # another language
        ("Tash, great wit and snark.", []),  # a short capitalised word is a name
        ("I went back to Intenet Security.", [("Intenet", "Internet")]),  # mid-sentence slip of a common word
        ("The baby was sleeping, zzzz.", []),  # lengthening of a lengthened word
    ],
)
def test_rules_on_review_fragments(text: str, want: list[tuple[str, str]]) -> None:
    assert flags(text) == want


def _well_formed(rows: list[dict]) -> None:
    for r in rows:
        assert r["fragment"][r["offset"] : r["offset"] + len(r["token"])] == r["token"]
        assert r["is_slip"] in (0, 1) and (r["kind"] in ("char", "merge", "apostrophe", "realword")) == bool(
            r["is_slip"]
        )


def test_labelled_set_is_large_varied_and_well_formed() -> None:
    header, rows = load_labels()
    assert "LLM-agent labelling" in header["_header"]
    assert len(rows) >= 3 * 92 and sum(r["source"].startswith("flagged") for r in rows) >= 190
    assert len({r["category"] for r in rows}) >= 2 and len({r["user"] for r in rows}) >= 100
    assert Counter(r["is_slip"] for r in rows)[1] >= 200
    _well_formed(rows)


def test_heldout_set_is_disjoint_from_dev_in_users_and_adds_categories() -> None:
    header, rows = load_labels(HELDOUT)
    _, dev = load_labels(LABELS)
    assert (
        header["heldout"] and "LLM-agent labelling" in header["_header"] and "HELD-OUT" in header["_header"]
    )
    assert header["users_disjoint_from"] == LABELS.name
    assert len(rows) >= 800 and Counter(r["is_slip"] for r in rows)[1] >= 50
    assert not {r["user"] for r in rows} & {r["user"] for r in dev}
    cats = {r["category"] for r in rows}
    assert len(cats) >= 2 and cats - {r["category"] for r in dev} and set(header["categories"]) == cats
    _well_formed(rows)


def test_evaluate_scores_only_the_sets_own_users(tmp_path) -> None:
    """Flags on a dev user's sentences are outside a held-out set's universe: neither scored nor counted
    as unlabelled; a held-out user's unlabelled flag is counted."""
    import json

    amazon, data = tmp_path / "amazon", tmp_path / "data"
    amazon.mkdir()
    data.mkdir()
    texts = {"dev-user": "The controler broke.", "new-user": "My controler broke. My keybord died."}
    (amazon / "Cat.jsonl").write_text(
        "".join(json.dumps({"user_id": u, "text": t}) + "\n" for u, t in texts.items())
    )
    (amazon / "meta_Cat.jsonl").write_text(json.dumps({"title": "A thing"}) + "\n")
    row = {"category": "Cat", "source": "flagged", "is_slip": 1, "kind": "char", "note": ""}
    (data / "dev.jsonl").write_text(
        json.dumps({"_header": "dev"}) + "\n"
        + json.dumps({**row, "user": user_key("dev-user"), "fragment": texts["dev-user"], "offset": 4, "token": "controler"})
        + "\n"
    )  # fmt: skip
    (data / "held.jsonl").write_text(
        json.dumps({"_header": "held-out", "users_disjoint_from": "dev.jsonl"}) + "\n"
        + json.dumps({**row, "user": user_key("new-user"), "fragment": "My controler broke.", "offset": 3, "token": "controler"})
        + "\n"
    )  # fmt: skip

    def every_long_word(sents, prods):
        class Flagger:
            def flags(self, doc):
                return [(t.i, t.text) for t in doc if len(t.text) >= 7]

        return Flagger()

    got = evaluate(amazon, every_long_word, labels_path=data / "held.jsonl")
    assert (got["flags_labelled"], got["true_positives"], got["flags_unlabelled"]) == (1, 1, 1)  # "keybord"
    dev = evaluate(amazon, every_long_word, labels_path=data / "dev.jsonl")
    assert (dev["flags_labelled"], dev["flags_unlabelled"]) == (1, 2)  # every user is the dev set's


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
    from pqb.builders.reports.detector_eval import quality

    committed = quality()
    assert committed is not None and committed["headline"] == "heldout"
    for name, path in (("heldout", HELDOUT), ("dev", LABELS)):
        got = evaluate(settings.PQB_AMAZON_DIR, labels_path=path)
        for k in ("precision", "recall_char", "recall_all", "flags_labelled", "flags_unlabelled"):
            assert got[k] == pytest.approx(committed[name][k]), (name, k)
