"""Personal writing-error profiles: recover each user's slips from their PROFILE sentences and model them.

Pipeline (docs/design.md §9, with the authors' bugs fixed: §11): correct each sentence (:mod:`pqb.builders.writing_errors.detection`),
align original and correction with ERRANT (the spaCy pipeline passed explicitly), keep the word-level
R/M/U edits, classify each replaced word into a mechanism (:func:`pqb.builders.writing_errors.mechanisms.classify`), and
count, per user and per syntactic context (:mod:`pqb.builders.writing_errors.context`), how often a token was
slipped on, by which mechanism, and where in the word (:func:`pqb.dataset.schema.edit_position`). Held-out sentences are never read here; the error-sampling study
uses them.

Users without any recovered character-level slip keep a profile: their rate is shrunk toward the
global rate (so it ends below it) and their mechanism distribution equals the global one. This
replaces the authors' inverted fallback (rate 0.5, uniform mechanisms for the cleanest writers).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pqb.builders.config import BuildConfig, StageStats
from pqb.builders.errors import MissingInputError
from pqb.builders.parses import CACHE_COUNTS, Parsed, doc_of_parse, parse_texts
from pqb.builders.workdir import (
    EDITS,
    PRODUCTS,
    PROFILES,
    SENTENCES,
    USERS,
    WorkDir,
    hash_inputs,
    library_versions,
    read_parquet,
    write_parquet,
)
from pqb.builders.writing_errors.context import (
    BACKOFF_LEVELS,
    Smoothing,
    add_token,
    context_rate,
    doc_signatures,
    global_rate,
    new_counts,
)
from pqb.builders.writing_errors.detection import CORRECTOR_LIBRARIES
from pqb.builders.writing_errors.mechanisms import classify
from pqb.dataset.io import atomic_path
from pqb.dataset.progress import bar
from pqb.dataset.schema import CHAR_MECHANISMS, POSITIONS, SURFACE_MECHANISMS, edit_position

log = logging.getLogger(__name__)

PROFILES_VERSION = 3
"""3: per-user and global ``positions`` counts (where in the word each slip falls)."""
EVIDENCE_FLOOR = 3
"""Users with fewer of their own recovered slips are flagged ``backoff`` (their profile is mostly the
population's prior); configurable per build (``pqb-build pair --evidence-floor``)."""
DOSES: tuple[int, ...] = (1, 2, 3)
"""Slips per slipped sentence, capped at ``MAX_EDITS``: the support of the personal dose."""


def dirichlet_shrink(
    counts: Mapping[str, float], prior: Mapping[str, float], strength: float
) -> dict[str, float]:
    """Posterior mean of a categorical distribution under a Dirichlet prior ``strength * prior``:
    ``p_k = (n_k + strength * prior_k) / (N + strength)`` over the keys of ``prior``. With no counts it is
    the prior; with many it is the user's own frequencies. ``strength`` is the prior's weight in
    pseudo-observations (documented per use in :class:`Smoothing`)."""
    n = sum(float(counts.get(k, 0)) for k in prior)
    return {k: (float(counts.get(k, 0)) + strength * float(prior[k])) / (n + strength) for k in prior}


EDITS_SCHEMA = pa.schema(
    [
        ("user_id", pa.string()),
        ("sentence_id", pa.string()),
        ("token_index", pa.int32()),
        ("start_char", pa.int32()),
        ("original", pa.string()),
        ("corrected", pa.string()),
        ("operation", pa.string()),
        ("errant_type", pa.string()),
        ("mechanism", pa.string()),
        ("char_level", pa.bool_()),
        ("position", pa.string()),
        *[(f"sig_{lvl}", pa.string()) for lvl in BACKOFF_LEVELS],
    ]
)


# ------------------------------------------------------------------------------------------------
# The profile model
# ------------------------------------------------------------------------------------------------


@dataclass
class ErrorProfiles:
    """Per-user and global slip counts plus the smoothing that turns them into probabilities.

    ``users[uid]`` and ``glob`` are count records (:func:`pqb.builders.writing_errors.context.new_counts`) with
    extra ``mechanisms`` (character-level counts), ``n_surface`` and ``n_other`` fields.
    """

    glob: dict[str, Any]
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    smoothing: Smoothing = field(default_factory=Smoothing)
    meta: dict[str, Any] = field(default_factory=dict)

    # -- probabilities ---------------------------------------------------------------------------

    @property
    def global_rate(self) -> float:
        return global_rate(self.glob)

    def user(self, user_id: str | None) -> dict[str, Any] | None:
        """A user's counts; ``None`` for the global model or for users never profiled."""
        return None if user_id is None else self.users.get(user_id)

    def rate(self, user_id: str | None, sigs: Mapping[str, str]) -> float:
        """Smoothed slip probability of a token with signatures ``sigs`` (``None``: global model)."""
        return context_rate(self.glob, self.user(user_id), sigs, self.smoothing)

    def rates(self, user_id: str | None, sig_list: Sequence[Mapping[str, str]]) -> np.ndarray:
        return np.array([self.rate(user_id, s) for s in sig_list], dtype=float)

    def global_mechanism_probs(self) -> dict[str, float]:
        beta = self.smoothing.global_mechanism_edits
        counts = self.glob["mechanisms"]
        total = sum(counts.get(m, 0) for m in CHAR_MECHANISMS) + beta * len(CHAR_MECHANISMS)
        return {m: (counts.get(m, 0) + beta) / total for m in CHAR_MECHANISMS}

    def mechanism_probs(self, user_id: str | None) -> dict[str, float]:
        """P(mechanism | user): the user's counts shrunk toward the population's distribution
        (:func:`dirichlet_shrink`, strength ``Smoothing.mechanism_edits``); a user without counts gets the
        population's distribution through the same formula, not through a separate fall-back."""
        g = self.global_mechanism_probs()
        u = self.user(user_id)
        return dirichlet_shrink(u["mechanisms"] if u else {}, g, self.smoothing.mechanism_edits)

    def global_dose_probs(self) -> dict[str, float]:
        """Population distribution of slips per slipped sentence (1, 2, 3+), add-β smoothed."""
        beta = self.smoothing.global_mechanism_edits
        counts = self.glob.get("doses", {})
        total = sum(counts.get(str(d), 0) for d in DOSES) + beta * len(DOSES)
        return {str(d): (counts.get(str(d), 0) + beta) / total for d in DOSES}

    def dose_probs(self, user_id: str | None) -> dict[str, float]:
        """P(dose | user): the user's slips-per-slipped-sentence histogram shrunk toward the population's
        (strength ``Smoothing.dose_sentences``)."""
        u = self.user(user_id)
        return dirichlet_shrink(
            (u or {}).get("doses", {}), self.global_dose_probs(), self.smoothing.dose_sentences
        )

    def global_position_probs(self) -> dict[str, float]:
        """Population distribution of where in the word a slip falls (``schema.POSITIONS``), add-β smoothed."""
        beta = self.smoothing.global_mechanism_edits
        counts = self.glob.get("positions", {})
        total = sum(counts.get(k, 0) for k in POSITIONS) + beta * len(POSITIONS)
        return {k: (counts.get(k, 0) + beta) / total for k in POSITIONS}

    def position_probs(self, user_id: str | None) -> dict[str, float]:
        """P(position in the word | user): the user's first / interior / last counts shrunk toward the
        population's (:func:`dirichlet_shrink`, strength ``Smoothing.position_edits``). One distribution per
        user, not per mechanism: a user has a handful of slips, and the population's mechanism x position
        table is too sparse to condition on (docs/design.md §9)."""
        u = self.user(user_id)
        return dirichlet_shrink(
            (u or {}).get("positions", {}), self.global_position_probs(), self.smoothing.position_edits
        )

    def with_population(self, extra: Mapping[str, Mapping[str, int]]) -> ErrorProfiles:
        """These profiles with ``extra`` mechanism and position counts added to the population's (the
        calibration slips, :func:`pqb.builders.writing_errors.channel.population_counts`): the prior every
        user is shrunk toward then rests on real typing slips as well as the detected ones (issue 29).
        Users' own counts, rates and doses are unchanged."""
        glob = dict(self.glob)
        for key in ("mechanisms", "positions"):
            merged = Counter(self.glob.get(key, {}))
            merged.update(extra.get(key, {}))
            glob[key] = dict(merged)
        return ErrorProfiles(glob, self.users, self.smoothing, {**self.meta, "population_extra": dict(extra)})

    def evidence(self, user_id: str | None) -> int:
        """The number of the user's own recovered character-level slips behind their profile."""
        u = self.user(user_id)
        return int(u["n_char"]) if u else 0

    def summary(self, user_id: str) -> dict[str, Any]:
        """Row fields of the ``d-users`` config: token and slip counts, rate, mechanism distribution."""
        u = self.users.get(user_id) or new_counts() | {"mechanisms": {}}
        probs = self.mechanism_probs(user_id)
        return {
            "n_tokens": int(u["n_tokens"]),
            "n_char_errors": int(u["n_char"]),
            "error_rate": float(
                (u["n_char"] + self.smoothing.user_tokens * self.global_rate)
                / (u["n_tokens"] + self.smoothing.user_tokens)
            ),
            "mechanisms": [
                {"mechanism": m, "count": int(u["mechanisms"].get(m, 0)), "prob": float(probs[m])}
                for m in CHAR_MECHANISMS
            ],
        }

    # -- persistence -----------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "version": PROFILES_VERSION,
            "smoothing": self.smoothing.to_dict(),
            "meta": self.meta,
            "global": self.glob,
            "users": self.users,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ErrorProfiles:
        if obj.get("version") != PROFILES_VERSION:
            raise ValueError(f"profiles version {obj.get('version')!r}, expected {PROFILES_VERSION}")
        return cls(
            glob=dict(obj["global"]),
            users={k: dict(v) for k, v in obj["users"].items()},
            smoothing=Smoothing.from_dict(obj.get("smoothing", {})),
            meta=dict(obj.get("meta", {})),
        )

    def save(self, path: Path) -> None:
        with ProfilesWriter(path) as out:
            out.add_users(self.users)
            out.finish(self.glob, self.smoothing, self.meta)

    @staticmethod
    def path_of(path: Path | str | WorkDir) -> Path:
        """The ``profiles.json`` of a file, a domain work dir or a :class:`WorkDir`; a clear error if absent."""
        p = Path(path.path if isinstance(path, WorkDir) else path)
        if p.is_dir():
            p = p / PROFILES
        if not p.is_file():
            raise MissingInputError(f"No error profiles at {p}; run `pqb-build errors` first.")
        return p

    @classmethod
    def load(cls, path: Path | str, users: Iterable[str] | None = None) -> ErrorProfiles:
        """Load ``profiles.json`` from a file, a domain work dir, or a :class:`WorkDir`.

        ``users``: keep only these users' counts (the global model is always whole). Why: at a million
        reviews the file holds gigabytes of per-user counts while a stage needs its linked users only;
        the file is then read as a stream (:func:`_read_profiles`), one user at a time."""
        p = cls.path_of(path)
        if users is None:
            return cls.from_json(json.loads(p.read_text(encoding="utf-8")))
        return cls.from_json(_read_profiles(p, set(users)))


PROFILES_WINDOW = 1 << 24
"""Characters of ``profiles.json`` held at a time by :func:`_read_profiles` (grown for a larger value)."""


class _JsonStream:
    """Successive JSON values and punctuation of one file, decoded through a sliding window."""

    def __init__(self, f: Any, window: int) -> None:
        self.f, self.window, self.buf, self.pos, self.eof = f, window, "", 0, False
        self.dec = json.JSONDecoder()

    def _more(self) -> None:
        chunk = self.f.read(max(self.window, len(self.buf) - self.pos))  # at least double a long value
        self.buf, self.pos, self.eof = self.buf[self.pos :] + chunk, 0, not chunk

    def char(self) -> str:
        """The next non-blank character, consumed."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in " \t\r\n":
                self.pos += 1
            if self.pos < len(self.buf):
                self.pos += 1
                return self.buf[self.pos - 1]
            if self.eof:
                raise ValueError("profiles.json ends early")
            self._more()

    def peek(self) -> str:
        c = self.char()
        self.pos -= 1
        return c

    def value(self) -> Any:
        self.peek()  # skip blanks
        while True:
            try:
                obj, end = self.dec.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError:
                if self.eof:
                    raise
                self._more()
                continue
            if end == len(self.buf) and not self.eof:  # a number may go on past the window
                self._more()
                continue
            self.pos = end
            return obj


def _read_profiles(path: Path, wanted: set[str]) -> dict[str, Any]:
    """The JSON object of ``profiles.json`` with ``users`` restricted to ``wanted``, read one value at a
    time: memory is the window, the global model and the wanted users."""
    out: dict[str, Any] = {}
    with path.open(encoding="utf-8") as f:
        st = _JsonStream(f, PROFILES_WINDOW)
        if st.char() != "{":
            raise ValueError(f"{path}: not a JSON object")
        while st.peek() != "}":
            key = st.value()
            if st.char() != ":":
                raise ValueError(f"{path}: malformed JSON after key {key!r}")
            if key != "users":
                out[key] = st.value()
            else:
                if st.char() != "{":
                    raise ValueError(f"{path}: users is not an object")
                users: dict[str, Any] = {}
                while st.peek() != "}":
                    uid = st.value()
                    if st.char() != ":":
                        raise ValueError(f"{path}: malformed JSON after user {uid!r}")
                    counts = st.value()
                    if uid in wanted:
                        users[uid] = counts
                    if st.peek() == ",":
                        st.char()
                st.char()
                out["users"] = users
            if st.peek() == ",":
                st.char()
    return out


def _dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)


class ProfilesWriter:
    """Writes ``profiles.json`` a few users at a time, with the bytes of
    ``atomic_write_json(path, profiles.to_json(), indent=None)``.

    Why: at a million reviews the per-user counts are gigabytes as Python dicts (the file alone is
    ~1.5 GB), so the stage serialises each chunk's users as it arrives (into a temporary spool file) and
    keeps none of them. Users must come in increasing ``user_id`` order, the order ``sort_keys`` gives;
    the global counts, known only at the end, are written by :meth:`finish`, which assembles the file
    atomically. Use as a context manager, so the spool is removed however the stage ends.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._spool = tempfile.TemporaryFile("w+", encoding="utf-8", dir=self.path.parent)  # noqa: SIM115 (closed by __exit__)
        self._last: str | None = None

    def __enter__(self) -> ProfilesWriter:
        return self

    def __exit__(self, *_: object) -> None:
        self._spool.close()

    def add_users(self, users: Mapping[str, Mapping[str, Any]]) -> None:
        for uid in sorted(users):
            if self._last is not None and uid <= self._last:
                raise ValueError(
                    f"profiles: user {uid!r} after {self._last!r}; users must come in sorted order"
                )
            self._spool.write(f"{', ' if self._last is not None else ''}{_dumps(uid)}: {_dumps(users[uid])}")
            self._last = uid

    def finish(self, glob: Mapping[str, Any], smoothing: Smoothing, meta: Mapping[str, Any]) -> None:
        rest = {"global": glob, "meta": meta, "smoothing": smoothing.to_dict(), "version": PROFILES_VERSION}
        with atomic_path(self.path) as tmp, tmp.open("w", encoding="utf-8") as out:
            for i, key in enumerate(sorted([*rest, "users"])):
                out.write(f"{'{' if i == 0 else ', '}{_dumps(key)}: ")
                if key == "users":
                    out.write("{")
                    self._spool.seek(0)
                    shutil.copyfileobj(self._spool, out)
                    out.write("}")
                else:
                    out.write(_dumps(rest[key]))
            out.write("}\n")


def empty_counts() -> dict[str, Any]:
    return new_counts() | {"mechanisms": {}, "doses": {}, "positions": {}, "n_surface": 0, "n_other": 0}


# ------------------------------------------------------------------------------------------------
# Recovering edits
# ------------------------------------------------------------------------------------------------


def recover_edits(
    texts: Sequence[str],
    corrected: Sequence[str],
    annotator: Any,
    *,
    parses: Sequence[Parsed] | None = None,
    batch_size: int = 128,
) -> tuple[list[Any], list[list[dict[str, Any]]]]:
    """Parse every original sentence with the annotator's own pipeline (lemmas included, see
    ``ALIGN_DISABLE``) and ERRANT-align the changed ones with their correction.

    With ``parses`` (each text's standalone parse, :func:`~pqb.builders.parses.parse_texts`, which the
    profiles stage has already cached), only the changed sentences go through the pipeline: the others'
    docs are rebuilt from their parse, since the lemmatizer the annotator adds changes no POS, label or
    head, and nothing but ERRANT reads a lemma.

    Returns the parsed original docs and, per sentence, its word-level edits: ``token_index`` (first
    original token), ``original``/``corrected`` surface strings, ``operation`` (R/M/U),
    ``errant_type`` and ``mechanism`` (``classify`` of a replaced word, else ``None``).
    """
    nlp = annotator.nlp
    changed = [i for i, (t, c) in enumerate(zip(texts, corrected, strict=True)) if t != c]
    if parses is None:
        docs = list(bar(nlp.pipe(texts, batch_size=batch_size), total=len(texts), desc="parse", leave=False))
    else:
        docs = [doc_of_parse(nlp, t, p) for t, p in zip(texts, parses, strict=True)]
        for i, doc in zip(changed, nlp.pipe([texts[i] for i in changed], batch_size=batch_size), strict=True):
            docs[i] = doc
    cor_docs = dict(
        zip(changed, nlp.pipe([corrected[i] for i in changed], batch_size=batch_size), strict=True)
    )
    out: list[list[dict[str, Any]]] = [[] for _ in texts]
    for i in bar(changed, desc="errant", leave=False):
        orig, cor = docs[i], cor_docs[i]
        for e in annotator.annotate(orig, cor):
            op = e.type.split(":", 1)[0]
            if op not in {"R", "M", "U"}:
                continue
            o_text = orig[e.o_start : e.o_end].text
            c_text = cor[e.c_start : e.c_end].text
            mech = classify(o_text, c_text) if op == "R" and e.o_end - e.o_start == 1 else None
            tok_i = e.o_start if e.o_start < len(orig) else max(len(orig) - 1, 0)
            out[i].append(
                {
                    "token_index": tok_i,
                    "start_char": orig[tok_i].idx if len(orig) else 0,
                    "original": o_text,
                    "corrected": c_text,
                    "operation": op,
                    "errant_type": e.type,
                    "mechanism": mech,
                }
            )
    return docs, out


def build_profiles(
    user_ids: Sequence[str],
    docs: Sequence[Any],
    edits: Sequence[Sequence[Mapping[str, Any]]],
    smoothing: Smoothing | None = None,
    sentence_ids: Sequence[str] | None = None,
) -> tuple[ErrorProfiles, list[dict[str, Any]]]:
    """Count tokens and slips per user and context; return the profiles and the flat edit rows."""
    glob = empty_counts()
    users: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    sids = sentence_ids if sentence_ids is not None else [str(i) for i in range(len(docs))]
    for uid, sid, doc, sent_edits in zip(user_ids, sids, docs, edits, strict=True):
        u = users.setdefault(uid, empty_counts())
        sigs = doc_signatures(doc)
        slipped: dict[int, tuple[str, str]] = {}
        for e in sent_edits:
            mech = e["mechanism"]
            tok_ok = e["token_index"] < len(doc) and doc[e["token_index"]].is_alpha
            char_level = mech in CHAR_MECHANISMS and tok_ok
            position = edit_position(e["corrected"], e["original"]) if char_level else None
            if char_level:
                slipped[e["token_index"]] = (mech, position)
            elif mech in SURFACE_MECHANISMS:
                u["n_surface"] += 1
                glob["n_surface"] += 1
            else:
                u["n_other"] += 1
                glob["n_other"] += 1
            s = sigs[e["token_index"]] if e["token_index"] < len(sigs) else dict.fromkeys(BACKOFF_LEVELS, "")
            rows.append(
                {"user_id": uid, "sentence_id": sid, **e, "char_level": char_level, "position": position}
                | {f"sig_{lvl}": s[lvl] for lvl in BACKOFF_LEVELS}
            )
        if slipped:
            d = str(min(len(slipped), DOSES[-1]))
            for rec in (u, glob):
                rec.setdefault("doses", {})
                rec["doses"][d] = rec["doses"].get(d, 0) + 1
        for tok, s in zip(doc, sigs, strict=True):
            if not tok.is_alpha:
                continue
            slip = slipped.get(tok.i)
            add_token(u, s, slip is not None)
            add_token(glob, s, slip is not None)
            if slip is not None:
                for rec in (u, glob):
                    for key, value in zip(("mechanisms", "positions"), slip, strict=True):
                        rec[key][value] = rec[key].get(value, 0) + 1
    return ErrorProfiles(glob=glob, users=users, smoothing=smoothing or Smoothing()), rows


# ------------------------------------------------------------------------------------------------
# The stage
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DomainLexicon:
    """What the slip detector must accept in one domain (see :func:`domain_lexicon`)."""

    words: frozenset[str]
    names: frozenset[str]
    habitual: frozenset[str]


_LEX_WORD = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)?")


