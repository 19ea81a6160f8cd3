"""The slip detector's rules on hand-picked review fragments, and its measurement on the dev, held-out and
test labelled sets."""

from __future__ import annotations

import functools
import re
from collections import Counter

import pytest

from pqb.builders.errors import MissingInputError
from pqb.builders.nlp import load_spacy
from pqb.builders.reports.detector_eval import evaluate, score
from pqb.builders.reports.detector_labels import HELDOUT, LABELS, SETS, TEST, load_labels, user_key
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


def test_spanish_stays_another_language_when_the_domain_lexicon_holds_its_common_words() -> None:
    """Where many users write Spanish, "que", "bien", "producto" enter the domain lexicon; the sentence is
    still another language, not English with slips ("pasar" -> "paar", "forma" -> "form")."""
    det = SymSpellCorrector(
        extra_words={"que", "bien", "para", "producto", "varias", "veces"}, nlp=load_spacy()
    )
    doc = det.nlp.make_doc("Toca pasar el producto varias veces para que marque bien la forma.")
    assert det.flags(doc) == []
    assert det.flags(det.nlp.make_doc("The new controler feels cheap.")) == [(2, "controller")]


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


def test_test_set_is_large_and_disjoint_from_both_earlier_sets() -> None:
    """The headline set: at least three times the first labelled set's 92 flags in slips, two categories
    outside the slice, many users, none of them in the dev or held-out sets."""
    header, rows = load_labels(TEST)
    assert (
        header["heldout"] and "LLM-agent labelling" in header["_header"] and "TEST set" in header["_header"]
    )
    assert header["users_disjoint_from"] == [LABELS.name, HELDOUT.name]
    slips = Counter(r["kind"] for r in rows if r["is_slip"])
    assert len(rows) >= 3000 and sum(slips.values()) >= 3 * 92 and slips["char"] >= 3 * 92
    earlier = {r["user"] for p in (LABELS, HELDOUT) for r in load_labels(p)[1]}
    assert not {r["user"] for r in rows} & earlier and len({r["user"] for r in rows}) >= 1000
    assert set(header["categories"]) == {r["category"] for r in rows} and len(header["categories"]) >= 2
    assert sum(r["source"] == "fully_read" for r in rows) >= header["fully_read_sentences"]
    _well_formed(rows)


