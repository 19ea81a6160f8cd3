"""Text analysis for BM25, in bulk: a corpus becomes one flat array of term ids plus offsets.

Two analyzers:

* :class:`RegexAnalyzer` — bm25s's ``tokenize`` (lower-case, ``re.findall`` of the token pattern,
  stopwords dropped before stemming, PyStemmer), so ``bm25``'s default variant keeps bm25s's tokens.
* :class:`LuceneEnglishAnalyzer` — what Anserini's ``DefaultEnglishAnalyzer`` (Lucene's
  ``EnglishAnalyzer`` chain) produces: ``StandardTokenizer`` (Unicode word breaks, UAX #29: letters and
  digits joined across one ``.``/``'``/``:`` between letters or one ``,``/``.``/``;`` between digits;
  ideographs, hiragana and emoji are tokens of their own), possessive ``'s`` removal, lower case, Lucene's
  33 English stopwords, Lucene's Porter stemmer (:mod:`.porter`). Checked token for token against
  pyserini's analyzer on every title, feature, description and query of the real Video_Games slice
  (tests/test_retrievers_pyserini.py); emoji *sequences* (ZWJ, skin tones) are split where Lucene keeps
  them whole.

Bulk: each text is split once; everything after the split (possessive, case, stopword, stem) is done
once per *distinct* raw token, then mapped back through an id array, so a 200K-document corpus costs
one regex pass plus a dictionary lookup per token. With bm25s's default token pattern (a word-run
pattern) a whole batch of texts is split at once with numpy instead (:mod:`.word_runs`, the same tokens),
the next batch prepared in a second thread, and the index is built from the blocks as they come
(:meth:`_BulkAnalyzer.tokenize_blocks`), issue 32.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pqb.harness.retrievers.lexical import word_runs
from pqb.harness.retrievers.lexical.porter import porter_stem

LUCENE_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)
"""Lucene's ``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`` (the same 33 words as bm25s's ``en`` list)."""

_CJK = "\u3040-\u309f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_OTHER_NUMBERS = "\u00b2\u00b3\u00b9\u00bc-\u00be\u2070-\u209f\u2150-\u218f\u2460-\u24ff\u2776-\u2793"
# Symbols StandardTokenizer emits as one-character <EMOJI> tokens (measured by probing Lucene with
# every symbol code point; the Unicode Emoji property, less the keycap bases # * 0-9).
_EMOJI = (
    "\u00a9\u00ae\u203c\u2049\u2122\u2194-\u2199\u21a9\u21aa\u231a\u231b\u2328\u2388\u23cf\u23e9-\u23f3"
    "\u23f8-\u23fa\u25aa\u25ab\u25b6\u25c0\u25fb-\u25fe\u2600-\u2605\u2607-\u2612\u2614-\u2685"
    "\u2690-\u2705\u2708-\u2712\u2714\u2716\u271d\u2721\u2728\u2733\u2734\u2744\u2747\u274c\u274e"
    "\u2753-\u2755\u2757\u2763-\u2767\u2795-\u2797\u27a1\u27b0\u27bf\u2934\u2935\u2b05-\u2b07"
    "\u2b1b\u2b1c\u2b50\u2b55\U0001f000-\U0001faff"
)
_WORD = rf"[^\W{_CJK}{_OTHER_NUMBERS}]"
_LETTER = rf"[^\W\d_{_CJK}{_OTHER_NUMBERS}]"
_MID_LETTER = ".'\u2019:\u00b7\uff1a\ufe13\ufe55\uff0e\uff07\ufe52"
_MID_NUMBER = ".,;'\u2019\uff0c\uff1b\ufe50\ufe54\uff0e\uff07\ufe52\u037e"
LUCENE_TOKEN = re.compile(
    rf"[{_CJK}]|[{_EMOJI}]\ufe0f?|{_WORD}+"
    rf"(?:(?:(?<={_LETTER})[{_MID_LETTER}](?={_LETTER})|(?<=\d)[{_MID_NUMBER}](?=\d)){_WORD}+)*"
)
_POSSESSIVE = re.compile("['\u2019\uff07][sS]$")
MAX_TOKEN_LENGTH = 255
"""StandardTokenizer's default maximum token length: longer runs are cut into pieces of this size."""