LEXICON_BATCH = 65_536
"""Sentences converted to Python at a time while counting the domain lexicon."""


def domain_lexicon(
    sentences: pa.Table, products: pa.Table | None, min_users: int = 3, by_user: np.ndarray | None = None
) -> DomainLexicon:
    """The domain's vocabulary for the slip detector.

    ``words``: every word of product titles, brands, attribute values and documents, and every word that at
    least ``min_users`` different users wrote (shared vocabulary, not a private slip). ``names``: words
    written capitalised in mid-sentence, or capitalised at least twice, or capitalised in a title/brand
    (names of games, artists, characters). ``habitual``: forms one user wrote at least twice.

    ``sentences`` is a table with ``user_id`` and ``text`` columns, in any row order. Its rows are read
    user by user (:data:`LEXICON_BATCH` rows converted at a time), so memory is the vocabulary plus one
    user's words, not users x words: at a million reviews a per-(user, word) counter held gigabytes.
    ``by_user``: the indices of the rows to read, grouped by user (the stage passes a slice of its own
    sort, so neither a sort nor a filtered copy is made here); by default every row, sorted here on
    ``user_id``. Every count is order-free, so the lexicon does not depend on the rows' order.
    """
    vocab: set[str] = set()
    names: set[str] = set()
    if products is not None:
        for col in ("title", "brand", "text"):
            if col in products.column_names:
                for v in products.column(col).to_pylist():
                    toks = _LEX_WORD.findall(v or "")
                    vocab.update(w.lower() for w in toks)
                    if col != "text":
                        names.update(w.lower() for w in toks if w[:1].isupper())
        if "attributes" in products.column_names:
            for attrs in products.column("attributes").to_pylist():
                for a in attrs or []:
                    vocab.update(w.lower() for w in _LEX_WORD.findall(a.get("value") or ""))
    writers: Counter[str] = Counter()  # word -> number of users who wrote it
    caps: Counter[str] = Counter()
    mid_caps: set[str] = set()
    habitual: set[str] = set()
    mine: Counter[str] = Counter()  # the current user's words

    def close_user() -> None:
        writers.update(mine.keys())
        habitual.update(w for w, k in mine.items() if k >= 2)
        mine.clear()

    rows = sentences.select(["user_id", "text"])
    order = pa.array(by_user) if by_user is not None else pc.sort_indices(rows, [("user_id", "ascending")])
    current: str | None = None
    for a in range(0, len(order), LEXICON_BATCH):
        part = rows.take(order.slice(a, LEXICON_BATCH))
        for uid, text in zip(
            part.column("user_id").to_pylist(), part.column("text").to_pylist(), strict=True
        ):
            if uid != current:
                close_user()
                current = uid
            for i, w in enumerate(_LEX_WORD.findall(text or "")):
                low = w.lower()
                mine[low] += 1
                if w[:1].isupper() and not w.isupper() and len(w) > 1:
                    caps[low] += 1
                    if i > 0:
                        mid_caps.add(low)
    close_user()
    vocab.update(w for w, k in writers.items() if k >= min_users)
    names.update(mid_caps | {w for w, k in caps.items() if k >= 2})
    return DomainLexicon(frozenset(vocab), frozenset(names), frozenset(habitual))


