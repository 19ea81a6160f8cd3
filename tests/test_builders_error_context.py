"""Context signatures and hierarchical smoothing (pqb.builders.writing_errors.context)."""

from __future__ import annotations

import pytest

from pqb.builders.nlp import load_spacy
from pqb.builders.writing_errors.context import (
    BACKOFF_LEVELS,
    RATE_CHAIN,
    Smoothing,
    add_token,
    context_rate,
    doc_signatures,
    global_rate,
    new_counts,
)


@pytest.fixture(scope="module")
def nlp():
    return load_spacy()


def test_signatures_have_every_level(nlp) -> None:
    doc = nlp("The controller that I bought works well.")
    sigs = doc_signatures(doc)
    assert len(sigs) == len(doc)
    assert all(set(s) == set(BACKOFF_LEVELS) for s in sigs)
    bought = sigs[4]
    assert bought["clause"] == "relcl|VERB"  # inside the relative clause
    assert bought["coarse"] == "VERB|relcl"
    root = next(t.i for t in doc if t.dep_ == "ROOT")
    assert sigs[root]["depth"].startswith("d0|") and sigs[root]["clause"].startswith("ROOT|")
    assert sigs[0]["sibling"].startswith("DET|-|")  # no left sibling


SIG = {lvl: f"{lvl}-a" for lvl in RATE_CHAIN}
OTHER = {lvl: f"{lvl}-b" for lvl in RATE_CHAIN}


def _counts(rows: list[tuple[dict, bool]]) -> dict:
    c = new_counts()
    for s, err in rows:
        add_token(c, s, err)
    return c


def test_shrinkage_order_context_user_global() -> None:
    sm = Smoothing(user_tokens=100, context_tokens=10, global_context_tokens=100)
    # global: 1,000 tokens, 10 slips, all in context a
    glob = _counts([(SIG, i < 10) for i in range(500)] + [(OTHER, False)] * 500)
    p0 = global_rate(glob)
    assert p0 == pytest.approx(0.01)
    # a user who never slipped: below the global rate, never the authors' 0.5
    clean = _counts([(SIG, False)] * 50)
    assert context_rate(glob, clean, SIG, sm) < context_rate(glob, None, SIG, sm)
    # a user who slipped a lot in context a: above the global rate there, still a probability
    sloppy = _counts([(SIG, i < 5) for i in range(20)])
    r = context_rate(glob, sloppy, SIG, sm)
    assert context_rate(glob, None, SIG, sm) < r < 0.5
    # a context the user never used falls back to user rate x global context lift
    assert context_rate(glob, sloppy, OTHER, sm) < r
    # an unprofiled user is the global model
    assert context_rate(glob, None, OTHER, sm) < p0 < context_rate(glob, None, SIG, sm)


def test_smoothing_round_trips() -> None:
    sm = Smoothing(user_tokens=7)
    assert Smoothing.from_dict(sm.to_dict()) == sm


def test_docs_rebuilt_from_cached_parses_equal_the_annotators_docs() -> None:
    """The errors stage rebuilds unchanged sentences' docs from their standalone parses: same tokens,
    POS, labels, heads and signatures as the annotator's pipeline, and the same ERRANT edits."""
    from pqb.builders.parses import ParseCache, parse_texts
    from pqb.builders.writing_errors.profiles import _annotator, recover_edits

    texts = ["I bougth this for my son and he loves it.", "Works great , no complaints.",
             "The controler stopped working after two weeks!", "Its ok.  Not great. Would buy again",
             "  Fast shipping\tand well packed :)"]  # fmt: skip
    corrected = [texts[0].replace("bougth", "bought"), texts[1],
                 texts[2].replace("controler", "controller"), texts[3], texts[4]]  # fmt: skip
    annotator = _annotator()
    docs_a, edits_a = recover_edits(texts, corrected, annotator)
    docs_b, edits_b = recover_edits(
        texts, corrected, annotator, parses=parse_texts(texts, cache=ParseCache(None))
    )

    def tokens(doc):
        return [(t.text, t.idx, t.whitespace_, t.is_alpha, t.pos_, t.dep_, t.head.i) for t in doc]

    assert [tokens(d) for d in docs_b] == [tokens(d) for d in docs_a]
    assert [doc_signatures(d) for d in docs_b] == [doc_signatures(d) for d in docs_a]
    assert edits_b == edits_a
    assert [len(e) for e in edits_a] == [1, 0, 1, 0, 0]
    assert docs_b[0][1].lemma_ == docs_a[0][1].lemma_  # a changed sentence keeps the annotator's own doc
