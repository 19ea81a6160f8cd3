"""Surface habits of real review writing (casing, final punctuation, contractions), measured and applied.

The realizer produces well-formed text; people do not always write that way. Each candidate query
draws its own habits, independently, at the rates measured on the domain's own reviews
(:meth:`SurfaceHabits.measure` over ``reviews.parquet``), so the pool carries the variety the users show
and the user's Gaussian, not a fixed casing rule, decides what a user gets. On all 5,763 non-empty
reviews of ``amazon2023-mini`` the rates are the defaults below: 5.1% all lower-case, 8.5% starting
lower-case, 27.6% without final punctuation, 13.9% ending in "!", expanded and contracted forms about
equally common (1,317 vs 1,305 reviews), 4.9% of contractions written without the apostrophe ("dont"),
4.6% of first-person "I" written "i".

Core terms are never edited except by casing (``count_term`` is case-insensitive, so a lower-cased term
is still the same term).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pqb.dataset.schema import term_spans

CONTRACTIONS: dict[str, str] = {
    "I'm": "I am", "I'd": "I would", "I've": "I have", "that's": "that is", "it's": "it is",
    "doesn't": "does not", "don't": "do not", "what's": "what is", "there's": "there is",
    "isn't": "is not", "can't": "cannot", "won't": "will not", "wouldn't": "would not",
}  # fmt: skip
"""Contracted form -> expanded form, for the contractions the realizer's phrases use."""
_CONTRACTION = re.compile(r"(?<![\w'])(" + "|".join(re.escape(c) for c in CONTRACTIONS) + r")(?![\w'])", re.I)
_EXPANDED = re.compile(
    r"\b(I am|I would|I have|that is|it is|do not|does not|is not|cannot|will not)\b", re.I
)
_FIRST_PERSON = re.compile(r"(?<![\w'])I(?=[\s']|$)")


@dataclass(frozen=True)
class SurfaceHabits:
    """Per-candidate probabilities of each habit (see the module docstring for where the defaults come from).

    ``lower_start`` is the share of texts starting lower-case *including* the all-lower-case ones;
    ``expanded`` is the share of contraction sites written out; ``no_apostrophe`` the share of
    contracted sites written without the apostrophe.
    """

    all_lower: float = 0.051
    lower_start: float = 0.085
    no_final_punct: float = 0.276
    exclaim: float = 0.139
    expanded: float = 0.502
    no_apostrophe: float = 0.049
    lower_i: float = 0.046
    n_texts: int = 5763

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def measure(cls, texts: Iterable[str]) -> SurfaceHabits:
        """The rates of each habit over ``texts`` (review bodies); defaults when there are none."""
        n = lower = start = nopunct = excl = contracted = expanded = bare = low_i = up_i = 0
        for raw in texts:
            t = (raw or "").replace("<br />", " ").strip()
            letters = [c for c in t if c.isalpha()]
            if not letters:
                continue
            n += 1
            lower += all(not c.isupper() for c in letters)
            start += t[0].islower()
            nopunct += not re.search(r"[.!?)]$", t)
            excl += t.endswith("!")
            contracted += bool(_CONTRACTION.search(t))
            bare += bool(re.search(r"\b(im|dont|doesnt|cant|wont|isnt|ive|thats|didnt|wasnt)\b", t))
            expanded += bool(_EXPANDED.search(t))
            low_i += bool(re.search(r"(?<![\w'])i(?=[\s']|$)", t))
            up_i += bool(_FIRST_PERSON.search(t))
        if not n:
            return cls()

        def share(a: int, b: int) -> float:
            return round(a / b, 4) if b else 0.0

        return cls(
            all_lower=share(lower, n),
            lower_start=share(max(start, lower), n),
            no_final_punct=share(nopunct, n),
            exclaim=share(excl, n),
            expanded=share(expanded, expanded + contracted + bare),
            no_apostrophe=share(bare, contracted + bare),
            lower_i=share(low_i, low_i + up_i),
            n_texts=n,
        )


def _outside(text: str, protected: Sequence[str], fn: Any) -> str:
    """Apply ``fn`` to the stretches of ``text`` outside every protected term's spans."""
    spans = sorted({s for t in protected for s in term_spans(text, t)})
    out, pos = [], 0
    for a, b in spans:
        if a < pos:
            continue
        out += [fn(text[pos:a]), text[a:b]]
        pos = b
    out.append(fn(text[pos:]))
    return "".join(out)


def _match_case(src: str, repl: str) -> str:
    return repl[0].upper() + repl[1:] if src[:1].isupper() else repl


def apply_habits(text: str, protected: Sequence[str], habits: SurfaceHabits, rng: random.Random) -> str:
    """One draw of every habit for one candidate; the core terms in ``protected`` are left as written."""
    expand = rng.random() < habits.expanded
    bare = not expand and rng.random() < habits.no_apostrophe
    lower_i = rng.random() < habits.lower_i

    def words(s: str) -> str:
        if expand:
            s = _CONTRACTION.sub(lambda m: _match_case(m.group(0), _expanded(m.group(0))), s)
        if lower_i:
            s = _FIRST_PERSON.sub("i", s)
        if bare:
            s = _CONTRACTION.sub(lambda m: m.group(0).replace("'", ""), s)
        return s

    text = _outside(text, protected, words)
    if text.endswith(".") and rng.random() < habits.exclaim / max(1e-9, 1 - habits.no_final_punct):
        text = text[:-1] + "!"
    if text[-1:] in ".!?" and rng.random() < habits.no_final_punct:
        text = text[:-1]
    r = rng.random()
    if r < habits.all_lower:
        text = text.lower()
    elif r < habits.lower_start and text[:1].isupper() and not text[:2].isupper():
        text = text[0].lower() + text[1:]
    return text


def _expanded(contraction: str) -> str:
    for c, e in CONTRACTIONS.items():
        if c.lower() == contraction.lower():
            return e
    return contraction