ERRORS_CHUNK = 2000
"""Profile sentences per chunk of the error-detection map (whole users: a chunk ends at the first user
boundary at or after this many sentences). Chunks are cut the same way whatever the executor, and each
user's counts come from one chunk, so the output does not depend on where the chunks ran."""
SENTENCE_COLUMNS = ("user_id", "sentence_id", "text", "split", "cap_key")
"""The columns of ``sentences.parquet`` the stage reads (the others are never loaded)."""


def _sentence_table(wd: WorkDir) -> tuple[pa.Table, pa.Table | None]:
    sp = wd.path / SENTENCES
    if not sp.is_file():
        raise MissingInputError(f"{sp} does not exist; run `pqb-build users --domain {wd.domain}` first.")
    users = read_parquet(wd.path / USERS) if (wd.path / USERS).is_file() else None
    present = set(pq.read_schema(sp).names)
    return read_parquet(sp, columns=[c for c in SENTENCE_COLUMNS if c in present]), users


def _recorded_corrector_fresh(
    workdir: WorkDir,
    inputs: Sequence[Path],
    config: Callable[[str], dict[str, Any]],
    backend: str,
    digests: Mapping[str, str | None],
) -> StageStats | None:
    """The stage's recorded stats when it is fresh under the corrector id it recorded, else ``None``.

    Why: a corrector's id hashes its configuration and the domain lexicon, which is a function of the
    inputs, and building it reads every sentence (and the symspell word lists). The id depends only on
    the input files, the builders' code, :data:`CORRECTOR_LIBRARIES` and, for a model back-end, the
    checkpoint's weights; the fingerprint covers the first two, and the checkpoint's identity is
    computed now (:func:`~pqb.builders.writing_errors.detection.corrector_id_prefix`: a local folder's
    content digest, a Hub id's cached revision), never taken from the record, so when the libraries are
    the ones recorded and the identity matches, the recorded id is the id, and a fresh stage is
    recognised before any corrector or model is built. A checkpoint replaced at the same path is not.
    """
    from pqb.builders.writing_errors.detection import corrector_id_prefix

    rec = workdir.manifest["stages"].get("errors") or {}
    recorded = str((rec.get("config") or {}).get("backend", ""))
    libs, now = rec.get("libraries") or {}, library_versions(CORRECTOR_LIBRARIES)
    if any(libs.get(k) != now.get(k) for k in CORRECTOR_LIBRARIES):
        return None
    prefix = corrector_id_prefix(backend)
    if prefix is None or not recorded.startswith(prefix):
        return None
    return workdir.stage("errors", inputs, config(recorded), [EDITS, PROFILES], digests=digests).cached(False)


