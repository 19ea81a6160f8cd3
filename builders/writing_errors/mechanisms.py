"""Writing-error mechanisms: classify a (written, intended) word pair and diff two query strings.

A *mechanism* names what the writer's hand did to the intended word. The character-level ones
(``pqb.dataset.schema.CHAR_MECHANISMS``) are profiled per user and injected; the surface ones
(case, apostrophe) are profiled but never injected; anything else (a different word, a
multi-character rewrite) is "not character-level": it is counted and dropped from the injectable
profile.

Alignment is never hand-written: :func:`classify` reads rapidfuzz ``Levenshtein.editops`` between
the intended and the written word, and :func:`diff_edits` aligns word tokens with rapidfuzz
``Levenshtein.opcodes`` (rapidfuzz aligns any sequence of hashables, not only strings).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from rapidfuzz.distance import OSA, Levenshtein

from pqb.dataset.schema import MECHANISMS, term_spans, words

OTHER = "other"
"""Label for a diffed edit that no mechanism explains (e.g. a rewrite of several characters).
Not in ``schema.MECHANISMS``: such edits are reported by the release comparison, never injected."""

_QWERTY_ROWS = ("1234567890", "qwertyuiop", "asdfghjkl", "zxcvbnm")
_ROW_OFFSETS = (0.0, 0.5, 0.75, 1.25)  # physical stagger of each row, in key widths


def _build_neighbours() -> dict[str, frozenset[str]]:
    """Keys whose centres lie within ~1.1 key widths on a staggered QWERTY board (same or next row)."""
    pos = {ch: (r, c + _ROW_OFFSETS[r]) for r, row in enumerate(_QWERTY_ROWS) for c, ch in enumerate(row)}
    out: dict[str, set[str]] = {ch: set() for ch in pos}
    for a, (ra, ca) in pos.items():
        for b, (rb, cb) in pos.items():
            if a != b and abs(ra - rb) <= 1 and abs(ca - cb) <= (1.0 if ra == rb else 0.8):
                out[a].add(b)
    return {k: frozenset(v) for k, v in out.items()}


QWERTY_NEIGHBOURS: dict[str, frozenset[str]] = _build_neighbours()
"""Symmetric neighbour table: ``QWERTY_NEIGHBOURS['s'] == {'a','d','w','e','z','x'}``."""

PHONETIC_GROUPS: tuple[str, ...] = ("aeiouy", "ckqs", "sz", "fv", "gj", "mn", "dt", "bp", "iy", "ck", "xz")
"""Letters writers confuse by sound rather than by key position: vowels for one another (the most common
misspelling: "seperate", "definately"), the c/k/q/s family, voiced/voiceless pairs (d/t, b/p, f/v, s/z),
g/j, m/n. A non-adjacent single-letter ``substitution`` is injected only inside one of these groups, so
injected substitutions look like what people type ("recieve", "seperate"), not "fxnd" or "waqt"."""


def _build_phonetic() -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for group in PHONETIC_GROUPS:
        for ch in group:
            out.setdefault(ch, set()).update(x for x in group if x != ch)
    return {k: frozenset(v) for k, v in out.items()}


PHONETIC_CONFUSIONS: dict[str, frozenset[str]] = _build_phonetic()
"""Symmetric confusion table built from :data:`PHONETIC_GROUPS` (``PHONETIC_CONFUSIONS['c'] >= {'k', 's'}``)."""

HOMOPHONE_GROUPS: tuple[tuple[str, ...], ...] = (
    ("their", "there", "they're"),
    ("to", "too", "two"),
    ("your", "you're"),
    ("its", "it's"),
    ("whose", "who's"),
    ("then", "than"),
    ("buy", "by", "bye"),
    ("know", "no"),
    ("knew", "new"),
    ("hear", "here"),
    ("right", "write"),
    ("weather", "whether"),
    ("break", "brake"),
    ("peace", "piece"),
    ("sale", "sail"),
    ("one", "won"),
    ("for", "four"),
    ("great", "grate"),
    ("plain", "plane"),
    ("board", "bored"),
    ("week", "weak"),
    ("whole", "hole"),
    ("meet", "meat"),
    ("our", "hour"),
    ("wait", "weight"),
    ("allowed", "aloud"),
    ("passed", "past"),
    ("lose", "loose"),
    ("affect", "effect"),
    ("accept", "except"),
    ("wear", "where"),
    ("through", "threw"),
    ("piece", "peace"),
    ("wood", "would"),
    ("pair", "pear"),
    ("seen", "scene"),
)
"""Small table of commonly confused English homophones / near-homophones (lower case)."""

HOMOPHONES: dict[str, frozenset[str]] = {}
for _group in HOMOPHONE_GROUPS:
    for _w in _group:
        HOMOPHONES[_w] = HOMOPHONES.get(_w, frozenset()) | frozenset(x for x in _group if x != _w)

_APOSTROPHES = "'’"


def is_adjacent_key(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` are neighbouring keys on a QWERTY keyboard (case-insensitive)."""
    return b.lower() in QWERTY_NEIGHBOURS.get(a.lower(), frozenset())


def _strip_apostrophes(s: str) -> str:
    return "".join(ch for ch in s if ch not in _APOSTROPHES)


