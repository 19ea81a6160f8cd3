"""Syntactic context of a token and hierarchically smoothed per-user, per-context error rates.

docs/design.md §9: a writer's slips depend on where a word sits (a determiner inside a relative clause is
typed differently from a sentence-initial verb). Each alphabetic token gets back-off signatures built
from its spaCy parse; error counts are kept per signature for each user and for everybody.

Rates are shrunk level by level (empirical-Bayes Beta shrinkage, pseudo-counts in :class:`Smoothing`):

1. global rate ``p0 = C / N`` over every profiled token;
2. global context rate along the nested chain ``coarse → d3 → d4 → full``:
   ``g_l = (C_l + κ_g · g_{l-1}) / (N_l + κ_g)`` with ``g_{-1} = p0``; its *lift* is ``g / p0``;
3. user rate ``r_u = (c_u + κ_u · p0) / (n_u + κ_u)`` (a user with no recovered slips gets a rate
   below ``p0``, never the authors' generic 0.5);
4. user context rate along the same chain, starting from ``r_u · lift``:
   ``r_l = (c_{u,l} + κ_c · r_{l-1}) / (n_{u,l} + κ_c)``.

So context → user → global, each level pulled toward the next coarser one by a fixed number of
pseudo-tokens; a level the user never used simply returns its prior.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

BACKOFF_LEVELS: tuple[str, ...] = ("full", "d4", "d3", "clause", "depth", "sibling", "coarse", "shape")
"""All signatures of docs/design.md §9 plus the word's ``shape``, recorded for every recovered edit."""

RATE_CHAIN: tuple[str, ...] = ("shape", "coarse", "d3", "d4", "full")
"""The levels used for rate shrinkage, coarse to fine. ``shape`` (word length, word class,
capitalisation: what makes people slip, issue 12) comes first; the syntactic levels after it are nested
(each refines the previous). Each level is pulled toward the estimate of the level before it."""

FUNCTION_POS = frozenset({"DET", "ADP", "PRON", "CCONJ", "SCONJ", "AUX", "PART", "INTJ"})
"""Universal POS tags of function words; every other word is a content word."""


def length_bucket(n: int) -> str:
    return "1-3" if n <= 3 else "4-5" if n <= 5 else "6-7" if n <= 7 else "8-10" if n <= 10 else "11+"


def capitalisation(text: str) -> str:
    return "upper" if text.isupper() and len(text) > 1 else "title" if text[:1].isupper() else "lower"


def is_function_word(tok: Any) -> bool:
    return tok.pos_ in FUNCTION_POS


CLAUSE_DEPS = frozenset({"advcl", "acl", "relcl", "ccomp", "xcomp", "conj", "parataxis"})


@dataclass(frozen=True)
class Smoothing:
    """Pseudo-counts of the hierarchical shrinkage (see the module docstring).

    ``user_tokens`` (κ_u) is large because real slips are rare (~0.1-1% of tokens): a user needs
    several hundred tokens before their own rate moves far from the global one. ``context_tokens``
    (κ_c) and ``global_context_tokens`` (κ_g) pull each context toward its coarser parent.
    ``mechanism_edits`` (α) is the Dirichlet strength pulling a user's mechanism distribution toward
    the global one, and ``global_mechanism_edits`` (β) the add-β prior on the global distribution (the
    same β smooths the global dose and position distributions). ``position_edits`` is the Dirichlet
    strength pulling a user's distribution of where in the word they slip (first letter / interior / last
    letter, ``schema.POSITIONS``) toward the population's: 2 pseudo-slips, as for mechanisms.
    ``max_rate`` caps any context rate (a guard against tiny denominators). ``dose_sentences`` is the
    Dirichlet strength pulling a user's slips-per-slipped-sentence histogram (the personal dose) toward the
    population's: 2 pseudo-sentences, so a user with 2 slipped sentences is half their own evidence.
    """

    user_tokens: float = 400.0
    context_tokens: float = 30.0
    global_context_tokens: float = 200.0
    mechanism_edits: float = 2.0
    global_mechanism_edits: float = 0.5
    max_rate: float = 0.5
    dose_sentences: float = 2.0
    position_edits: float = 2.0

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Smoothing:
        return cls(**{k: float(v) for k, v in d.items() if k in cls.__dataclass_fields__})


def _depth(tok: Any) -> int:
    d, t = 0, tok
    while t.head.i != t.i and d < 50:
        d, t = d + 1, t.head
    return d