@dataclass(frozen=True)
class Tokenized:
    """Term ids of many texts: ``ids[offsets[i]:offsets[i + 1]]`` are text ``i``'s, in order (``-1`` = a
    term outside a frozen vocabulary)."""

    ids: np.ndarray  # int32 (a corpus has far fewer than 2^31 distinct terms)
    offsets: np.ndarray  # int64, len(texts) + 1

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def row(self, i: int) -> list[int]:
        """Text ``i``'s in-vocabulary term ids, in order."""
        return [t for t in self.ids[self.offsets[i] : self.offsets[i + 1]].tolist() if t >= 0]


class _BulkAnalyzer:
    """Split each text with :meth:`split`, normalise each distinct raw token once with :meth:`term`."""

    def split(self, text: str) -> list[str]:
        raise NotImplementedError

    def term(self, raw: str) -> str | None:
        """The indexed term of one raw token, ``None`` to drop it (a stopword)."""
        raise NotImplementedError

    def terms(self, raws: Sequence[str]) -> list[str | None]:
        return [self.term(r) for r in raws]

    def tokenize(self, texts: Iterable[str], vocab: dict[str, int], *, grow: bool) -> Tokenized:
        """Term ids of ``texts``; new terms are added to ``vocab`` when ``grow``, else they map to ``-1``
        (the blocks of :meth:`tokenize_blocks`, concatenated)."""
        blocks = list(self.tokenize_blocks(texts, vocab, grow=grow))
        if not blocks:
            return Tokenized(np.zeros(0, np.int32), np.zeros(1, np.int64))
        offsets = np.zeros(sum(map(len, blocks)) + 1, np.int64)
        np.cumsum(np.concatenate([b.lengths() for b in blocks]), out=offsets[1:])
        return Tokenized(np.concatenate([b.ids for b in blocks]), offsets)

    def tokenize_blocks(
        self, texts: Iterable[str], vocab: dict[str, int], *, grow: bool
    ) -> Iterator[Tokenized]:
        """The term ids of ``texts``, one :class:`Tokenized` block of consecutive texts at a time.

        Why blocks: an index is built from them as they come (:class:`.inverted_index.PostingsBuilder`),
        so the token ids of the whole corpus are never held at once. Texts are taken in batches of about
        ``BATCH`` characters (at most 4,096 texts), each mapped to term ids (:meth:`_prepare`, then
        :meth:`_assign` in batch order). Each distinct raw token is normalised once, when first seen; terms enter
        ``vocab`` in first-occurrence order, so batch sizes change no id."""
        raw_ids: dict[object, int] = {}
        lut = np.empty(0, np.int32)  # raw id -> term id; -2 = dropped, -1 = out of vocabulary

        def block(batch: list[str], prepared: Any) -> Tokenized:
            nonlocal lut
            raw, counts, new = self._assign(prepared, raw_ids)
            if new:
                lut = np.concatenate([lut, self._term_ids(new, vocab, grow)])
            mapped = lut[raw]
            keep = mapped != -2
            doc = np.repeat(np.arange(len(batch), dtype=np.int32), counts)
            offsets = np.zeros(len(batch) + 1, np.int64)
            np.cumsum(np.bincount(doc[keep], minlength=len(batch)), out=offsets[1:])
            return Tokenized(mapped[keep], offsets)

        def batches() -> Iterator[list[str]]:
            batch: list[str] = []
            chars = 0
            for text in texts:
                batch.append(text or "")
                chars += len(batch[-1])
                if chars >= self.BATCH or len(batch) == 4096:
                    yield batch
                    batch, chars = [], 0
            if batch:
                yield batch

        if not self.pipelined:
            for batch in batches():
                yield block(batch, self._prepare(batch))
            return
        from concurrent.futures import ThreadPoolExecutor

        # One thread prepares the next batch (numpy and pandas, which release the GIL) while this one
        # assigns ids in batch order and the caller indexes: the same ids, in less wall time.
        with ThreadPoolExecutor(1) as pool:
            pending: list[tuple[list[str], Any]] = []
            for batch in batches():
                pending.append((batch, pool.submit(self._prepare, batch)))
                if len(pending) > 1:
                    done, future = pending.pop(0)
                    yield block(done, future.result())
            for done, future in pending:
                yield block(done, future.result())

    BATCH = 4_000_000
    """Characters per tokenizer batch (about 4,000 real-length documents)."""

    pipelined = False
    """Whether :meth:`tokenize_blocks` prepares the next batch in a second thread (worth it only when
    :meth:`_prepare` releases the GIL)."""

    def _prepare(self, texts: list[str]) -> Any:
        """The part of a batch's tokenization that needs no shared state: here, its tokens and counts."""
        counts = np.zeros(len(texts), np.int64)
        tokens: list[str] = []
        for i, text in enumerate(texts):
            toks = self.split(text)
            counts[i] = len(toks)
            tokens += toks
        return tokens, counts

    def _assign(self, prepared: Any, raw_ids: dict[object, int]) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """(raw id of every token of a prepared batch in order (int32), tokens per text, the raw tokens first
        seen here in first-occurrence order, whose ids were appended to ``raw_ids``)."""
        tokens, counts = prepared
        raw, new = self._raw_ids(tokens, raw_ids)
        return raw, counts, new

    def _term_ids(self, raws: list[str], vocab: dict[str, int], grow: bool) -> np.ndarray:
        """Term id of each raw token (``-2`` = dropped, ``-1`` = outside a frozen ``vocab``)."""
        out = np.empty(len(raws), np.int32)
        for i, term in enumerate(self.terms(raws)):
            if term is None:
                out[i] = -2
            elif grow:
                out[i] = vocab.setdefault(term, len(vocab))
            else:
                out[i] = vocab.get(term, -1)
        return out

    @staticmethod
    def _raw_ids(tokens: list[str], raw_ids: dict[object, int]) -> tuple[np.ndarray, list[str]]:
        """(ids of ``tokens`` in ``raw_ids`` as int32, the tokens first seen here, which are appended)."""
        new = [t for t in dict.fromkeys(tokens) if t not in raw_ids]
        for t in new:
            raw_ids[t] = len(raw_ids)
        return np.fromiter(map(raw_ids.__getitem__, tokens), np.int32, len(tokens)), new


