"""A term-major (CSC) BM25 index built with vectorised numpy, and its two weightings.

The index holds, per term, the sorted documents containing it and one float32 BM25 weight per
(term, document) for a query that names the term once. Built vectorised, block by block of documents
as the tokenizer yields them (:class:`PostingsBuilder`); no Python loop over documents.

Weightings (``weight(term, n)`` gives the weights for a term named ``n`` times in the query):

* :class:`Bm25sWeights` — bm25s's own formulas (``bm25s.scoring``'s idf and tf functions, applied to whole
  arrays with the dtypes bm25s uses), so the float32 weights are bit-identical to ``bm25s.BM25.index``'s
  (a test compares them). A repeated query term weighs ``n ×`` (bm25s and the earlier sparse product
  counted duplicates the same way).
* :class:`LuceneWeights` — Lucene's ``BM25Similarity`` as Anserini runs it: document lengths stored in one
  byte (``SmallFloat.intToByte4``) and decoded through its 256-entry table, ``avgdl`` from the exact
  total, ``idf = ln(1 + (N − df + 0.5)/(df + 0.5))`` over documents that have the field, and
  ``w − w / (1 + tf · 1/(k1 · (1 − b + b · len/avgdl)))`` in float32 with ``w = n · idf`` (Anserini boosts a
  repeated query term by its count).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pqb.dataset.io import cache_rebuild_notice, checksum_problem, write_checksum
from pqb.harness.retrievers.lexical.analysis import Tokenized

FORMAT = 2
"""On-disk format of a saved index; bump when the arrays change."""


@dataclass
class Postings:
    """Term-major postings: documents of term ``t`` are ``docs[indptr[t]:indptr[t + 1]]`` (ascending)."""

    indptr: np.ndarray  # int64, n_terms + 1
    docs: np.ndarray  # int32
    tf: np.ndarray  # float32 term frequency per posting
    doc_len: np.ndarray  # int64 tokens per document (after analysis)

    @property
    def n_docs(self) -> int:
        return len(self.doc_len)

    @property
    def n_terms(self) -> int:
        return len(self.indptr) - 1

    def df(self) -> np.ndarray:
        return np.diff(self.indptr)

    def term_of_posting(self, a: int = 0, z: int | None = None) -> np.ndarray:
        """The term of each posting ``a:z`` (all by default); a block of it needs no array of every posting."""
        z = len(self.docs) if z is None else z
        return (np.searchsorted(self.indptr, np.arange(a, z), side="right") - 1).astype(np.int32)

    BLOCK_TOKENS = 1 << 20
    """Tokens per block of :meth:`build`: its sort keys stay a few MB, whatever the corpus size."""

    @classmethod
    def build(cls, tokens: Tokenized, n_terms: int) -> Postings:
        """Postings of ``tokens`` (``n_terms`` = vocabulary size): :class:`PostingsBuilder` fed blocks of
        whole documents of about ``BLOCK_TOKENS`` tokens."""
        n_docs = len(tokens)
        bounds = (
            np.searchsorted(tokens.offsets, np.arange(0, tokens.offsets[-1], cls.BLOCK_TOKENS), "right") - 1
        )
        edges = np.unique(np.append(bounds[bounds > 0], n_docs)) if n_docs else np.zeros(0, np.int64)
        builder = PostingsBuilder()
        first_doc = 0
        for last_doc in edges.tolist():
            lo, hi = tokens.offsets[first_doc], tokens.offsets[last_doc]
            builder.add(Tokenized(tokens.ids[lo:hi], tokens.offsets[first_doc : last_doc + 1] - lo))
            first_doc = last_doc
        return builder.finish(n_terms)


class PostingsBuilder:
    """Term-major postings built from blocks of consecutive documents as a tokenizer yields them.

    Why: the analyzer's token ids of a whole corpus (4 bytes a token) and one global sort of every
    (term, document) pair (two int64 arrays per posting) were BM25's peak memory at 200K real-length
    documents (issue 32). Here each block's (term, document) keys are sorted and counted at once, and
    only the distinct (document, term, tf) triples are kept, term-major within
    the block; :meth:`finish` then copies each block's run of each term to that term's next free slots
    (blocks come in document order, so every term's documents stay ascending). The result equals one
    sort of every (term, document) key (tests/test_retrievers_bm25_tokens.py compares them).

    A block stores its documents as offsets from its first document and its term frequencies in the
    narrowest unsigned type that holds them (2 bytes each for a tokenizer block of at most 4,096
    documents whose words repeat fewer than 65,536 times): 8 bytes per posting instead of 12 until
    :meth:`finish` places them, when the held blocks and the final arrays are the build's peak."""

    def __init__(self) -> None:
        self.n_docs = 0
        self._blocks: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []  # (first doc, offsets, terms, tf)
        self._lengths: list[np.ndarray] = []

    def add(self, block: Tokenized) -> None:
        """The next ``len(block)`` documents; their ids are term ids (``>= 0``)."""
        lengths = block.lengths().astype(np.int64)
        keys = block.ids.astype(np.int64)
        keys <<= 32  # (term, document) in one int64: terms and documents are below 2^31
        keys |= np.repeat(np.arange(self.n_docs, self.n_docs + len(block), dtype=np.int64), lengths)
        keys.sort()
        # a block without tokens (every document empty) has no keys, and no first key to start at
        starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))) if len(keys) else keys[:0]
        tf = np.diff(np.append(starts, len(keys)))
        distinct = keys[starts]
        offsets = (distinct & 0xFFFFFFFF) - self.n_docs
        self._blocks.append((self.n_docs, offsets.astype(_narrowest(len(block))), (distinct >> 32).astype(np.int32),
                             tf.astype(_narrowest(int(tf.max(initial=0)) + 1))))  # fmt: skip
        self._lengths.append(lengths)
        self.n_docs += len(block)

    def finish(self, n_terms: int) -> Postings:
        """The postings (``n_terms`` = the final vocabulary size); the blocks are released as placed."""
        return_freed_heap()  # what the tokenizer freed, before the final arrays are allocated
        df = np.zeros(n_terms, np.int64)
        for _, _, terms, _ in self._blocks:
            df += np.bincount(terms, minlength=n_terms)
        indptr = np.zeros(n_terms + 1, np.int64)
        np.cumsum(df, out=indptr[1:])
        docs = np.empty(int(indptr[-1]), np.int32)
        tf = np.empty(int(indptr[-1]), np.float32)
        cursor = indptr[:-1].copy()  # next free slot of each term
        blocks, self._blocks = self._blocks, []
        while blocks:
            first, offsets, terms, b_tf = blocks.pop(0)  # term-major already: (term, document) ascending
            heads = np.flatnonzero(np.concatenate(([True], terms[1:] != terms[:-1]))) if len(terms) else terms
            sizes = np.diff(np.append(heads, len(terms)))
            at = cursor[terms] + (np.arange(len(terms)) - np.repeat(heads, sizes))
            docs[at] = offsets.astype(np.int32) + np.int32(first)
            tf[at] = b_tf  # an integer count, exact in float32
            cursor[terms[heads]] += sizes
        doc_len = np.concatenate(self._lengths) if self._lengths else np.zeros(0, np.int64)
        self._lengths = []
        return_freed_heap()
        return Postings(indptr, docs, tf, doc_len)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or ``None`` where the C library has none (musl, macOS, Windows)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    return getattr(libc, "malloc_trim", None)


