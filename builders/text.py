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
    return TAG.sub(" ", _BR.sub(" ", text))


def collapse_spaces(text: str) -> str:
    return SPACE.sub(" ", text).strip()


def match_case(new: str, like: str) -> str:
    """``new`` cased like ``like``: ALL CAPS (two letters or more), Capitalised, or as it is."""
    if like.isupper() and len(like) > 1:
        return new.upper()
    if like[:1].isupper():
        return new[:1].upper() + new[1:]
    return new
