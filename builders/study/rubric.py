"""The study's tasks, dimensions and rating scales: one text for the annotators' form and the LLM judge.

Why one text: the paper compares an LLM column with a human column (§06); the comparison means
something only when both read the same question with the same scale anchors. The form shows these
words; the judge's prompts are built from them (:mod:`pqb.builders.study.judge`).

Three tasks (the paper's conditions):

* ``syntactic``: one shopping query (or, blinded among them, a real review sentence or an authors'
  query); rate its **naturalness** and its **syntactic quality**, 1-5.
* ``attribution``: one text and two writing samples (A, B) of two users; which user wrote it, or no
  preference. The true author is in the key, never on the sheet.
* ``error``: a query as the user would type it, beside the same query without errors, and the user's
  own writing and slip profile; are the errors consistent with this user (strict pass), acceptable as
  real typing slips (acceptable), or neither (fail)?
"""

from __future__ import annotations

from dataclasses import dataclass

HUMAN_RATERS = "human annotators"
"""Who filled the sheets unless ``study report --raters`` says otherwise (AI agents' sheets head a
"Panel" column, never "Human")."""

TASKS = ("syntactic", "attribution", "error")


@dataclass(frozen=True)
class Dimension:
    name: str
    task: str
    level: str  # "ordinal" (1-5) or "nominal"
    labels: tuple[str, ...]
    question: str
    anchors: tuple[str, ...]  # one line per label, in label order


DIMENSIONS: tuple[Dimension, ...] = (
    Dimension(
        "naturalness",
        "syntactic",
        "ordinal",
        ("1", "2", "3", "4", "5"),
        "How natural is this text as something a person would type or write when shopping online?",
        (
            "1 = not language: word salad, or a phrase no person would write",
            "2 = hard to read: several parts no person would write",
            "3 = understandable but clearly artificial in places",
            "4 = natural, with at most a slightly odd phrase",
            "5 = fully natural: a person could have typed exactly this",
        ),
    ),
    Dimension(
        "syntactic_quality",
        "syntactic",
        "ordinal",
        ("1", "2", "3", "4", "5"),
        "How well-formed is its grammar and structure (ignore spelling and capitalisation)?",
        (
            "1 = no usable structure",
            "2 = many grammatical errors (words in slots that do not fit them, broken clauses)",
            "3 = some grammatical errors, the structure still clear",
            "4 = grammatical, with at most one awkward construction",
            "5 = fully grammatical and well structured",
        ),
    ),
    Dimension(
        "attribution",
        "attribution",
        "nominal",
        ("A", "B", "none"),
        "Judging by syntax and style only (sentence structure, phrasing habits, punctuation, not the "
        "topic), which user wrote the text: A or B?",
        (
            "A = user A's writing style",
            "B = user B's writing style",
            "none = no preference: the text fits both or neither",
        ),
    ),
    Dimension(
        "error_consistency",
        "error",
        "nominal",
        ("strict", "acceptable", "fail"),
        "Compare the text with errors to the clean text. Are its errors consistent with this user's own "
        "writing and slip profile?",
        (
            "strict = every error is a plausible slip of this user (kinds they make), and the meaning is intact",
            "acceptable = plausible human typing slips, though not clearly this user's; meaning recoverable",
            "fail = implausible errors (no person would type them), or the meaning is lost",
        ),
    ),
)
BY_NAME = {d.name: d for d in DIMENSIONS}


def dimensions_of(task: str) -> tuple[Dimension, ...]:
    return tuple(d for d in DIMENSIONS if d.task == task)


RATING_COLUMNS = tuple(d.name for d in DIMENSIONS)
"""The sheet's answer columns, one per dimension (blank where the item's task does not ask it)."""
