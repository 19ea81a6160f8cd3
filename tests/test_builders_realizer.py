"""The compositional realizer: every role occurs, every core term once, hundreds of skeletons, habits."""

from __future__ import annotations

import random
import re

import pytest

from pqb.builders.queries.candidate import ProductSpec
from pqb.builders.queries.filters import lexical_ok
from pqb.builders.queries.realizer import (
    OPENERS,
    ROLES,
    Part,
    RealizerGenerator,
    realize,
    skeleton,
)
from pqb.builders.queries.surface import SurfaceHabits, apply_habits

SPEC = ProductSpec(  # B07ST9BST9 of the slice, as products.py selects and types it
    asin="B07ST9BST9",
    title="Olimoxi Wireless Switch Pro Controller",
    core=(
        ("Brand", "Olimoxi"),
        ("Color", "Black"),
        ("Compatible Devices", "PC"),
        ("Connectivity Technology", "Wireless"),
        ("Controller Type", "Gamepad"),
    ),
    kinds=("brand", "color", "platform", "adj_feature", "product"),
)
ODD = ProductSpec(  # unnamed attributes and values that start with a vowel
    asin="B000TEST02",
    title="x",
    core=(("", "Ergonomic"), ("Style", "Arcade"), ("Material", "Aluminum"), ("Language", "English"),
          ("Size", "Large")),
)  # fmt: skip
PREPOSITIONS = {"by", "from", "in", "for", "with", "of", "featuring", "rated", "color", "made", "compatible",
                "size"}  # fmt: skip
NO_HABITS = SurfaceHabits(0, 0, 0, 0, 0, 0, 0)


def _sentence_of(text: str, value: str) -> str:
    i = text.lower().index(value.lower())
    start = max(
        text.rfind(". ", 0, i), text.rfind("? ", 0, i), text.rfind("; ", 0, i), text.rfind(" - ", 0, i)
    )
    ends = [j for j in (text.find(". ", i), text.find("? ", i)) if j >= 0]
    return text[start + 1 : min(ends) + 1 if ends else len(text)].strip(" -;")


def test_each_syntactic_role_is_produced_and_reads_as_that_role() -> None:
    parts = [Part(k, v, n) for k, (n, v) in zip(SPEC.kinds, SPEC.core, strict=True)]
    rng = random.Random(0)
    seen: dict[str, int] = dict.fromkeys(ROLES, 0)
    for _ in range(400):
        r = realize(parts, rng, ["controller"])
        assert lexical_ok(r.text, SPEC.core_terms), r.text
        for value, roles in r.roles.items():
            sent = _sentence_of(r.text, value)
            before = re.findall(r"[\w']+", r.text[: r.text.lower().index(value.lower())].lower())
            for role in roles:
                seen[role] += 1
                if role == "pp":
                    assert before and before[-1] in PREPOSITIONS | {"the", "a", "an"}, (value, r.text)
                elif role == "relative":
                    assert re.search(r"\b(that|which|that's)\b", sent.lower()), (value, r.text)
                elif role == "question":
                    assert sent.endswith("?"), (value, sent, r.text)
                elif role == "premodifier":
                    assert not before or before[-1] not in {"by", "from", "with", "for"}, (value, r.text)
    assert all(seen[role] > 0 for role in ROLES), seen


@pytest.mark.parametrize("spec", [SPEC, ODD])
def test_every_candidate_holds_each_core_term_exactly_once(spec: ProductSpec) -> None:
    cands = RealizerGenerator().generate(spec, n=300, seed=3)
    assert len(cands) == 300
    assert [c.text for c in cands if not lexical_ok(c.text, spec.core_terms)] == []
    assert {c.frame for c in cands} >= set(OPENERS)  # every opener occurs


def test_hundreds_of_distinct_skeletons() -> None:
    cands = RealizerGenerator().generate(SPEC, n=300, seed=0)
    skeletons = {skeleton(c.text, SPEC.core_terms) for c in cands}
    assert len(skeletons) >= 250
    assert skeleton("I want a Black Olimoxi pad.", ["black", "Olimoxi"]) == "i want a <T> <T> pad."


def test_articles_agree() -> None:
    cands = RealizerGenerator().generate(SPEC, n=300, seed=4)
    assert not [
        c.text
        for c in cands
        if re.search(r"\ban (one|usb)\b|\ba (?!one|uni|use|usb|eu)[aeiou]", c.text, re.I)
    ]


def test_the_generic_head_one_takes_no_bare_article() -> None:
    texts = [c.text for seed in range(3) for c in RealizerGenerator().generate(SPEC, n=300, seed=seed)]
    assert any(re.search(r"\bone\b", t) for t in texts)
    assert not [t for t in texts if re.search(r"\b(a|some) one\b", t, re.I)]  # "a black one", never "a one"


def test_same_seed_same_candidates_and_different_seed_differs() -> None:
    gen = RealizerGenerator()
    a = gen.generate(SPEC, 50, seed=1)
    assert a == gen.generate(SPEC, 50, seed=1)
    assert a != gen.generate(SPEC, 50, seed=2)
    assert len({c.text for c in a}) == 50


def test_habits_follow_their_rates_and_spare_core_terms() -> None:
    rng = random.Random(5)
    text = "I'm looking for a Black pad that's by Olimoxi."
    assert apply_habits(text, ["Black", "Olimoxi"], NO_HABITS, rng) == text
    lower = [apply_habits(text, ["Black"], SurfaceHabits(1, 1, 0, 0, 0, 0, 0), rng) for _ in range(3)]
    assert set(lower) == {text.lower()}
    expanded = apply_habits(text, ["Black"], SurfaceHabits(0, 0, 0, 0, 1, 0, 0), rng)
    assert expanded == "I am looking for a Black pad that is by Olimoxi."
    bare = apply_habits(text, ["Black"], SurfaceHabits(0, 0, 0, 0, 0, 1, 1), rng)
    assert bare == "im looking for a Black pad thats by Olimoxi."
    # a contraction inside a core term is never expanded
    assert "Assassin's Creed" in apply_habits(
        "It's Assassin's Creed.", ["Assassin's Creed"], SurfaceHabits(0, 0, 0, 0, 1, 0, 0), rng
    )
    n = 4000
    dropped = sum(
        apply_habits(text, [], SurfaceHabits(0, 0, 0.3, 0.1, 0, 0, 0), rng)[-1:] not in ".!" for _ in range(n)
    )
    assert abs(dropped / n - 0.3) < 0.03


def test_habit_rates_are_measured_from_reviews() -> None:
    texts = ["great game!", "I'm happy. It is fine.", "dont buy this", "Works as expected."]
    h = SurfaceHabits.measure(texts)
    assert h.n_texts == 4 and h.all_lower == 0.5 and h.exclaim == 0.25
    assert h.no_final_punct == 0.25 and h.no_apostrophe == 0.5
    assert SurfaceHabits.measure([]) == SurfaceHabits()