def _add_counts(into: dict[str, Any], other: Mapping[str, Any]) -> None:
    """Add count record ``other`` into ``into`` (ints, ``[n, k]`` cells and nested dicts of them):
    integer sums, so merging chunk records in any grouping gives the one-pass counts exactly."""
    for k, v in other.items():
        if k not in into:
            into[k] = json.loads(json.dumps(v))  # a deep copy of plain data
        elif isinstance(v, dict):
            _add_counts(into[k], v)
        elif isinstance(v, list):
            into[k] = [a + b for a, b in zip(into[k], v, strict=True)]
        elif isinstance(v, int) and not isinstance(v, bool):
            into[k] += v
        else:
            raise TypeError(f"cannot merge count field {k!r} of type {type(v).__name__}")


@functools.lru_cache(maxsize=1)
def _annotator() -> Any:
    """ERRANT over the default spaCy pipeline with its lemmatizer, once per process."""
    import errant

    from pqb.builders.nlp import ALIGN_DISABLE, load_spacy

    return errant.load("en", nlp=load_spacy(disable=ALIGN_DISABLE))


def _errors_chunk(job: tuple[Any, list[tuple[str, str, str]], Smoothing]) -> dict[str, Any]:
    """Correct, parse, align and count one chunk of whole users' profile sentences (in whichever
    process the executor chose; spaCy, ERRANT and the word lists load once per process). Repeated texts
    in a chunk are corrected and parsed once: a text's correction and parse do not depend on its neighbours."""
    corrector, rows, smoothing = job
    counted = Counter(CACHE_COUNTS)
    texts = [t for _, _, t in rows]
    unique = sorted(set(texts))
    fixed: list[str] = []
    for i in range(0, len(unique), 512):
        fixed += corrector.correct(unique[i : i + 512])
    docs_u, edits_u = recover_edits(unique, fixed, _annotator(), parses=parse_texts(unique))
    at = {t: i for i, t in enumerate(unique)}
    idx = [at[t] for t in texts]
    profiles, edit_rows = build_profiles(
        [u for u, _, _ in rows], [docs_u[i] for i in idx], [edits_u[i] for i in idx], smoothing,
        [s for _, s, _ in rows],
    )  # fmt: skip
    return {"users": profiles.users, "glob": profiles.glob, "edits": edit_rows,
            "corrected": sum(1 for i in idx if unique[i] != fixed[i]),
            "cache_counts": (os.getpid(), CACHE_COUNTS - counted)}  # fmt: skip