class RegexAnalyzer(_BulkAnalyzer):
    """bm25s's tokenizer: ``findall(token_pattern)`` on the (lower-cased) text, stopwords, then a stemmer."""

    def __init__(
        self,
        token_pattern: str,
        *,
        lower: bool = True,
        stopwords: Iterable[str] = (),
        stemmer: Callable[[list[str]], list[str]] | None = None,
        word_runs_enabled: bool = True,
    ) -> None:
        """``word_runs_enabled=False`` forces one ``findall`` per text (the reference the compiled word-run
        path is tested against)."""
        self._findall = re.compile(token_pattern).findall
        self.lower = lower
        self.stopwords = frozenset(stopwords)
        self.stem_words = stemmer
        self.min_run = word_runs.WORD_RUN_PATTERNS.get(token_pattern) if word_runs_enabled else None
        """The compiled path's minimum run length when ``token_pattern`` is a word-run pattern, else ``None``."""
        self.pipelined = self.min_run is not None

    def split(self, text: str) -> list[str]:
        return self._findall(text.lower() if self.lower else text)

    def _prepare(self, texts: list[str]) -> Any:
        """With a word-run pattern, :func:`.word_runs.prepare` (the batch's runs found with numpy, the same
        tokens); else one ``findall`` per text."""
        if self.min_run is None:
            return super()._prepare(texts)
        return word_runs.prepare(texts, min_run=self.min_run, lower=self.lower, findall=self._findall)

    def _assign(self, prepared: Any, raw_ids: dict[object, int]) -> tuple[np.ndarray, np.ndarray, list[str]]:
        if self.min_run is None:
            return super()._assign(prepared, raw_ids)
        return word_runs.assign(prepared, raw_ids)

    def terms(self, raws: Sequence[str]) -> list[str | None]:
        kept = [r for r in raws if r not in self.stopwords]
        stems = iter(self.stem_words(kept) if self.stem_words is not None and kept else kept)
        return [None if r in self.stopwords else next(stems) for r in raws]


class LuceneEnglishAnalyzer(_BulkAnalyzer):
    """Lucene's English chain (see the module docstring); ``stemmer`` is ``porter`` or ``none``."""

    def __init__(self, *, stopwords: bool = True, stemmer: str = "porter") -> None:
        if stemmer not in {"porter", "none"}:
            raise ValueError(f"the Lucene analyzer stems with porter or none, got {stemmer!r}")
        self.stopwords = LUCENE_STOPWORDS if stopwords else frozenset()
        self.stem = porter_stem if stemmer == "porter" else None

    def split(self, text: str) -> list[str]:
        toks = LUCENE_TOKEN.findall(text)
        if any(len(t) > MAX_TOKEN_LENGTH for t in toks):
            toks = [t[i : i + MAX_TOKEN_LENGTH] for t in toks for i in range(0, len(t), MAX_TOKEN_LENGTH)]
        return toks

    def term(self, raw: str) -> str | None:
        t = _POSSESSIVE.sub("", raw).lower()
        if not t or t in self.stopwords:
            return None
        return self.stem(t) if self.stem is not None else t
