"""spaCy sentence splitting and dependency parses, batched and cached on disk.

Parsing dominates the builders' CPU time, and the same sentences are parsed by several stages
(users, profiles, query encoding), so results are cached in one SQLite file under
``settings.PQB_CACHE_DIR`` keyed by (kind, spaCy model id, :func:`parse_code_id`, text hash). Cached values are plain JSON,
so a cache hit returns exactly what a fresh parse would have.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from pqb.builders.errors import TextTooLongError
from pqb.builders.executor import Executor
from pqb.builders.nlp import (
    PARSE_DISABLE,
    SENTS_DISABLE,
    SPACY_MAX_LENGTH,
    installed_spacy_model_id,
    load_spacy,
    spacy_model_id,
)
from pqb.builders.text import MAX_TEXT_CHARS
from pqb.builders.workdir import library_versions
from pqb.dataset import settings
from pqb.dataset.io import cache_rebuild_notice, sha256_bytes, stable_hash
from pqb.dataset.progress import bar

BATCH_SIZE = 256


class Parsed(NamedTuple):
    """One parsed text: coarse POS, dependency label and absolute head index per token."""

    pos: tuple[str, ...]
    dep: tuple[str, ...]
    head: tuple[int, ...]


def open_cache_db(path: Path, create: str, what: str) -> sqlite3.Connection:
    """A connection to the SQLite cache at ``path`` with its table created.

    A file that is not a database or is damaged (``DatabaseError``, not a lock's ``OperationalError``)
    is a cache, not data: it is removed with one line and started afresh, never a traceback.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    for attempt in (0, 1):
        con = sqlite3.connect(str(path), timeout=60)
        try:
            con.execute(create)
            con.commit()
            return con
        except sqlite3.DatabaseError as exc:
            con.close()
            if isinstance(exc, sqlite3.OperationalError) or attempt:
                raise
            cache_rebuild_notice(what, path, f"is not a readable SQLite database ({exc})")
            for p in (path, path.with_name(path.name + "-journal"), path.with_name(path.name + "-wal")):
                p.unlink(missing_ok=True)
    raise AssertionError("unreachable")


def value_checksum(value: str) -> str:
    """The per-row checksum of a cached value: a row whose value no longer matches is recomputed."""
    return sha256_bytes(value.encode("utf-8"))[:16]


CACHE_COUNTS: Counter[str] = Counter()
"""Distinct keys looked up (``<cache> lookups``) and found (``<cache> hits``) in this process, per
cache: ``sents`` and ``parse`` (the parse cache) and ``correction`` (the correction cache). Read by
``bench/bench_builders.py`` to report hit rates; a stage whose lookups run in worker processes adds
theirs here (see :func:`count_cache`)."""


def count_cache(name: str, lookups: int, hits: int) -> None:
    """Record ``lookups`` distinct keys looked up in cache ``name`` and ``hits`` of them found."""
    CACHE_COUNTS[f"{name} lookups"] += lookups
    CACHE_COUNTS[f"{name} hits"] += hits


class ParseCache:
    """A key → JSON store in SQLite (safe across processes; ``None`` path disables caching).

    Each row carries the checksum of its value, checked on every read: an edited or damaged row is
    parsed again (one line says how many), so a cache hit is always what a fresh parse gives."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        if path is not None:
            self._conn = open_cache_db(
                path,
                "CREATE TABLE IF NOT EXISTS parses_v2 (key TEXT PRIMARY KEY, value TEXT NOT NULL, sha TEXT NOT NULL)",
                "parse cache",
            )

    @classmethod
    def default(cls) -> ParseCache:
        return cls(Path(settings.PQB_CACHE_DIR) / "parses.sqlite")

    def get_many(self, keys: Sequence[str]) -> dict[str, Any]:
        if self._conn is None or not keys:
            return {}
        out: dict[str, Any] = {}
        bad = 0
        for i in range(0, len(keys), 500):
            chunk = list(keys[i : i + 500])
            q = "SELECT key, value, sha FROM parses_v2 WHERE key IN (" + ",".join("?" * len(chunk)) + ")"
            for k, v, sha in self._conn.execute(q, chunk):
                if value_checksum(v) != sha:
                    bad += 1
                    continue
                try:
                    out[k] = json.loads(v)
                except ValueError:
                    bad += 1
        if bad:
            cache_rebuild_notice("parse cache", self.path, f"has {bad} row(s) that fail their checksum")
        return out

    def put_many(self, items: dict[str, Any]) -> None:
        if self._conn is None or not items:
            return
        with self._conn:
            self._conn.executemany(
                "INSERT OR REPLACE INTO parses_v2 (key, value, sha) VALUES (?, ?, ?)",
                [(k, text, value_checksum(text)) for k, v in items.items()
                 for text in [json.dumps(v, separators=(",", ":"))]],
            )  # fmt: skip

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


@functools.lru_cache(maxsize=1)
def parse_code_id() -> str:
    """Hash of this module's source (the ``Doc`` -> cached value conversions, :func:`_sents` and
    :func:`_parse`) and of the spaCy library's version: part of every parse-cache key beside the
    pipeline's model id.

    Why: the model id names the weights, not the code that reads a ``Doc``. The users stage reruns after
    such an edit (its fingerprint hashes the builders' code) but was served the old code's values from
    this cache, so ``sentences.parquet`` did not change (1295 sentences where the edit gives 1273)."""
    return stable_hash(sha256_bytes(Path(__file__).read_bytes()), library_versions(("spacy",)), length=16)


def _check_lengths(texts: Sequence[str], max_length: int) -> None:
    """Fail before parsing, with a fix, rather than inside spaCy's batch loop."""
    longest = max(texts, key=len, default="")
    if len(longest) > max_length:
        raise TextTooLongError(
            f"a text of {len(longest)} characters is over spaCy's max_length ({max_length}): "
            f"{longest[:40]!r}...; ingest cuts review texts to {MAX_TEXT_CHARS} characters, so rerun "
            "`pqb-build ingest --force` on this work directory"
        )


PARSE_CHUNK = 2000
"""Texts per parse chunk: the unit of work handed to the executor and of each parse-cache write, so a
killed stage loses at most this many parses and a rerun parses only what the cache lacks."""


def _parse_chunk(job: tuple[str, list[str], int]) -> list[Any]:
    """One chunk in whichever process the executor chose: spaCy loads once per process (cached)."""
    kind, texts, batch_size = job
    nlp = load_spacy(disable=_DISABLE[kind])
    return [_CONVERT[kind](doc) for doc in nlp.pipe(texts, batch_size=batch_size)]


def _run(
    kind: str,
    texts: Sequence[str],
    *,
    nlp: Any | None,
    cache: ParseCache | None,
    batch_size: int,
    desc: str,
    executor: Executor | None = None,
) -> list[Any]:
    """Cached parses of ``texts``; the missing ones are parsed in chunks, each cached when it is done.

    With an ``executor`` of more than one worker the chunks are parsed there (``nlp`` must then be
    the default pipeline, which each worker loads itself); otherwise in this process with ``nlp``,
    loaded only when some text is not cached.
    """
    cache = cache if cache is not None else ParseCache.default()
    model = spacy_model_id(nlp) if nlp is not None else installed_spacy_model_id()
    unique = sorted(set(texts))
    keys = {t: stable_hash(kind, model, parse_code_id(), t, length=24) for t in unique}
    found = cache.get_many(list(keys.values()))
    count_cache(kind, len(unique), len(found))
    todo = [t for t in unique if keys[t] not in found]
    _check_lengths(todo, nlp.max_length if nlp is not None else SPACY_MAX_LENGTH)
    chunks = [todo[i : i + PARSE_CHUNK] for i in range(0, len(todo), PARSE_CHUNK)]
    if executor is not None and executor.workers > 1:
        done = executor.map(_parse_chunk, [(kind, c, batch_size) for c in chunks])
    else:
        pipe = nlp if nlp is not None else (load_spacy(disable=_DISABLE[kind]) if chunks else None)
        done = ([_CONVERT[kind](d) for d in pipe.pipe(c, batch_size=batch_size)] for c in chunks)
    for chunk, values in bar(zip(chunks, done, strict=True), total=len(chunks), desc=desc, unit="chunk",
                             leave=False):  # fmt: skip
        new = {keys[t]: v for t, v in zip(chunk, values, strict=True)}
        cache.put_many(new)
        found.update(new)
    return [found[keys[t]] for t in texts]


def _sents(doc: Any) -> list[list[Any]]:
    return [[s.text.strip(), sum(1 for t in s if not t.is_space)] for s in doc.sents]


def _parse(doc: Any) -> list[list[Any]]:
    return [[t.pos_ for t in doc], [t.dep_ for t in doc], [t.head.i for t in doc]]


_CONVERT = {"sents": _sents, "parse": _parse}
_DISABLE = {"sents": SENTS_DISABLE, "parse": PARSE_DISABLE}
"""The components each kind's default pipeline leaves out (:mod:`pqb.builders.nlp`)."""


def doc_of_parse(nlp: Any, text: str, parsed: Parsed) -> Any:
    """``text`` as a spaCy ``Doc`` carrying ``parsed`` (``nlp``'s tokenizer gives the tokens): the POS,
    labels and heads of ``nlp(text)`` without running its models, when ``parsed`` came from the same
    pipeline. Components that set nothing else (a lemmatizer's lemmas aside) see the same doc."""
    from spacy.tokens import Doc

    toks = nlp.make_doc(text)
    return Doc(nlp.vocab, words=[t.text for t in toks], spaces=[bool(t.whitespace_) for t in toks],
               pos=list(parsed.pos), deps=list(parsed.dep), heads=list(parsed.head))  # fmt: skip


def split_sentences(
    texts: Sequence[str],
    *,
    nlp: Any | None = None,
    cache: ParseCache | None = None,
    batch_size: int = BATCH_SIZE,
    executor: Executor | None = None,
) -> list[list[tuple[str, int]]]:
    """spaCy (parser-based) sentence boundaries of each text: ``[(sentence, n_tokens), ...]`` per text."""
    raw = _run(
        "sents", texts, nlp=nlp, cache=cache, batch_size=batch_size, desc="sentences", executor=executor
    )
    return [[(s, int(n)) for s, n in r] for r in raw]


def parse_texts(
    texts: Sequence[str],
    *,
    nlp: Any | None = None,
    cache: ParseCache | None = None,
    batch_size: int = BATCH_SIZE,
    executor: Executor | None = None,
) -> list[Parsed]:
    """Parse each text on its own (a sentence or a query) → :class:`Parsed` (POS, dep, head index)."""
    raw = _run("parse", texts, nlp=nlp, cache=cache, batch_size=batch_size, desc="parsing", executor=executor)
    return [Parsed(tuple(p), tuple(d), tuple(int(h) for h in hs)) for p, d, hs in raw]
