"""Readability: an injected typo must leave the word one a reader still recognises, judged without any
corrector, dictionary or model.

Until issue 29 an edit had to be the unambiguous best correction under symspell plus the corpus
vocabulary, and had not to be another real word. That was the very corrector the harness offers as the
``symspell`` defense: it restored 99.5% of the error queries, so the defense was perfect by
construction, and real-word slips ("form" for "from"), which people do make, could never occur. What
makes a typo readable is bounded by what a hand does in one slip, and that is all this rule checks, so no
evaluated defense shares it:

1. the edit changes the word, and not only its case;
2. the intended word has at least ``schema.MIN_EDIT_LETTERS`` letters (no slip on 1-2-letter words);
3. the edit stays within a Damerau-Levenshtein distance that grows with the word: 1 for words of up to
   :data:`ONE_EDIT_UP_TO` letters, 2 beyond (the injector makes one slip per word, so always 1);
4. the typed word keeps at least ``MIN_EDIT_LETTERS - 1`` letters.

Real-word slips are allowed, at the rate the slip channel gives them; ``pqb-build typo-study`` reports
that rate beside the real slips'.
"""

from __future__ import annotations

from rapidfuzz.distance import DamerauLevenshtein

from pqb.dataset.schema import MIN_EDIT_LETTERS

ONE_EDIT_UP_TO = 6
"""Words of up to this many letters take one edit; longer ones up to two."""


def max_distance(word: str) -> int:
    """The largest Damerau-Levenshtein distance a readable typo of ``word`` may have."""
    return 1 if len(word) <= ONE_EDIT_UP_TO else 2


def readable(original: str, edited: str) -> bool:
    """Whether ``edited`` is a readable typo of ``original`` (rules 1-4 of the module docstring)."""
    o, e = original.lower(), edited.lower()
    if o == e or len(original) < MIN_EDIT_LETTERS or len(edited) < MIN_EDIT_LETTERS - 1:
        return False
    return DamerauLevenshtein.distance(o, e) <= max_distance(original)
