"""Raw text from Amazon's files: HTML unescaping and tag stripping, whitespace, the review-length cap, casing.

Why one module: review texts (users) and product metadata (documents) both arrive HTML-escaped, often
several times over (``&amp;amp;``), and both must be cleaned the same way; the cap is read by the
readers that enforce it and by the parser that reports texts over it.
"""

from __future__ import annotations

import html
import re

MAX_TEXT_CHARS = 20_000
"""Longest review text kept (ingest cuts longer ones at the last sentence end before the cap)."""

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
"""The authors' sentence splitter: a break after ``.``, ``!`` or ``?`` followed by white space."""
_BR = re.compile(r"<br\s*/?>", re.I)
TAG = re.compile(r"<[^>]+>")
SPACE = re.compile(r"\s+")


def unescape_html(text: str, rounds: int = 3) -> str:
    """Repeated ``html.unescape`` until stable (at most ``rounds``): nested escapes like ``&amp;amp;``."""
    s = text
    for _ in range(rounds):
        un = html.unescape(s)
        if un == s:
            break
        s = un
    return s


def strip_tags(text: str) -> str:
    """``<br>`` and every other tag become a space (words on either side stay apart)."""
    return TAG.sub(" ", _BR.sub(" ", text)) if "<" in text else text


def collapse_spaces(text: str) -> str:
    return SPACE.sub(" ", text).strip()


def match_case(new: str, like: str) -> str:
    """``new`` cased like ``like``: ALL CAPS (two letters or more), Capitalised, or as it is."""
    if like.isupper() and len(like) > 1:
        return new.upper()
    if like[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


def split_at_sentence_ends(text: str) -> list[str]:
    """``text`` cut at :data:`SENTENCE_END` (the authors' rule), pieces stripped, empty ones dropped.

    Why not spaCy: measured against 200 hand-labelled reviews of the slice (``bench/bench_splitters.py``,
    ``docs/design.md`` §3) it finds sentence boundaries as well as the parser in context does, at a few
    thousandths of its cost, and it needs no model, so a user's sentences can be counted before anything
    is parsed."""
    return [s for s in (p.strip() for p in SENTENCE_END.split(text)) if s]
