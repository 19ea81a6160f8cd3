"""The deterministic naturalness check (issue 43): what it flags, what it passes, and that it reads only
the published text and attribute names, never the realizer's own labels."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pqb.builders.reports.query_checks import SAMPLE, check_queries, count_questions, opening

ROOT = Path(__file__).resolve().parents[1]


def row(query: str, attrs: list[tuple[str, str]]) -> dict:
    return {
        "query": query,
        "core_terms": [v for _, v in attrs],
        "attributes": [{"name": n, "value": v} for n, v in attrs],
    }


ISSUE = [  # the issue's three typical queries, verbatim, with their rows' attributes
    row(
        "Any Short vowels Video Game rated Everyone? Would it be made by Playlogic International? "
        "Any featuring Introduces?",
        [("Brand", "Playlogic International"), ("Type of item", "Video Game"), ("Rated", "Everyone"),
         ("Feature 1", "Introduces"), ("Feature 2", "Short vowels")],
    ),
    row(
        "What is a good Game Console product offering Scratch Resistant, by MIGHTY SKINS, offering Ocean, "
        "and featuring Wireless?",
        [("Brand", "MIGHTY SKINS"), ("Compatible Devices", "Game Console"), ("Special Feature", "Scratch Resistant"),
         ("Theme", "Ocean"), ("Other display features", "Wireless")],
    ),
    row(
        "I want an Electronic Arts one. Is there one with With in-game success? Is it rated Teen?",
        [("Brand", "Electronic Arts"), ("Rated", "Teen"), ("Feature 3", "With in-game success")],
    ),
]  # fmt: skip
NATURAL = [  # what the kind-aware frames write
    row(
        "I'm looking for a Scratch Resistant Black skin made of Vinyl, by MIGHTY SKINS, with a Space design.",
        [("Special Feature", "Scratch Resistant"), ("Color", "Black"), ("Material", "Vinyl"),
         ("Brand", "MIGHTY SKINS"), ("Theme", "Space")],
    ),
    row(
        "Do you have a Gamepad for PC that is Wireless? It should come from Olimoxi and be Black.",
        [("Controller Type", "Gamepad"), ("Hardware Platform", "PC"), ("Connectivity Technology", "Wireless"),
         ("Brand", "Olimoxi"), ("Color", "Black")],
    ),
    row(
        "need a Video Game rated Teen in English from Electronic Arts with Noise Cancellation",
        [("Type of item", "Video Game"), ("Rated", "Teen"), ("Language", "English"), ("Brand", "Electronic Arts"),
         ("Special Feature", "Noise Cancellation")],
    ),
]  # fmt: skip


def test_the_issue_queries_are_flagged() -> None:
    rep = check_queries(ISSUE, examples=5)
    assert rep.wrong_kind == 2  # "offering Scratch Resistant"/"offering Ocean"; "with With in-game success"
    assert rep.stacked == 2  # the first and third ask two or more questions
    notes = " ".join(rep.examples["wrong_kind"])
    assert "adjective after 'offering': 'Scratch Resistant'" in notes
    assert "design after 'offering': 'Ocean'" in notes and "fragment: 'With in-game success'" in notes
    assert rep.term_faults["fragment"] == 1  # "With in-game success"


def test_phrasings_that_fit_their_kind_pass() -> None:
    rep = check_queries(NATURAL)
    assert (rep.wrong_kind, rep.stacked, sum(rep.term_faults.values())) == (0, 0, 0), rep.examples


@pytest.mark.parametrize(
    ("query", "n"),
    [
        ("Do you have a black pad?", 1),
        ("Do you have a black pad? Is it by Sony?", 2),
        ("I need a black pad. Does it come with rumble", 1),  # its "?" dropped by a surface habit
        ("Do you have a black pad? Does it come with rumble", 2),
        ("I need a black pad - is it by Sony? It should be wired.", 1),
        ("Any in black? Any for PC? Any by Sony?", 3),
        ("I need a black pad.", 0),
        ("i need a pad in black", 0),
    ],
)
def test_questions_are_counted_by_sentence(query: str, n: int) -> None:
    assert count_questions(query) == n


def test_openings_are_counted_on_a_seeded_sample() -> None:
    rows = [row(f"{w} item {i}", []) for i, w in enumerate(["Show me", "Looking for", "Any"] * 100)]
    rep = check_queries(rows)
    assert rep.sample == SAMPLE and rep.openings == 3
    assert opening("I'm looking for X") == "i'm looking" and opening("  Any, black?") == "any black"
    assert check_queries(rows).as_dict() == rep.as_dict()  # seeded: the same every time


def test_the_checker_reads_no_generator_labels() -> None:
    """It judges the output text: it must not import the realizer, its kinds or the core-term typing."""
    tree = ast.parse((ROOT / "builders/reports/query_checks.py").read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {
        m
        for m in imported
        if m.startswith(("pqb.builders.queries", "pqb.builders.kinds", "pqb.builders.source"))
    }
