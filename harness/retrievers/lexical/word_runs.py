r"""bm25s's default tokens for many texts at once, with numpy instead of one ``re.findall`` per text.

Why: on real-length documents (issue 32), ``re.findall`` and one dictionary lookup per token were most
of ``pqb-harness run --model bm25``'s time. The token patterns ``(?u)\b\w\w+\b`` (bm25s's default, and
``bm25``'s) and ``(?u)\b\w+\b`` match exactly the *maximal runs of word characters* at least 2 (or 1)
characters long: a match starts where a run starts (``\b``) and ``\w+`` is greedy, so it ends where the
run ends; a shorter run fails and the scan moves past it. For a text whose characters are all ASCII,
Python's ``\w`` is ``[0-9A-Za-z_]`` and ``str.lower`` is ``bytes.lower``, so the runs of a whole batch of
such texts are found on their bytes, joined by ``\n`` (not a word byte, so no run spans two texts), in a
few array operations.

Each run of at most 8 bytes is then *packed*, exactly, into one uint64 (its bytes, zero-padded: a word
byte is never 0, so different runs have different keys; no hashing), a run of 9–24 bytes into three, and
one sort gives each distinct key once, so the Python work is per distinct token, not per token. Runs
longer than 24 bytes become ``bytes`` objects, and texts with any non-ASCII character go through the
regex (``split``), as before. Raw tokens take ids in order of first occurrence in the batch,
whatever their kind, so terms enter the vocabulary in exactly the order of the per-text path
(tests/test_retrievers_lexical.py checks the ids on the real corpus and on edge cases: Unicode, digits
with dots, apostrophes, underscores, long runs).
"""

from __future__ import annotations

import functools

import numpy as np

WORD_RUN_PATTERNS: dict[str, int] = {
    r"(?u)\b\w\w+\b": 2,
    r"\b\w\w+\b": 2,
    r"(?u)\b\w+\b": 1,
    r"\b\w+\b": 1,
}
"""Token patterns that match exactly the maximal word-character runs of at least this many characters
(``(?u)`` is the default for ``str`` patterns)."""

_ASCII_WORD = np.zeros(256, bool)
for _c in b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_":
    _ASCII_WORD[_c] = True
"""Python's ``\\w`` on ASCII characters."""

PACK = 8
"""Bytes per uint64 word of a packed run."""
WIDTHS = (1, 3)
"""Runs of at most 8 bytes are packed into one uint64, runs of 9–24 bytes into three; longer runs (rare)
stay ``bytes``."""
_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(PACK)] + [(1 << 64) - 1], np.uint64)


def _packed(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, width: int) -> np.ndarray:
    """(runs, ``width``) uint64 keys of the runs ``buf[starts[i] : starts[i] + lengths[i]]``
    (``lengths <= width * PACK``): their bytes, little-endian, zero beyond each run's end."""
    span = width * PACK
    padded = np.zeros(len(buf) + span, np.uint8)
    padded[: len(buf)] = buf
    windows = np.lib.stride_tricks.as_strided(padded, shape=(len(buf), span), strides=(1, 1))
    keys = np.ascontiguousarray(windows[starts]).view("<u8").reshape(len(starts), width)
    for j in range(width):
        keys[:, j] &= _MASKS[np.clip(lengths - PACK * j, 0, PACK)]
    return keys