def _user_chunks(starts: np.ndarray, n: int, size: int) -> list[tuple[int, int]]:
    """``[start, end)`` row ranges of consecutive whole users over ``n`` rows sorted by user, whose
    users begin at the (increasing) rows ``starts`` besides row 0; each range holds >= ``size`` rows
    except the last."""
    out, start = [], 0
    while start < n:
        j = int(np.searchsorted(starts, start + size))
        end = int(starts[j]) if j < len(starts) else n
        out.append((start, end))
        start = end
    return out


def _user_starts(user_ids: pa.ChunkedArray, rows: np.ndarray, batch: int = LEXICON_BATCH) -> np.ndarray:
    """Positions in ``rows`` (besides 0) where a new user begins, ``rows`` being indices into
    ``user_ids`` grouped by user; compared in Arrow a batch at a time (no copy of the column)."""
    out = []
    for a in range(1, len(rows), batch):
        ids = user_ids.take(rows[a - 1 : a + batch])
        new = pc.fill_null(pc.not_equal(ids.slice(1), ids.slice(0, len(ids) - 1)), True)
        out.append(np.flatnonzero(new.to_numpy(zero_copy_only=False)) + a)
    return np.concatenate(out) if out else np.zeros(0, np.int64)


def _first_per_user(sents: pa.Table, rows: np.ndarray, n: int) -> np.ndarray:
    """Of ``rows`` (grouped by user), each user's ``n`` of smallest ``cap_key`` (the error profile's cap,
    ``BuildConfig.error_max_sentences``), in the order of ``rows``. The syntactic profile's cap takes its
    sentences in the same order, so these are among the sentences the profiles stage parsed."""
    if "cap_key" not in sents.column_names:
        raise MissingInputError("sentences.parquet has no cap_key column; rerun `pqb-build users --force`")
    if not len(rows):
        return rows
    sub = sents.select(["user_id", "cap_key"]).take(rows)
    by_key = pc.sort_indices(sub, [("user_id", "ascending"), ("cap_key", "ascending")]).to_numpy()
    starts = np.concatenate([[0], _user_starts(sub.column("user_id"), by_key)])
    rank = np.arange(len(by_key)) - np.repeat(starts, np.diff(np.append(starts, len(by_key))))
    keep = np.zeros(len(rows), bool)
    keep[by_key[rank < n]] = True
    return rows[keep]


