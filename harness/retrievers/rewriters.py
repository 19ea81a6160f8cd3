"""Query rewriters: spelling correction applied to queries before retrieval (a typo *defense*).

Why here: the paper measures how much typos cost (Deg@K) but leaves open whether spell correction
buys the loss back. A rewriter composed with any retriever (:mod:`pqb.harness.retrievers.rewriting`)
is a system of its own, evaluated, compared and ranked like any other.

* ``symspell`` — symspellpy with the *domain corpus vocabulary* (the words of the corpus titles and
  texts) added to its bundled English frequency dictionary: a word either knows is kept, so product
  names the corpus knows are never "corrected" into dictionary words and function words the corpus
  lacks are not "corrected" into product words; an unknown word becomes the closest known word (edit
  distance ≤ 2), a domain word winning over an English one at equal distance, then the most frequent.
* ``pyspellchecker`` — pyspellchecker's English dictionary (edit distance 2), the off-the-shelf
  choice, which knows nothing of the domain.

Both rewrite alphabetic tokens of at least ``MIN_LENGTH`` letters, leave known words, digits and
punctuation alone and lower-case a replaced word. Both are deterministic.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from importlib import metadata
from typing import Any

from pqb.harness.errors import MissingDependencyError
from pqb.harness.models import REWRITER_EXTRAS
from pqb.harness.retrievers.base import Corpus

WORD = re.compile(r"[A-Za-z]+")
MIN_LENGTH = 3
MAX_EDIT_DISTANCE = 2


def corpus_vocabulary(corpus: Corpus) -> Counter[str]:
    """Lower-cased word counts of the corpus titles and texts (words of ≥ 2 letters)."""
    counts: Counter[str] = Counter()
    for text in (*corpus.titles, *corpus.texts):
        counts.update(w.lower() for w in WORD.findall(text or "") if len(w) >= 2)
    return counts


def _rewrite_tokens(text: str, fix: Callable[[str], str | None]) -> str:
    """``text`` with every alphabetic token of ≥ ``MIN_LENGTH`` letters replaced by ``fix(token)``."""

    def sub(match: re.Match[str]) -> str:
        word = match.group(0)
        if len(word) < MIN_LENGTH:
            return word
        fixed = fix(word.lower())
        return word if fixed is None or fixed == word.lower() else fixed

    return WORD.sub(sub, text)


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "unknown"


class Rewriter:
    """Base: ``fit`` learns from the corpus (if it needs to); ``rewrite`` maps queries to queries."""

    name = "rewriter"

    def fit(self, corpus: Corpus) -> None:
        """Learn whatever the rewriter needs from ``corpus`` (a no-op for dictionary-only rewriters)."""

    def fix_word(self, word: str) -> str | None:
        raise NotImplementedError

    def rewrite(self, texts: Iterable[str]) -> list[str]:
        return [_rewrite_tokens(t, self.fix_word) for t in texts]

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "min_length": MIN_LENGTH, "max_edit_distance": MAX_EDIT_DISTANCE}


class SymSpellRewriter(Rewriter):
    """symspellpy with the domain corpus as its dictionary (refit whenever the corpus changes)."""

    name = "symspell"

    def __init__(self) -> None:
        try:
            import symspellpy
        except ImportError as exc:
            raise MissingDependencyError(
                "rewriter 'symspell'", "symspellpy", REWRITER_EXTRAS[self.name]
            ) from exc
        self._symspell_mod = symspellpy
        self._sym: Any = None
        self._fitted: str | None = None

    def fit(self, corpus: Corpus) -> None:
        if self._fitted == corpus.fingerprint:
            return
        from pathlib import Path

        sym = self._symspell_mod.SymSpell(max_dictionary_edit_distance=MAX_EDIT_DISTANCE, prefix_length=7)
        english = Path(self._symspell_mod.__file__).parent / "frequency_dictionary_en_82_765.txt"
        if not sym.load_dictionary(str(english), term_index=0, count_index=1):
            raise RuntimeError(f"symspellpy's English dictionary is missing ({english})")
        top = max(sym.words.values())
        for word, count in sorted(corpus_vocabulary(corpus).items()):  # domain words outrank English ones
            sym.create_dictionary_entry(word, top + count - sym.words.get(word, 0))
        self._sym, self._fitted = sym, corpus.fingerprint

    def fix_word(self, word: str) -> str | None:
        if self._sym is None:
            raise RuntimeError(
                "SymSpellRewriter: fit(corpus) before rewriting (it uses the corpus vocabulary)"
            )
        if word in self._sym.words:
            return None
        found = self._sym.lookup(word, self._symspell_mod.Verbosity.CLOSEST, MAX_EDIT_DISTANCE)
        return found[0].term if found else None

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "library": "symspellpy", "library_version": _version("symspellpy"),
                "vocabulary": "domain corpus (titles + texts) over symspellpy's English dictionary"}  # fmt: skip


class PySpellCheckerRewriter(Rewriter):
    """pyspellchecker's English dictionary, unaware of the domain."""

    name = "pyspellchecker"

    def __init__(self) -> None:
        try:
            from spellchecker import SpellChecker
        except ImportError as exc:
            raise MissingDependencyError(
                "rewriter 'pyspellchecker'", "spellchecker", REWRITER_EXTRAS[self.name]
            ) from exc
        self._spell = SpellChecker(language="en", distance=MAX_EDIT_DISTANCE)
        self._memo: dict[str, str | None] = {}

    def fix_word(self, word: str) -> str | None:
        if word not in self._memo:
            self._memo[word] = None if word in self._spell else self._spell.correction(word)
        return self._memo[word]

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "library": "pyspellchecker", "library_version": _version("pyspellchecker"),
                "vocabulary": "pyspellchecker English dictionary"}  # fmt: skip


REWRITERS: dict[str, Callable[[], Rewriter]] = {
    "symspell": SymSpellRewriter,
    "pyspellchecker": PySpellCheckerRewriter,
}


def make_rewriter(name: str) -> Rewriter:
    """The rewriter called ``name``; an unknown name lists the known ones."""
    from pqb.harness.errors import ModelArgsError

    if name not in REWRITERS:
        raise ModelArgsError(
            f"--model_args rewriter={name!r}: unknown rewriter; known: {', '.join(REWRITERS)}"
        )
    return REWRITERS[name]()