def classify(original: str, corrected: str) -> str | None:
    """Mechanism that turns the intended word ``corrected`` into the written word ``original``.

    Returns one of ``schema.MECHANISMS`` or ``None`` when the pair is not a single character-level
    slip (identical words, different words, several changes). Rules, checked in order:
    case-only → ``case``; equal without apostrophes → ``apostrophe``; listed homophones →
    ``homophone``; two replaced adjacent characters that are each other's swap → ``transposition``;
    one replaced character → ``keyboard_adjacent`` if the keys neighbour on QWERTY else
    ``substitution``; one extra character → ``repetition`` if it equals a neighbouring character,
    else ``insertion``; one missing character → ``deletion``. Character comparisons ignore case.
    """
    if not original or not corrected or original == corrected:
        return None
    o, c = original.lower(), corrected.lower()
    if o == c:
        return "case"
    if _strip_apostrophes(o) == _strip_apostrophes(c):
        return "apostrophe"
    if o in HOMOPHONES.get(c, frozenset()):
        return "homophone"
    if len(o) == len(c) and OSA.distance(c, o) == 1 and Levenshtein.distance(c, o) == 2:
        return "transposition"  # one adjacent swap: OSA counts it as 1 edit, Levenshtein as 2
    ops = Levenshtein.editops(c, o)  # transforms the intended word into the written one
    if len(ops) != 1:
        return None
    op = ops[0]
    if op.tag == "replace":
        return "keyboard_adjacent" if is_adjacent_key(c[op.src_pos], o[op.dest_pos]) else "substitution"
    if op.tag == "insert":
        extra = o[op.dest_pos]
        left = o[op.dest_pos - 1] if op.dest_pos > 0 else ""
        right = o[op.dest_pos + 1] if op.dest_pos + 1 < len(o) else ""
        return "repetition" if extra in (left, right) else "insertion"
    return "deletion"


# ------------------------------------------------------------------------------------------------
# Diffing two strings into token-level edits
# ------------------------------------------------------------------------------------------------

_DIFF_TOKEN = re.compile(r"[\w'’]+|\s+|[^\w\s]", re.UNICODE)


def _tokens(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(), m.start(), m.end()) for m in _DIFF_TOKEN.finditer(text)]


def diff_edits(clean: str, edited: str) -> list[dict[str, Any]]:
    """Token-level edits that turn ``clean`` into ``edited``, with offsets into ``clean``.

    Both strings are cut into word / whitespace / punctuation tokens; rapidfuzz aligns the token
    sequences. A replaced block with as many tokens on both sides yields one edit per changed token
    (its mechanism from :func:`classify`); any other block yields one edit covering it (so a split
    or merged word is one edit). Mechanisms no rule explains are labelled :data:`OTHER`.
    ``schema.apply_edits(clean, diff_edits(clean, edited)) == edited`` always holds.
    """
    a, b = _tokens(clean), _tokens(edited)
    blocks: list[list[int]] = []  # merged runs of adjacent non-equal opcodes: [i1, i2, j1, j2, same_len]
    for tag, i1, i2, j1, j2 in Levenshtein.opcodes([t[0] for t in a], [t[0] for t in b]):
        if tag == "equal":
            continue
        same = int(tag == "replace" and i2 - i1 == j2 - j1)
        if blocks and blocks[-1][1] == i1 and blocks[-1][3] == j1:
            blocks[-1][1], blocks[-1][3], blocks[-1][4] = i2, j2, 0
        else:
            blocks.append([i1, i2, j1, j2, same])
    edits: list[dict[str, Any]] = []
    for i1, i2, j1, j2, same in blocks:
        if same:
            pairs = [
                ((a[i][1], a[i][2]), (b[j][1], b[j][2]))
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            ]
        else:
            s = a[i1][1] if i1 < len(a) else len(clean)
            e = a[i2 - 1][2] if i1 < i2 else s
            bs = b[j1][1] if j1 < j2 else 0
            be = b[j2 - 1][2] if j1 < j2 else 0
            pairs = [((s, e), (bs, be))]
        for (s, e), (bs, be) in pairs:
            orig, new = clean[s:e], edited[bs:be]
            if orig == new:
                continue
            mech = classify(new, orig)
            edits.append({"start": s, "end": e, "original": orig, "edited": new, "mechanism": mech or OTHER})
    return edits


def mechanism_counts(edits: list[dict[str, Any]]) -> dict[str, int]:
    """Counts per mechanism over ``schema.MECHANISMS`` plus :data:`OTHER` (zeros included, fixed order)."""
    out = {m: 0 for m in (*MECHANISMS, OTHER)}
    for e in edits:
        out[e["mechanism"] if e["mechanism"] in out else OTHER] += 1
    return out


def edit_touches(
    edit: Mapping[str, Any], query: str, core_words: set[str], core_terms: Sequence[str] = ()
) -> bool:
    """Does a token edit of ``query`` hit a core term: overlap one's character span, or change one of
    its words? (One test for our edits and for the authors' release, so both are counted alike.)"""
    s, e = int(edit["start"]), int(edit["end"])
    if any(s < b and a < e for t in core_terms for a, b in term_spans(query, t)):
        return True
    return bool(set(words(str(edit["original"]))) & core_words)