def return_freed_heap() -> None:
    """Give the heap memory freed so far back to the OS (glibc only; elsewhere nothing happens).

    Tokenizing a corpus allocates and frees many arrays of a few MB in two threads. glibc keeps the
    freed space in its arenas for reuse, so at 200K real-length documents a 200 MB index left about
    250 MB of freed heap counted in the process's memory through ranking (issue 32). It changes no
    value: only where freed memory lives."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def _narrowest(bound: int) -> type:
    """The narrowest unsigned integer type holding every value below ``bound``."""
    return np.uint16 if bound <= 1 << 16 else np.uint32


BLOCK_POSTINGS = 1 << 20
"""Postings per block of the weight formulas: their float64 temporaries stay a few MB."""


class Bm25sWeights:
    """bm25s's weights (``method`` in robertson|lucene|atire|bm25l|bm25+), bit for bit."""

    def __init__(self, postings: Postings, *, k1: float, b: float, method: str, delta: float = 0.5) -> None:
        from bm25s import scoring  # the library's own formulas, not a re-derivation

        n_docs, df = postings.n_docs, postings.df()
        idf_fn, tfc_fn = scoring._select_idf_scorer(method), scoring._select_tfc_scorer(method)
        idf = np.zeros(postings.n_terms, np.float32)
        uniq, inverse = np.unique(df, return_inverse=True)
        values = np.asarray([idf_fn(int(d), N=n_docs) if d else 0.0 for d in uniq], np.float64)
        idf[:] = values[inverse]
        avg = np.array(postings.doc_len).mean() if n_docs else np.float64(0.0)
        shift = None
        if method in ("bm25l", "bm25+"):  # bm25s stores scores less the non-occurrence score
            zero = tfc_fn(tf_array=0, l_d=avg, l_avg=avg, k1=k1, b=b, delta=delta)
            shift = (values[inverse] * zero).astype(np.float32)
        self.w = np.empty(len(postings.docs), np.float32)
        for a in range(0, len(self.w), BLOCK_POSTINGS):  # elementwise: blocks change no bit
            z = min(a + BLOCK_POSTINGS, len(self.w))
            l_d = postings.doc_len[postings.docs[a:z]]
            term = postings.term_of_posting(a, z)  # per block: no int32 array of every posting
            tfc = tfc_fn(tf_array=postings.tf[a:z], l_d=l_d, l_avg=avg, k1=k1, b=b, delta=delta)
            w = idf[term] * tfc
            if shift is not None:
                w = w - shift[term]
            self.w[a:z] = w

    def weight(self, postings: Postings, t: int, n: int) -> np.ndarray:
        a, z = postings.indptr[t], postings.indptr[t + 1]
        w = self.w[a:z].astype(np.float64)
        return w * n if n != 1 else w


