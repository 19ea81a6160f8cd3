"""Mechanism classification and string diffing (pqb.builders.writing_errors.mechanisms)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pqb.builders.writing_errors.mechanisms import (
    OTHER,
    QWERTY_NEIGHBOURS,
    classify,
    diff_edits,
    is_adjacent_key,
)
from pqb.dataset.schema import apply_edits

# FIXTURES: (written, intended, mechanism); written = what the user typed.
PAIRS = [
    ("gsme", "game", "keyboard_adjacent"),  # s is next to a
    ("controllet", "controller", "keyboard_adjacent"),  # t next to r
    ("gxme", "game", "substitution"),  # x is far from a
    ("grjat", "great", "substitution"),  # j is far from e
    ("teh", "the", "transposition"),
    ("recieve", "receive", "transposition"),
    ("gamme", "game", "repetition"),
    ("realy", "really", "deletion"),
    ("controler", "controller", "deletion"),
    ("gaxme", "game", "insertion"),
    ("their", "there", "homophone"),
    ("to", "too", "homophone"),
    ("Game", "game", "case"),
    ("NINTENDO", "Nintendo", "case"),
    ("dont", "don't", "apostrophe"),
    ("its", "it's", "apostrophe"),  # the apostrophe rule is checked before homophones
    ("thats", "that's", "apostrophe"),
]


@pytest.mark.parametrize(("written", "intended", "mechanism"), PAIRS)
def test_classify_every_mechanism(written: str, intended: str, mechanism: str) -> None:
    assert classify(written, intended) == mechanism


def test_every_mechanism_is_covered() -> None:
    """Every mechanism the detector names; ``two_letter`` is injected only (the detector, and so
    ``classify``, reads single-letter slips)."""
    from pqb.dataset.schema import MECHANISMS, MULTI_LETTER_MECHANISMS

    assert {m for _, _, m in PAIRS} == set(MECHANISMS) - set(MULTI_LETTER_MECHANISMS)
    assert classify("maintance", "maintenance") is None


@pytest.mark.parametrize(
    ("written", "intended"),
    [("game", "game"), ("dog", "cat"), ("playstation", "xbox"), ("tteh", "the"), ("", "a")],
)
def test_not_character_level(written: str, intended: str) -> None:
    assert classify(written, intended) is None


def test_repetition_needs_an_identical_neighbour() -> None:
    assert classify("gaame", "game") == "repetition"
    assert classify("gaqme", "game") == "insertion"


def test_qwerty_table_is_symmetric() -> None:
    for a, ns in QWERTY_NEIGHBOURS.items():
        for b in ns:
            assert a in QWERTY_NEIGHBOURS[b]
    assert is_adjacent_key("s", "A") and not is_adjacent_key("s", "p")


def test_diff_edits_offsets_and_mechanisms() -> None:
    clean = "I'm after a video game from Square Enix that's mature."
    edited = "I'm afer a vdeo gmae from Square Enix thats mature."
    edits = diff_edits(clean, edited)
    assert [(e["original"], e["edited"], e["mechanism"]) for e in edits] == [
        ("after", "afer", "deletion"),
        ("video", "vdeo", "deletion"),
        ("game", "gmae", "transposition"),
        ("that's", "thats", "apostrophe"),
    ]
    assert all(clean[e["start"] : e["end"]] == e["original"] for e in edits)
    assert apply_edits(clean, edits) == edited


def test_diff_edits_merged_words_are_one_edit() -> None:
    edits = diff_edits("a video game here", "a videogame here")
    assert len(edits) == 1 and edits[0]["original"] == "video game"
    assert diff_edits("same text", "same text") == []
    assert diff_edits("x y", "x y z")[0]["mechanism"] == OTHER


TEXT = st.text(alphabet="abcde '.,-", max_size=30)


@settings(max_examples=300, deadline=None)
@given(TEXT, TEXT)
def test_diff_edits_round_trips_with_apply_edits(clean: str, edited: str) -> None:
    assert apply_edits(clean, diff_edits(clean, edited)) == edited