def _text_ok(texts: pa.ChunkedArray, batch: int = LEXICON_BATCH) -> np.ndarray:
    """Which texts are strings with a non-blank character (Python's ``str.strip``), a batch at a time."""
    it = (isinstance(t, str) and bool(t.strip()) for a in range(0, len(texts), batch)
          for t in texts.slice(a, batch).to_pylist())  # fmt: skip
    return np.fromiter(it, bool, len(texts))


def run_errors(
    workdir: WorkDir, cfg: BuildConfig, *, force: bool = False, corrector: Any = None
) -> StageStats:
    """Build ``errors/edits.parquet`` and ``errors/profiles.json`` from the PROFILE sentences.

    Only users marked ``qualified`` in ``users.parquet`` (when it exists) are profiled. The stage is
    skipped when its manifest fingerprint is fresh (``force`` rebuilds), which is decided before any
    corrector or model is built (:func:`_recorded_corrector_fresh`). ``corrector`` overrides the
    back-end named by ``cfg.error_backend`` (tests pass a fake; its ``backend_id`` then names the back-end).
    The per-user work (correction, parsing, ERRANT, counting) runs in chunks of whole users
    (:data:`ERRORS_CHUNK`) through ``cfg.executor``; the counts are merged in user order, so the bytes
    are those of one pass. ``cfg.seed`` is recorded (the stage draws nothing at random, but every stage
    config carries it). Returns the stage statistics.
    """
    from pqb.builders.nlp import ALIGN_DISABLE, installed_spacy_model_id

    backend, seed, smoothing = cfg.error_backend, cfg.seed, Smoothing()
    sp = workdir.path / SENTENCES
    if not sp.is_file():
        raise MissingInputError(
            f"{sp} does not exist; run `pqb-build users --domain {workdir.domain}` first."
        )
    # users.parquet and products.parquet are optional: declared only when present
    optional = [workdir.path / n for n in (USERS, PRODUCTS)]
    inputs = [sp, *(p for p in optional if p.is_file())]

    def config(backend_id: str) -> dict[str, Any]:
        # the corrector id (back-end + its configuration) is part of the fingerprint, not just its name
        return {
            "backend": backend_id,
            "errant_disable": list(ALIGN_DISABLE),
            "max_sentences": cfg.error_max_sentences,
            "seed": seed,
            "smoothing": smoothing.to_dict(),
            "version": PROFILES_VERSION,
        }

    digests = hash_inputs(inputs)  # before the lexicon reads the sentences (WorkDir.stage)
    if (
        corrector is None
        and not force
        and (done := _recorded_corrector_fresh(workdir, inputs, config, backend, digests)) is not None
    ):
        log.info("errors: fresh, skipped")
        return done
    sents, users = _sentence_table(workdir)
    n, names = len(sents), set(sents.column_names)
    ok_text = _text_ok(sents.column("text")) if "text" in names else np.zeros(n, bool)
    malformed = int(n - ok_text.sum())
    # one stable sort by (user, sentence): its restriction to any subset of rows is that subset's sort
    order = pc.sort_indices(sents, [("user_id", "ascending"), ("sentence_id", "ascending")]).to_numpy()
    keep = np.ones(n, bool)
    if users is not None and "qualified" in users.column_names:
        qualified = users.column("user_id").filter(pc.fill_null(users.column("qualified"), False))
        member = pc.is_in(sents.column("user_id"), value_set=qualified.combine_chunks())
        keep = pc.fill_null(member, False).to_numpy(zero_copy_only=False)
    if corrector is None:
        from pqb.builders.writing_errors.detection import get_corrector

        kwargs: dict[str, Any] = {}
        if backend == "symspell":
            prods = read_parquet(workdir.path / PRODUCTS) if (workdir.path / PRODUCTS).is_file() else None
            lex = domain_lexicon(sents, prods, by_user=order[keep[order]])
            kwargs |= {"extra_words": lex.words, "names": lex.names, "habitual": lex.habitual}
            del prods, lex
        corrector = get_corrector(backend, **kwargs)
    stage = workdir.stage("errors", inputs, config(corrector.backend_id), [EDITS, PROFILES], digests=digests)
    if (done := stage.cached(force)) is not None:  # other libraries recorded, same corrector id
        log.info("errors: fresh, skipped")
        return done
    is_profile = (
        pc.fill_null(pc.equal(sents.column("split"), "profile"), False).to_numpy(zero_copy_only=False)
        if "split" in names
        else np.zeros(n, bool)
    )
    rows = order[(keep & ok_text & is_profile)[order]]  # the profile sentences, sorted
    del order, keep, ok_text, is_profile
    if cfg.error_max_sentences is not None:
        rows = _first_per_user(sents, rows, cfg.error_max_sentences)
    profile = sents.select(["user_id", "sentence_id", "text"])
    n_profile = len(rows)
    chunks = _user_chunks(_user_starts(profile.column("user_id"), rows), n_profile, ERRORS_CHUNK)

    def jobs() -> Iterable[tuple[Any, list[tuple[str, str, str]], Smoothing]]:
        for a, b in chunks:  # taken a chunk at a time: no sorted copy of the profile sentences
            part = profile.take(rows[a:b])
            items = list(
                zip(*(part.column(c).to_pylist() for c in ("user_id", "sentence_id", "text")), strict=True)
            )
            yield corrector, items, smoothing

    mapped = map(_errors_chunk, jobs()) if cfg.executor is None else cfg.executor.map(_errors_chunk, jobs())
    glob, totals, edit_rows, n_corrected = empty_counts(), Counter[str](), [], 0
    with ProfilesWriter(workdir.file(PROFILES)) as out:
        for part in bar(
            mapped, total=len(chunks), desc=f"errors ({corrector.backend_id})", unit="chunk", leave=False
        ):
            _add_counts(glob, part["glob"])
            out.add_users(part["users"])  # serialised now, kept nowhere
            totals.update(_user_totals(part["users"]))
            edit_rows += part["edits"]
            n_corrected += part["corrected"]
            if part["cache_counts"][0] != os.getpid():  # counted in a worker: add it to this process's
                CACHE_COUNTS.update(part["cache_counts"][1])
        profiles = ErrorProfiles(glob=glob, smoothing=smoothing)  # the global model; users are in the file
        profiles.meta = {
            "backend": corrector.backend_id,
            "spacy": installed_spacy_model_id(),
            "domain": workdir.domain,
            "n_profile_sentences": n_profile,
            "seed": seed,
        }
        edit_rows.sort(key=lambda r: (r["user_id"], r["sentence_id"], r["token_index"], r["original"]))
        write_parquet(pa.Table.from_pylist(edit_rows, schema=EDITS_SCHEMA), workdir.file(EDITS))
        out.finish(profiles.glob, profiles.smoothing, profiles.meta)
    stats = profile_stats(profiles, totals, edit_rows, n_corrected, n_profile) | {
        "malformed_sentences": malformed
    }
    stage.done(stats)
    return stats


