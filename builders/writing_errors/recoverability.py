"""Recoverability: an injected typo must leave the word recognisable, so the query's need stays fixed.

PQB no longer protects words by excluding them (core terms, brand and title words used to be untouchable,
which put every edit on template words). Any word may carry a typo, provided a reader can still recover it
(issue 12). An edit ``original -> edited`` is *recoverable* when, case-insensitively:

1. it changes the word and stays within Damerau-Levenshtein distance :data:`MAX_DISTANCE` (2);
2. the edited form is not another real word (a dictionary or domain word): "form" for "from" changes the
   need, "frmo" does not;
3. the original is the best correction of the edited form under a corrector that knows the domain's
   vocabulary (:class:`DomainCorrector`): among symspell's candidates the original has the smallest
   distance and the largest count at that distance;
4. the correction is unambiguous: no other candidate at the same distance has at least
   ``1 / AMBIGUITY_MARGIN`` of the original's count.

The domain vocabulary is what the published dataset carries: every word of the corpus config (product
titles and documents, which hold brands and attribute values), so ``pqb-build check`` can rebuild the same
corrector from the dataset alone and verify every error row. Review vocabulary is deliberately left out:
it is not published, and a check that needs unpublished data cannot be rerun by a reader.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rapidfuzz.distance import DamerauLevenshtein

from pqb.dataset.schema import document_string

MAX_DISTANCE = 2
AMBIGUITY_MARGIN = 2.0
"""The original's count must exceed every same-distance rival's count by this factor."""
DOMAIN_WORD_WEIGHT = 10_000
"""Each corpus occurrence of a word counts as this many occurrences of the bundled web-frequency
dictionary (counts of 10^4-10^10): a title word seen 20 times ranks like a mid-frequency English word."""

_WORD = re.compile(r"[A-Za-z]+")


def corpus_word_counts(texts: Iterable[str]) -> Counter[str]:
    """Lower-case alphabetic words of at least 3 letters and their occurrence counts."""
    out: Counter[str] = Counter()
    for t in texts:
        out.update(w.lower() for w in _WORD.findall(t or "") if len(w) >= 3)
    return out


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str
    """``ok`` or the failed rule: ``unchanged``, ``distance``, ``real_word``, ``not_best``, ``ambiguous``."""
    best: str | None = None


class DomainCorrector:
    """symspellpy's bundled English frequency dictionary plus the domain's words (see module docstring)."""

    def __init__(self, domain_counts: Counter[str] | dict[str, int] | None = None) -> None:
        try:
            import symspellpy
            from symspellpy import SymSpell
        except ImportError as exc:  # pragma: no cover - part of the build extra
            raise ImportError('Recoverability needs symspellpy: `pip install "pqb[build]"`.') from exc
        path = Path(symspellpy.__file__).parent / "frequency_dictionary_en_82_765.txt"
        self.sym = SymSpell(max_dictionary_edit_distance=MAX_DISTANCE, prefix_length=7)
        self.sym.load_dictionary(str(path), term_index=0, count_index=1)
        self.domain = dict(sorted((domain_counts or {}).items()))
        for w, n in self.domain.items():
            self.sym.create_dictionary_entry(w, int(n) * DOMAIN_WORD_WEIGHT)

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> DomainCorrector:
        return cls(corpus_word_counts(texts))

    def is_word(self, word: str) -> bool:
        return word.lower() in self.sym.words

    def candidates(self, word: str) -> list[tuple[str, int, int]]:
        """``(term, distance, count)`` of every dictionary term within :data:`MAX_DISTANCE`, best first."""
        from symspellpy import Verbosity

        hits = self.sym.lookup(word.lower(), Verbosity.ALL, max_edit_distance=MAX_DISTANCE)
        return sorted(((h.term, h.distance, h.count) for h in hits), key=lambda t: (t[1], -t[2], t[0]))

    def verdict(self, original: str, edited: str) -> Verdict:
        """Whether ``edited`` is a recoverable typo of ``original`` (rules 1-4 of the module docstring)."""
        o, e = original.lower(), edited.lower()
        if o == e:
            return Verdict(False, "unchanged")
        if DamerauLevenshtein.distance(o, e) > MAX_DISTANCE:
            return Verdict(False, "distance")
        if self.is_word(e):
            return Verdict(False, "real_word")
        cands = self.candidates(e)
        if not cands or cands[0][0] != o:
            return Verdict(False, "not_best", cands[0][0] if cands else None)
        _, dist, count = cands[0]
        rivals = [c for t, d, c in cands[1:] if d == dist]
        if rivals and max(rivals) * AMBIGUITY_MARGIN > count:
            return Verdict(False, "ambiguous", o)
        return Verdict(True, "ok", o)

    def recoverable(self, original: str, edited: str) -> bool:
        return self.verdict(original, edited).ok


def corrector_for_corpus(rows: Iterable[dict[str, Any]]) -> DomainCorrector:
    """The corrector of one domain from its corpus rows: every word of each document as retrievers read it."""
    return DomainCorrector.from_texts(document_string(r.get("title"), r.get("text")) for r in rows)
