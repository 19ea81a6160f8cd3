"""A ten-item study pool written by hand for the annotation round trip (fixture texts, not data).

Its filled sheets are checked in under ``tests/data/study/`` (``filled_ann1.csv`` and ``filled_ann2.csv``
from the primary annotators, ``filled_ann3.csv`` from the adjudicator); item ids follow from the items
and the seed, so the sheets match the pool :func:`fixture_pool` draws.
"""

from __future__ import annotations

from pqb.builders.study.pool import Item, stratified

SEED = 0
DOMAIN = "video_games"


def _it(task: str, source: str, ref: str, text: str, **kw: str) -> Item:
    return Item(task=task, domain=DOMAIN, source=source, ref=ref, text=text, **kw)


SAMPLE_X = (
    "1. I love this controller.\n2. Works fine with my console, no complaints.\n3. Battery lasts all week."
)
SAMPLE_Y = "1. meh, broke after two days\n2. dont buy it\n3. the cable is way too short for my couch"

CANDIDATES = {
    DOMAIN: {
        ("syntactic", "pqb"): [
            _it("syntactic", "pqb", "q1", "Do you have a wireless controller by Nintendo rated Everyone?"),
            _it("syntactic", "pqb", "q2", "Any Short vowels Video Game rated Everyone? Any featuring Introduces?"),
        ],
        ("syntactic", "authors"): [_it("syntactic", "authors", "r1", "I'm looking for a mature CD-ROM from Acclaim.")],
        ("syntactic", "real"): [_it("syntactic", "real", "s1", "My son plays this game every day after school and still loves it.")],
        ("attribution", "pqb"): [
            _it("attribution", "pqb", "q1", "Do you have a wireless controller by Nintendo rated Everyone?",
                sample_a=SAMPLE_X, sample_b=SAMPLE_Y, truth="A"),
            _it("attribution", "pqb", "q3", "need a short cable for my switch dock",
                sample_a=SAMPLE_X, sample_b=SAMPLE_Y, truth="B"),
        ],
        ("attribution", "real"): [
            _it("attribution", "real", "s2", "honestly the worst headset ive owned", sample_a=SAMPLE_X, sample_b=SAMPLE_Y, truth="B"),
        ],
        ("error", "pqb"): [
            _it("error", "pqb", "q1", "Do you have a wirless controller by Nintendo rated Everyone?",
                clean_text="Do you have a wireless controller by Nintendo rated Everyone?", profile="dropped letters 60%"),
            _it("error", "pqb", "q2", "Any Short vowels Video Game rated Evreyone?",
                clean_text="Any Short vowels Video Game rated Everyone?", profile="swapped letters 50%"),
            _it("error", "pqb", "q4", "I want a Zelda gmae xq for Switch",
                clean_text="I want a Zelda game for Switch", profile="dropped letters 60%"),
        ],
    }
}  # fmt: skip


def fixture_pool() -> list[Item]:
    items, _ = stratified(CANDIDATES, 10, SEED)
    return items