def _clause(tok: Any) -> str:
    """First clause-opening dependency up the head chain (own arc included); PREP / ROOT otherwise."""
    t = tok
    for _ in range(50):
        dep = t.dep_.lower()
        if dep in CLAUSE_DEPS:
            return dep
        if dep == "prep":
            return "PREP"
        if t.head.i == t.i:
            return "ROOT"
        t = t.head
    return "ROOT"


def _siblings(tok: Any) -> tuple[str, str]:
    if tok.head.i == tok.i:
        return "-", "-"
    kids = [c for c in tok.head.children if c.i != tok.i]
    left = [c for c in kids if c.i < tok.i]
    right = [c for c in kids if c.i > tok.i]
    return (left[-1].pos_ if left else "-"), (right[0].pos_ if right else "-")


def token_signatures(tok: Any) -> dict[str, str]:
    """The seven back-off signatures of one parsed spaCy token (docs/design.md §9) and its ``shape``."""
    pos, dep, head = tok.pos_, tok.dep_, tok.head.pos_
    gp = tok.head.head.pos_
    depth = _depth(tok)
    bucket = f"d{min(depth, 3)}" + ("+" if depth >= 3 else "")
    clause = _clause(tok)
    left, right = _siblings(tok)
    return {
        "full": f"{pos}|{dep}|{head}|{gp}|{clause}|{bucket}",
        "d4": f"D4|{gp}|{head}|{dep}|{pos}",
        "d3": f"D3|{head}|{dep}|{pos}",
        "clause": f"{clause}|{pos}",
        "depth": f"{bucket}|{pos}|{dep}",
        "sibling": f"{pos}|{left}|{right}",
        "coarse": f"{pos}|{dep}",
        "shape": f"{length_bucket(len(tok.text))}|{'function' if is_function_word(tok) else 'content'}|"
        f"{capitalisation(tok.text)}",
    }


def doc_signatures(doc: Any) -> list[dict[str, str]]:
    """Signatures of every token of a parsed ``Doc`` (same order as the tokens)."""
    return [token_signatures(t) for t in doc]


# ------------------------------------------------------------------------------------------------
# Counts and smoothed rates
# ------------------------------------------------------------------------------------------------


def new_counts() -> dict[str, Any]:
    """Empty count record: tokens, character-level slips, and ``[tokens, slips]`` per chain context."""
    return {"n_tokens": 0, "n_char": 0, "contexts": {lvl: {} for lvl in RATE_CHAIN}}


def add_token(counts: dict[str, Any], sigs: Mapping[str, str], is_error: bool) -> None:
    """Count one profiled token (and whether the user slipped on it) in every chain context."""
    counts["n_tokens"] += 1
    counts["n_char"] += int(is_error)
    for lvl in RATE_CHAIN:
        cell = counts["contexts"][lvl].setdefault(sigs[lvl], [0, 0])
        cell[0] += 1
        cell[1] += int(is_error)


def global_rate(counts: Mapping[str, Any], default: float = 0.005) -> float:
    """``p0``: the pooled slip rate (``default`` only when nothing was profiled)."""
    n = counts["n_tokens"]
    return counts["n_char"] / n if n else default


def global_context_rate(glob: Mapping[str, Any], sigs: Mapping[str, str], sm: Smoothing) -> float:
    """Global rate of this context, shrunk level by level toward ``p0``."""
    g = global_rate(glob)
    for lvl in RATE_CHAIN:
        n, c = glob["contexts"][lvl].get(sigs[lvl], (0, 0))
        g = (c + sm.global_context_tokens * g) / (n + sm.global_context_tokens)
    return g


def user_rate(user: Mapping[str, Any] | None, p0: float, sm: Smoothing) -> float:
    """``r_u``: the user's slip rate shrunk toward the global rate ``p0``."""
    if user is None:
        return p0
    return (user["n_char"] + sm.user_tokens * p0) / (user["n_tokens"] + sm.user_tokens)


def context_rate(
    glob: Mapping[str, Any], user: Mapping[str, Any] | None, sigs: Mapping[str, str], sm: Smoothing
) -> float:
    """Slip probability of one token for one user (``user=None``: the pooled, global model)."""
    p0 = global_rate(glob)
    g = global_context_rate(glob, sigs, sm)
    if user is None:
        return min(g, sm.max_rate)
    lift = g / p0 if p0 > 0 else 1.0
    r = min(user_rate(user, p0, sm) * lift, sm.max_rate)
    for lvl in RATE_CHAIN:
        n, c = user["contexts"][lvl].get(sigs[lvl], (0, 0))
        r = (c + sm.context_tokens * r) / (n + sm.context_tokens)
    return min(r, sm.max_rate)