# -- Lucene ---------------------------------------------------------------------------------------------


def _long_to_int4(i: int) -> int:
    """Lucene ``SmallFloat.longToInt4``: a float-like code keeping the 4 most significant bits."""
    bits = i.bit_length()
    if bits < 4:
        return i
    shift = bits - 4
    return ((i >> shift) & 0x07) | ((shift + 1) << 3)


def _int4_to_long(code: int) -> int:
    bits, shift = code & 0x07, (code >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


NUM_FREE_VALUES = 255 - _long_to_int4(2**31 - 1)
"""Lengths below this (24) are stored exactly; larger ones keep 4 significant bits."""


def int_to_byte4(i: int) -> int:
    """Lucene ``SmallFloat.intToByte4`` (as an unsigned byte): how a document length is stored."""
    return i if i < NUM_FREE_VALUES else NUM_FREE_VALUES + _long_to_int4(i - NUM_FREE_VALUES)


def byte4_to_int(b: int) -> int:
    """Lucene ``SmallFloat.byte4ToInt``: the length a stored byte decodes to."""
    return b if b < NUM_FREE_VALUES else NUM_FREE_VALUES + _int4_to_long(b - NUM_FREE_VALUES)


LENGTH_TABLE = np.asarray([byte4_to_int(i) for i in range(256)], np.float32)


def length_bytes(doc_len: np.ndarray) -> np.ndarray:
    uniq, inverse = np.unique(doc_len, return_inverse=True)
    return np.asarray([int_to_byte4(int(n)) for n in uniq], np.int64)[inverse]


class LuceneWeights:
    """Lucene ``BM25Similarity`` weights (module docstring), float32 operation for float32 operation."""

    def __init__(self, postings: Postings, *, k1: float, b: float) -> None:
        f32 = np.float32
        doc_count = int((postings.doc_len > 0).sum())
        avgdl = f32(postings.doc_len.sum() / doc_count) if doc_count else f32(1)
        k1f, bf = f32(k1), f32(b)
        cache = (f32(1) / (k1f * ((f32(1) - bf) + bf * LENGTH_TABLE / avgdl))).astype(f32)
        df = postings.df().astype(np.float64)
        self.idf = np.log(1 + (doc_count - df + 0.5) / (df + 0.5)).astype(f32)
        self.norm_inverse = cache[length_bytes(postings.doc_len)]  # per document
        self.tfn = np.empty(len(postings.docs), f32)
        self.w = np.empty(len(postings.docs), f32)
        for a in range(0, len(self.w), BLOCK_POSTINGS):  # elementwise: blocks change no bit
            z = min(a + BLOCK_POSTINGS, len(self.w))
            self.tfn[a:z] = (postings.tf[a:z] * self.norm_inverse[postings.docs[a:z]]).astype(
                f32
            )  # freq * normInverse
            idf = self.idf[postings.term_of_posting(a, z)]
            self.w[a:z] = (idf - idf / (f32(1) + self.tfn[a:z])).astype(f32)

    def weight(self, postings: Postings, t: int, n: int) -> np.ndarray:
        a, z = postings.indptr[t], postings.indptr[t + 1]
        if n == 1:
            return self.w[a:z].astype(np.float64)
        w = np.float32(n) * self.idf[t]
        return (w - w / (np.float32(1) + self.tfn[a:z])).astype(np.float64)


# -- persistence ----------------------------------------------------------------------------------------


INDEX_FILES = ("postings.npz", "vocab.json")
"""The index's data files; each has a ``.sha256`` checksum checked on load."""


def save(folder: Path, postings: Postings, vocab: dict[str, int]) -> None:
    """Write the postings and vocabulary into ``folder`` atomically (a temporary sibling, then a rename)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        np.savez(tmp / "postings.npz", indptr=postings.indptr, docs=postings.docs, tf=postings.tf,
                 doc_len=postings.doc_len)  # fmt: skip
        terms = sorted(vocab, key=vocab.__getitem__)
        (tmp / "vocab.json").write_text(json.dumps(terms, ensure_ascii=False), encoding="utf-8")
        for name in INDEX_FILES:
            write_checksum(tmp / name)
        (tmp / "index.json").write_text(json.dumps({"format": FORMAT, "n_docs": postings.n_docs}))
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def load(folder: Path) -> tuple[Postings, dict[str, int]] | None:
    """The saved index in ``folder``, or ``None`` if absent, of another format, or damaged.

    A file whose sha256 differs from its checksum (an edited ``vocab.json`` once scored every query
    0.00) or that cannot be parsed (a truncated ``postings.npz``: ``BadZipFile``) is not an index: one
    line says so and the caller rebuilds it.
    """
    meta = folder / "index.json"
    if not meta.is_file():
        return None
    try:
        if json.loads(meta.read_text(encoding="utf-8")).get("format") != FORMAT:
            return None
        for name in INDEX_FILES:
            if why := checksum_problem(folder / name):
                cache_rebuild_notice("BM25 index", folder, f"{name} {why}")
                return None
        with np.load(folder / "postings.npz", allow_pickle=False) as z:
            postings = Postings(z["indptr"], z["docs"], z["tf"], z["doc_len"])
        terms = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
    except (
        OSError,
        ValueError,
        KeyError,
        AttributeError,
        zipfile.BadZipFile,
        EOFError,
        RecursionError,
    ) as exc:
        cache_rebuild_notice("BM25 index", folder, f"cannot be read ({type(exc).__name__}: {exc})")
        return None
    return postings, {t: i for i, t in enumerate(terms)}
