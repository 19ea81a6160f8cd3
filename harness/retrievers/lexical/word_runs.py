r"""bm25s's default tokens for many texts at once, with numpy instead of one ``re.findall`` per text.

Why: on real-length documents (issue 32), ``re.findall`` and one dictionary lookup per token were most
of ``pqb-harness run --model bm25``'s indexing time. The token patterns ``(?u)\b\w\w+\b`` (bm25s's
default, and ``bm25``'s) and ``(?u)\b\w+\b`` match exactly the *maximal runs of word characters* at least
2 (or 1) characters long: a match starts where a run starts (``\b``) and ``\w+`` is greedy, so it ends
where the run ends; a shorter run fails and the scan moves past it. On ASCII, Python's ``\w`` is
``[0-9A-Za-z_]``, so the runs of a whole batch of (lower-cased) texts, joined by ``\n`` (not a word
character, so no run spans two texts) and UTF-8 encoded once, are found in a few array operations.
Non-ASCII characters are rare in the corpus (its builders clean text to Latin script): a run of word
bytes and non-ASCII bytes that holds one is decoded and given to the regex itself, which sees the same
boundaries there as on the whole text (the span is bounded by ASCII non-word characters).

Each ASCII run of at most 8 bytes is then *packed*, exactly, into one uint64 (its bytes, zero-padded: a
word byte is never 0, so different runs have different keys; no hashing), a run of 9–24 bytes into three,
and a hash table gives each distinct key once, so the Python work is per distinct token, not per token.
Raw tokens take ids in order of first occurrence in the batch, whatever their kind, so terms enter the
vocabulary in exactly the order of the per-text path (tests/test_retrievers_bm25_tokens.py checks ids,
lengths and vocabulary on the real corpus, the raw product records, edge cases — Unicode, digits with
dots, apostrophes, underscores, long runs — and fuzzed text).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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
    """(row of each distinct key's first occurrence, distinct index of every row) of (m, w) ``keys``;
    distinct indices are numbered in order of first occurrence.

    A hash table (``pandas.factorize``, a base dependency), not a sort: the codes of a factorization
    are assigned in order of first occurrence, so a row is a first occurrence exactly where the running
    maximum of the codes grows."""
    import pandas as pd

    m = len(keys)
    if m == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    codes = np.zeros(m, np.int64)
    for j in range(keys.shape[1]):
        col, uniq = pd.factorize(keys[:, j])
        codes = pd.factorize(codes * len(uniq) + col)[0] if j else col.astype(np.int64)
    peak = np.maximum.accumulate(codes)
    return np.flatnonzero(np.concatenate(([True], peak[1:] > peak[:-1]))), codes


def _key_text(key: object) -> str:
    """The token string of a raw key: a packed uint64, ``bytes`` (three packed words) or ``str`` (a run
    longer than 24 bytes, or a token the regex found in a span with a non-ASCII character)."""
    if isinstance(key, int):
        return key.to_bytes(PACK, "little").rstrip(b"\0").decode("ascii")
    if isinstance(key, bytes):
        return key.rstrip(b"\0").decode("ascii")
    return str(key)


_BYTE_WORD = _ASCII_WORD.copy()
_BYTE_WORD[128:] = True
"""``\\w`` on ASCII bytes, and every byte of a multi-byte UTF-8 character (sorted out by the regex)."""


@dataclass
class Prepared:
    """A batch's tokens before raw ids are given (:func:`prepare`): for each kind of key, the token
    indices, the distinct keys in first-occurrence order and each token's index among them."""

    counts: np.ndarray  # tokens per text
    n_tokens: int
    placed: list[tuple[np.ndarray, list[object], np.ndarray]]
    firsts: dict[object, int]  # token index of each distinct key's first occurrence


def batch_raw_ids(
    texts: list[str],
    raw_ids: dict[object, int],
    *,
    min_run: int,
    lower: bool,
    findall: Callable[[str], list[str]],
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(raw id of every token of ``texts`` in text order (int32), tokens per text, the token strings first
    seen in this batch in first-occurrence order, whose ids were appended to ``raw_ids``):
    :func:`assign` of :func:`prepare`."""
    return assign(prepare(texts, min_run=min_run, lower=lower, findall=findall), raw_ids)


def prepare(texts: list[str], *, min_run: int, lower: bool, findall: Callable[[str], list[str]]) -> Prepared:
    """A batch's runs, keys and distinct keys; no shared state, so batches can be prepared in another
    thread (most of the work is numpy and pandas, which release the GIL) while :func:`assign` runs here.

    The batch is UTF-8 encoded once. A *span* of word bytes and non-ASCII bytes that holds a non-ASCII
    character is decoded and tokenized by ``findall`` (the pattern's regex): it is bounded by ASCII
    non-word characters, so the regex sees the same boundaries as on the whole text. Keys are packed ints,
    ``bytes`` (three packed words) and ``str`` (longer runs and spans' tokens)."""
    n = len(texts)
    lowered = [t.lower() for t in texts] if lower else texts  # per text, as findall sees it
    joined = "\n".join(lowered)
    ascii_only = joined.isascii()
    raw_bytes = joined.encode("utf-8", "surrogatepass")
    buf = np.frombuffer(raw_bytes, np.uint8)
    padded = np.zeros(len(buf) + 2, bool)
    padded[1:-1] = (_ASCII_WORD if ascii_only else _BYTE_WORD)[buf]
    edges = np.flatnonzero(padded[1:] != padded[:-1])  # run starts and ends, alternating
    starts, ends = edges[0::2], edges[1::2]
    span = np.zeros(len(starts), bool)
    if not ascii_only:  # runs holding a non-ASCII byte are spans for the regex (every such byte is in one)
        span[np.searchsorted(starts, np.flatnonzero(buf >= 128), "right") - 1] = True
    keep = span | (ends - starts >= min_run)
    starts, ends, span = starts[keep], ends[keep], span[keep]
    lengths = ends - starts
    span_at = np.flatnonzero(span)
    span_tokens = [
        findall(raw_bytes[a:z].decode("utf-8", "surrogatepass"))
        for a, z in zip(starts[span_at].tolist(), ends[span_at].tolist(), strict=True)
    ]
    n_tok = np.ones(len(starts), np.int64)
    n_tok[span_at] = np.fromiter(map(len, span_tokens), np.int64, len(span_tokens))
    first_tok = np.zeros(len(starts) + 1, np.int64)  # index of each run's first token in the batch
    np.cumsum(n_tok, out=first_tok[1:])
    byte_len = np.fromiter(
        (len(t) if t.isascii() else len(t.encode("utf-8", "surrogatepass")) for t in lowered), np.int64, n
    )
    bounds = np.zeros(n + 1, np.int64)  # each text's first byte (texts are joined by one byte)
    np.cumsum(byte_len + 1, out=bounds[1:])
    counts = np.diff(first_tok[np.searchsorted(starts, bounds)])

    # kinds of tokens: ASCII runs packed in 1 or 3 words (<= 24 characters), or str
    placed: list[
        tuple[np.ndarray, list[object], np.ndarray]
    ] = []  # (token indices, distinct keys, key index)
    firsts: dict[object, int] = {}
    lo = 0
    for width in WIDTHS:
        sel = np.flatnonzero(~span & (lengths > lo * PACK) & (lengths <= width * PACK))
        keys = _packed(buf, starts[sel], lengths[sel], width)
        first, group = _distinct(keys)
        distinct: list[object] = keys[first, 0].tolist() if width == 1 else [r.tobytes() for r in keys[first]]
        at = first_tok[sel]
        firsts.update(zip(distinct, at[first].tolist(), strict=True))
        placed.append((at, distinct, group))
        lo = width
    sel = np.flatnonzero(~span & (lengths > lo * PACK))
    strs: list[object] = [
        raw_bytes[a:z].decode("ascii") for a, z in zip(starts[sel].tolist(), ends[sel].tolist(), strict=True)
    ]
    at = first_tok[sel]
    if len(span_at):
        strs += [t for toks in span_tokens for t in toks]
        at = np.concatenate(
            [
                at,
                *(
                    first_tok[i] + np.arange(len(t))
                    for i, t in zip(span_at.tolist(), span_tokens, strict=True)
                ),
            ]
        )
    # first token of each string, in C: later (reversed) items overwrite, so the earliest is kept
    firsts.update(dict(zip(reversed(strs), reversed(at.tolist()), strict=True)))
    placed.append((at, strs, np.arange(len(strs))))

    return Prepared(counts, int(first_tok[-1]), placed, firsts)


def assign(prep: Prepared, raw_ids: dict[object, int]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Raw ids for a prepared batch, in batch order: keys first seen here are appended to ``raw_ids`` in
    order of first occurrence (:func:`batch_raw_ids`)."""
    new = sorted((pos, key) for key, pos in prep.firsts.items() if key not in raw_ids)
    for _, key in new:
        raw_ids[key] = len(raw_ids)
    raw = np.empty(prep.n_tokens, np.int32)
    for at, distinct, group in prep.placed:
        raw[at] = np.fromiter(map(raw_ids.__getitem__, distinct), np.int32, len(distinct))[group]
    return raw, prep.counts, [_key_text(key) for _, key in new]