def _distinct(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row of each distinct key's first occurrence, distinct index of every row) of (m, w) ``keys``.

    One sort (any kind: the first occurrence is the minimum row of its group, not a sort's tie order)."""
    m = len(keys)
    if m == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.argsort(keys[:, 0]) if keys.shape[1] == 1 else np.lexsort(keys.T[::-1])
    ranked = keys[order]
    starts_group = np.empty(m, bool)
    starts_group[0] = True
    np.any(ranked[1:] != ranked[:-1], axis=1, out=starts_group[1:])
    heads = np.flatnonzero(starts_group)
    group = np.empty(m, np.int64)
    group[order] = np.cumsum(starts_group) - 1
    return np.minimum.reduceat(order, heads), group


def _key_text(key: object) -> str:
    """The token string of a raw key: a packed uint64, ``bytes`` (three packed words, or a run longer
    than 24 bytes) or ``str`` (a token of a non-ASCII text)."""
    if isinstance(key, int):
        return key.to_bytes(PACK, "little").rstrip(b"\0").decode("ascii")
    if isinstance(key, bytes):
        return key.rstrip(b"\0").decode("ascii")
    return str(key)


@functools.cache
def _bmp_word() -> np.ndarray:
    """Python ``re``'s ``\\w`` for every code point of the Basic Multilingual Plane (``str.isalnum()`` or
    ``_``, as ``sre`` defines it), made once when a batch first has a non-ASCII character."""
    table = np.fromiter((chr(c).isalnum() for c in range(0x10000)), bool, 0x10000)
    table[ord("_")] = True
    return table


def _word_mask(cps: np.ndarray) -> np.ndarray:
    """Whether each code point is a ``\\w`` character: the BMP table, and ``str.isalnum`` once per
    distinct code point above it (rare: emoji, historic scripts)."""
    word = _bmp_word()[np.minimum(cps, 0xFFFF)]
    astral = np.flatnonzero(cps > 0xFFFF)
    if len(astral):
        distinct, inverse = np.unique(cps[astral], return_inverse=True)
        is_word = np.fromiter((chr(c).isalnum() for c in distinct.tolist()), bool, len(distinct))
        word[astral] = is_word[inverse.reshape(-1)]
    return word


def batch_raw_ids(
    texts: list[str], raw_ids: dict[object, int], *, min_run: int, lower: bool
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(raw id of every token of ``texts`` in text order (int32), tokens per text, the token strings first
    seen in this batch in first-occurrence order, whose ids were appended to ``raw_ids``).

    Keys of ``raw_ids`` are packed ints, ``bytes`` (three packed words) and ``str`` (runs with a non-ASCII
    character, or longer than 24): a string has one key kind, so one raw id."""
    n = len(texts)
    lowered = [t.lower() for t in texts] if lower else texts  # per text, as findall sees it
    joined = "\n".join(lowered)
    ascii_only = joined.isascii()
    if ascii_only:
        buf = np.frombuffer(joined.encode("ascii"), np.uint8)
        word = _ASCII_WORD[buf]
    else:  # one array element per code point, so positions are string indices
        cps = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), np.uint32)
        word = _word_mask(cps)
        buf = cps.astype(np.uint8)  # the packing bytes; only runs of ASCII code points are packed
    padded = np.zeros(len(word) + 2, bool)
    padded[1:-1] = word
    edges = np.flatnonzero(padded[1:] != padded[:-1])  # run starts and ends, alternating
    starts, ends = edges[0::2], edges[1::2]
    keep = ends - starts >= min_run
    starts, ends = starts[keep], ends[keep]
    lengths = ends - starts
    text_len = np.fromiter(map(len, lowered), np.int64, n)
    text_start = np.cumsum(text_len + 1) - (text_len + 1)
    counts = np.bincount(np.searchsorted(text_start, starts, "right") - 1, minlength=n).astype(np.int64)

    # kinds of runs: packed in 1 or 3 words (ASCII, <= 24 characters), or str
    as_str = lengths > WIDTHS[-1] * PACK
    if not ascii_only:  # a run with a non-ASCII character is a str
        high = np.flatnonzero(cps >= 128)
        as_str |= np.searchsorted(high, ends) > np.searchsorted(high, starts)
    firsts: dict[object, int] = {}
    placed: list[tuple[np.ndarray, list[object], np.ndarray]] = []  # (runs, distinct keys, distinct index)
    lo = 0
    for width in WIDTHS:
        sel = np.flatnonzero(~as_str & (lengths > lo * PACK) & (lengths <= width * PACK))
        keys = _packed(buf, starts[sel], lengths[sel], width)
        first, group = _distinct(keys)
        distinct: list[object] = keys[first, 0].tolist() if width == 1 else [r.tobytes() for r in keys[first]]
        firsts.update(zip(distinct, sel[first].tolist(), strict=True))
        placed.append((sel, distinct, group))
        lo = width
    sel = np.flatnonzero(as_str)
    strs = [joined[a:z] for a, z in zip(starts[sel].tolist(), ends[sel].tolist(), strict=True)]
    # first run of each string, in C: later (reversed) items overwrite, so the earliest run is kept
    firsts.update(dict(zip(reversed(strs), reversed(sel.tolist()), strict=True)))
    placed.append((sel, strs, np.arange(len(strs))))

    new = sorted((at, key) for key, at in firsts.items() if key not in raw_ids)
    for _, key in new:
        raw_ids[key] = len(raw_ids)
    raw = np.empty(len(starts), np.int32)
    for at, distinct, group in placed:
        raw[at] = np.fromiter(map(raw_ids.__getitem__, distinct), np.int32, len(distinct))[group]
    return raw, counts, [_key_text(key) for _, key in new]
