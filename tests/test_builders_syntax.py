"""Rule extraction on sentences with known trees, and the vocabulary/CSR transform."""

from __future__ import annotations

import numpy as np
import pytest

from pqb.builders.parses import _parse
from pqb.builders.syntax.rules import RuleVocab, extract_rules

# "The cat sat ." : The -det-> cat -nsubj-> sat (root) <-punct- .
POS = ["DET", "NOUN", "VERB", "PUNCT"]
DEP = ["det", "nsubj", "ROOT", "punct"]
HEAD = [1, 2, 2, 2]

EXPECTED = {
    "D4|VERB|NOUN|det|DET",  # The: head cat, grand-head sat
    "D3|NOUN|det|DET",
    "D4|ROOT|VERB|nsubj|NOUN",  # cat: head sat is the root
    "D3|VERB|nsubj|NOUN",
    "D4|ROOT|VERB|punct|PUNCT",
    "D3|VERB|punct|PUNCT",
    "P3|DET|NOUN|VERB",
    "P3|NOUN|VERB|PUNCT",
}


def test_rules_of_known_tree() -> None:
    assert extract_rules(POS, DEP, HEAD) == EXPECTED


def test_short_sentences_have_no_rules() -> None:
    assert extract_rules(["INTJ", "PUNCT"], ["ROOT", "punct"], [0, 0]) == frozenset()


def test_rules_from_a_spacy_doc_with_set_heads() -> None:
    """A Doc built with explicit heads/POS (no statistical model) gives the same rules."""
    spacy = pytest.importorskip("spacy")
    from spacy.tokens import Doc

    doc = Doc(spacy.blank("en").vocab, words=["The", "cat", "sat", "."], pos=POS, deps=DEP, heads=HEAD)
    pos, dep, head = _parse(doc)
    assert extract_rules(pos, dep, head) == EXPECTED


def test_vocab_min_df_and_binary_csr() -> None:
    sets = [{"a", "b"}, {"a", "c"}, {"a", "b", "zz"}]
    vocab = RuleVocab.fit(sets, min_df=2)
    assert vocab.rules == ["a", "b"]
    X = vocab.transform([{"b", "a", "unknown"}, set(), {"b"}])
    assert X.shape == (3, 2) and X.format == "csr"
    np.testing.assert_array_equal(X.toarray(), [[1, 1], [0, 0], [0, 1]])


def test_vocab_roundtrip(tmp_path) -> None:
    vocab = RuleVocab.fit([{"x", "y"}, {"x"}], min_df=1)
    vocab.save(tmp_path / "v.json")
    again = RuleVocab.load(tmp_path / "v.json")
    assert again.rules == vocab.rules and again.min_df == 1