def _user_totals(users: Mapping[str, Mapping[str, Any]]) -> Counter[str]:
    """Per-user figures :func:`profile_stats` reports, summed over ``users`` (so chunk sums add up)."""
    return Counter(
        users=len(users),
        users_with_char_edits=sum(1 for u in users.values() if u["n_char"] > 0),
        char_edits=sum(int(u["n_char"]) for u in users.values()),
    )


def profile_stats(
    profiles: ErrorProfiles,
    user_totals: Mapping[str, int],
    edit_rows: Sequence[Mapping[str, Any]],
    n_corrected: int,
    n_sentences: int,
) -> dict[str, Any]:
    """Counts reported by the stage (and in the manifest). ``profiles`` gives the global model and the
    back-end; ``user_totals`` the per-user sums (:func:`_user_totals`), since the stage keeps no users."""
    mech = Counter(r["mechanism"] or "not_char_level" for r in edit_rows)
    return {
        "backend": profiles.meta.get("backend"),
        "users": int(user_totals.get("users", 0)),
        "users_with_char_edits": int(user_totals.get("users_with_char_edits", 0)),
        "profile_sentences": n_sentences,
        "corrected_sentences": n_corrected,
        "tokens": int(profiles.glob["n_tokens"]),
        "edits": len(edit_rows),
        "char_edits": int(user_totals.get("char_edits", 0)),
        "global_rate": profiles.global_rate,
        "mechanisms": dict(sorted(mech.items())),
        "global_mechanism_probs": profiles.global_mechanism_probs(),
    }
