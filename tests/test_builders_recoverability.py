"""Recoverability of injected typos (issue 12) and the Dirichlet shrinkage of profiles (mechanism, dose,
position in the word), by hand."""

from __future__ import annotations

import functools

import pytest

from pqb.builders.writing_errors.profiles import ErrorProfiles, dirichlet_shrink, empty_counts
from pqb.builders.writing_errors.recoverability import DomainCorrector, corpus_word_counts


@functools.lru_cache(maxsize=1)
def corrector() -> DomainCorrector:
    return DomainCorrector(corpus_word_counts(["Lactose-free whey protein by Razer", "lactose free milk"]))


def test_a_transposed_attribute_word_is_recoverable() -> None:
    # the seed example "lactose-free" -> "lacseto-free" is 4 Damerau-Levenshtein edits away
    # (t,o,s,e -> s,e,t,o), beyond the rule's distance 2, so it fails on distance; one swap passes
    c = corrector()
    assert c.verdict("lactose", "lacseto").reason == "distance"
    assert c.verdict("lactose", "lactsoe").ok
    assert c.verdict("lactose", "lactoes").ok
    assert c.verdict("controller", "controler").ok


def test_an_edit_that_yields_another_real_word_fails() -> None:
    c = corrector()
    v = c.verdict("from", "form")
    assert not v.ok and v.reason == "real_word"
    assert c.verdict("lactose", "lactose").reason == "unchanged"


def test_an_ambiguous_or_wrong_best_correction_fails() -> None:
    c = corrector()
    v = c.verdict("item", "itme")  # "time" is as close and far more frequent
    assert not v.ok and v.reason == "not_best" and v.best == "time"
    v = c.verdict("by", "bu")  # "by" is best but "bu", "be", "buy"... rival it
    assert not v.ok and v.reason in ("ambiguous", "not_best")


def test_domain_words_become_correctable() -> None:
    plain = DomainCorrector()
    assert not plain.recoverable("razer", "razerr")  # unknown to the web dictionary
    assert corrector().recoverable("razer", "razerr")


def test_dirichlet_shrinkage_matches_a_hand_computation() -> None:
    prior = {"a": 0.5, "b": 0.3, "c": 0.2}
    got = dirichlet_shrink({"a": 1, "b": 3}, prior, 2.0)
    # (n_k + 2 * prior_k) / (4 + 2)
    assert got == pytest.approx({"a": (1 + 1.0) / 6, "b": (3 + 0.6) / 6, "c": (0 + 0.4) / 6})
    assert dirichlet_shrink({}, prior, 2.0) == pytest.approx(prior)
    assert sum(got.values()) == pytest.approx(1.0)


def test_profile_mechanism_and_dose_use_the_shrinkage() -> None:
    glob = empty_counts()
    glob["mechanisms"] = {"deletion": 6, "insertion": 2}
    glob["doses"] = {"1": 8, "2": 1, "3": 1}
    user = empty_counts()
    user["mechanisms"] = {"insertion": 2}
    user["doses"] = {"3": 2}
    prof = ErrorProfiles(glob=glob, users={"u": user})
    g = prof.global_mechanism_probs()  # add-0.5 over the 7 injectable mechanisms: total 8 + 3.5
    assert g["deletion"] == pytest.approx(6.5 / 11.5)
    m = prof.mechanism_probs("u")
    assert m["insertion"] == pytest.approx((2 + 2.0 * g["insertion"]) / (2 + 2.0))
    gd = prof.global_dose_probs()  # add-0.5 over 3 doses: total 10 + 1.5
    assert gd == pytest.approx({"1": 8.5 / 11.5, "2": 1.5 / 11.5, "3": 1.5 / 11.5})
    d = prof.dose_probs("u")
    assert d["3"] == pytest.approx((2 + 2.0 * gd["3"]) / (2 + 2.0))
    assert prof.dose_probs("stranger") == pytest.approx(gd)  # no hard fall-back: the same formula
    assert prof.evidence("u") == 0 and prof.evidence("stranger") == 0


def test_profile_position_uses_the_shrinkage() -> None:
    """Where in the word (first / interior / last): add-0.5 global, then Dirichlet strength 2 per user."""
    glob = empty_counts()
    glob["positions"] = {"first": 1, "interior": 7, "last": 2}
    user = empty_counts()
    user["positions"] = {"first": 3}
    prof = ErrorProfiles(glob=glob, users={"u": user})
    g = prof.global_position_probs()  # (n_k + 0.5) / (10 + 1.5)
    assert g == pytest.approx({"first": 1.5 / 11.5, "interior": 7.5 / 11.5, "last": 2.5 / 11.5})
    p = prof.position_probs("u")  # (n_k + 2 g_k) / (3 + 2)
    assert p == pytest.approx(
        {"first": (3 + 3 / 11.5) / 5, "interior": (15 / 11.5) / 5, "last": (5 / 11.5) / 5}
    )
    assert p["first"] == pytest.approx(0.6521739, abs=1e-6)  # 3.26087 / 5, written out
    assert sum(p.values()) == pytest.approx(1.0)
    assert prof.position_probs("stranger") == pytest.approx(g)  # no own slips: the population's