def test_test_set_sources_drop_earlier_users_slice_texts_and_repeats(tmp_path, monkeypatch) -> None:
    """A review is kept once, and only when neither its user nor its text is one the earlier sets saw; the
    universe holds out-of-dictionary tokens by class and every word of the fully read sentences."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from pqb.builders.reports import detector_sets

    slice_dir, data_dir = tmp_path / "slice", tmp_path / "samples"
    slice_dir.mkdir()
    data_dir.mkdir()
    (slice_dir / "Cat.jsonl").write_text(json.dumps({"user_id": "x", "text": "Already in the slice."}) + "\n")
    (slice_dir / "meta_Cat.jsonl").write_text(json.dumps({"title": "Brand Thing"}) + "\n")
    pq.write_table(
        pa.table({
            "reviewerID": ["new", "new", "seen", "other"],
            "reviewText": ["My keybord died today.", "My keybord died today.", "Its gone.", "Already in the slice."],
        }),
        data_dir / "e.parquet",
    )  # fmt: skip
    (data_dir / "p.json").write_text(
        json.dumps([{"id": "p1", "profile": [{"text": "Thier Dyson is grate."}]}])
    )
    monkeypatch.setattr(
        detector_sets,
        "SOURCES",
        {"E": {"files": ["e.parquet"], "products": ["Cat"]}, "P": {"files": ["p.json"], "products": ["Cat"]}},
    )
    seen = {user_key("seen")}
    assert detector_sets.source_reviews("E", data_dir, slice_dir, seen) == [("new", "My keybord died today.")]
    assert detector_sets.source_products("P", slice_dir) == [{"title": "Brand Thing"}]
    rows = detector_sets.candidates(data_dir, slice_dir, fully_read_per_category=0)
    assert [(r["category"], r["token"], r["source"]) for r in rows] == [
        ("E", "keybord", "lowercase_oov"),
        ("P", "Thier", "initial_capital_oov"),
    ]
    read = detector_sets.candidates(data_dir, slice_dir, fully_read_per_category=1)
    p_rows = [r for r in read if r["category"] == "P"]  # one user: their one sentence is read in full
    assert [r["token"] for r in p_rows] == ["Thier", "Dyson", "is", "grate"]
    assert {r["source"] for r in p_rows} == {"fully_read"}
    (data_dir / "e.parquet").unlink()
    with pytest.raises(MissingInputError, match=r"e\.parquet is missing"):
        detector_sets.source_reviews("E", data_dir, slice_dir, seen)


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

    class LongWordFixer:
        """Changes every word of 7+ letters (any back-end is scored by the words it changes)."""

        def correct(self, sentences):
            return [re.sub(r"\b(\w{7,})\b", r"\1x", s) for s in sentences]

    got = evaluate(amazon, lambda sents, prods: LongWordFixer(), labels_path=data / "held.jsonl")
    assert (got["flags_labelled"], got["true_positives"], got["flags_unlabelled"]) == (1, 1, 1)  # "keybord"
    dev = evaluate(amazon, lambda sents, prods: LongWordFixer(), labels_path=data / "dev.jsonl")
    assert (dev["flags_labelled"], dev["flags_unlabelled"]) == (1, 2)  # every user is the dev set's
    only = evaluate(
        amazon, lambda sents, prods: LongWordFixer(), labels_path=data / "held.jsonl", labelled_sentences=True
    )
    # the same precision and recall; "keybord" is in a sentence without a labelled token
    assert (only["flags_labelled"], only["precision"], only["flags_unlabelled"]) == (1, 1.0, 0)


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
    not (settings.PQB_AMAZON_DIR / "Video_Games.jsonl").is_file()
    or not (settings.PQB_AMAZON_DIR.parent / "amazon2023").is_dir(),
    reason="amazon2023-mini or amazon2023 absent",
)
def test_measured_quality_matches_the_committed_numbers() -> None:
    from pqb.builders.reports.detector_eval import quality

    committed = quality()
    assert committed is not None and committed["headline"] == "test"
    for name, path in SETS.items():
        got = evaluate(settings.PQB_AMAZON_DIR, labels_path=path)
        for k in ("precision", "recall_char", "recall_all", "flags_labelled", "flags_unlabelled"):
            assert got[k] == pytest.approx(committed[name][k]), (name, k)


def test_detector_quality_command_prints_every_set_and_writes_only_all_of_them(
    tmp_path, monkeypatch, capsys
) -> None:
    """``pqb-build detector-quality`` scores the real detector on the named sets; the quality file (which
    must hold every set) is written only when all of them were scored."""
    import json

    from pqb.builders.cli import main
    from pqb.builders.reports import detector_eval

    amazon = tmp_path / "amazon"
    amazon.mkdir()
    (amazon / "Cat.jsonl").write_text(json.dumps({"user_id": "u", "text": "My new controler broke."}) + "\n")
    (amazon / "meta_Cat.jsonl").write_text(json.dumps({"title": "A thing"}) + "\n")
    row = {"category": "Cat", "user": user_key("u"), "source": "lowercase_oov", "note": ""}
    labels = tmp_path / "set.jsonl"
    labels.write_text(
        json.dumps({"_header": "tiny"}) + "\n"
        + json.dumps({**row, "fragment": "My new controler broke.", "offset": 7, "token": "controler",
                      "is_slip": 1, "kind": "char"}) + "\n"
    )  # fmt: skip
    quality = tmp_path / "quality.json"
    monkeypatch.setattr(detector_eval, "SETS", {"test": labels, "dev": labels})
    monkeypatch.setattr(detector_eval, "QUALITY_FILE", quality)
    assert main(["detector-quality", "--amazon-dir", str(amazon), "--set", "test"]) == 0
    out = capsys.readouterr().out
    assert "| test | 1 | 1 | 1 | 1 | 100.0% | 100.0% | 100.0% | 0 |" in out and "not written" in out
    assert not quality.exists()
    assert main(["detector-quality", "--amazon-dir", str(amazon)]) == 0
    assert set(json.loads(quality.read_text())) == {"headline", "test", "dev"}
    quality.unlink()
    assert (
        main(["detector-quality", "--amazon-dir", str(amazon), "--corrector", "quire", "--device", "cuda"])
        == 2
    )
    assert "--device applies to a gector or seq2seq model" in capsys.readouterr().out


@pytest.mark.neural
def test_detector_quality_scores_any_backend_without_touching_the_quoted_file(
    tmp_path, monkeypatch, capsys
) -> None:
    """``--corrector seq2seq:<path>`` runs a model back-end through the same scoring; its figures go to
    ``--output``, never into the file the card quotes."""
    import json

    pytest.importorskip("torch")
    from tiny_models import tiny_seq2seq

    from pqb.builders.cli import main
    from pqb.builders.reports import detector_eval

    amazon = tmp_path / "amazon"
    amazon.mkdir()
    (amazon / "Cat.jsonl").write_text(json.dumps({"user_id": "u", "text": "My new controler broke."}) + "\n")
    (amazon / "meta_Cat.jsonl").write_text(json.dumps({"title": "A thing"}) + "\n")
    labels = tmp_path / "set.jsonl"
    labels.write_text(
        json.dumps({"_header": "tiny"}) + "\n"
        + json.dumps({"category": "Cat", "user": user_key("u"), "source": "lowercase_oov", "note": "",
                      "fragment": "My new controler broke.", "offset": 7, "token": "controler",
                      "is_slip": 1, "kind": "char"}) + "\n"
    )  # fmt: skip
    quality = tmp_path / "quality.json"
    monkeypatch.setattr(detector_eval, "SETS", {"test": labels})
    monkeypatch.setattr(detector_eval, "QUALITY_FILE", quality)
    model = tiny_seq2seq(tmp_path / "model")  # writes nothing: every word is deleted
    args = ["detector-quality", "--amazon-dir", str(amazon), "--corrector", f"seq2seq:{model}"]
    assert main([*args, "--output", str(tmp_path / "out.json")]) == 0
    out = capsys.readouterr().out
    assert f"corrector: seq2seq:{model}" in out and "not written" in out and not quality.exists()
    got = json.loads((tmp_path / "out.json").read_text())["test"]
    assert got["corrector"] == f"seq2seq:{model}" and got["recall_char"] == 1.0


@pytest.mark.slow
@pytest.mark.skipif(
    not (settings.PQB_AMAZON_DIR.parent / "amazon2023").is_dir(), reason="amazon2023 samples absent"
)
def test_test_set_universe_rebuilds_from_the_samples() -> None:
    """The committed test set holds exactly the universe ``candidates`` lists, row for row."""
    from pqb.builders.reports.detector_sets import candidates

    rows = candidates(settings.PQB_AMAZON_DIR.parent / "amazon2023", settings.PQB_AMAZON_DIR)
    _, labelled = load_labels(TEST)

    def key(r: dict) -> tuple:
        return r["category"], r["user"], r["fragment"], r["offset"], r["token"], r["source"]

    assert [key(r) for r in rows] == [key(r) for r in labelled]
