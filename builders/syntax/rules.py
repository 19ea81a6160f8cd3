"""Syntactic rules of a parsed sentence (docs/design.md §6) and the per-domain rule vocabulary.

Rules of a sentence with tokens i (coarse POS ``P``, label ``dep``, head ``h``):

* ``D4|P(g)|P(h)|dep(i)|P(i)`` for every i with h ≠ i, g = head(h), and ``ROOT`` for P(g) when h is
  the root (its own head);
* ``D3|P(h)|dep(i)|P(i)`` for the same tokens;
* ``P3|P(i)|P(i+1)|P(i+2)``: POS trigrams over the token sequence, punctuation included.

Sentences with fewer than 3 tokens have no rules. A sentence's rules are a set (binary presence).
The vocabulary keeps rules whose document frequency (sentences containing them) reaches ``min_df``,
counted on the sentences it is given — the builders give it PROFILE sentences only, so held-out text
never shapes the features it is later scored with.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from pqb.builders.parses import Parsed
from pqb.dataset.io import atomic_write_text

MIN_TOKENS = 3


def extract_rules(pos: Sequence[str], dep: Sequence[str], head: Sequence[int]) -> frozenset[str]:
    """The rule set of one parsed sentence (absolute head indices; a root is its own head)."""
    n = len(pos)
    if n < MIN_TOKENS:
        return frozenset()
    rules: set[str] = set()
    for i in range(n):
        h = head[i]
        if h == i:
            continue
        g = head[h]
        pg = "ROOT" if g == h else pos[g]
        rules.add(f"D4|{pg}|{pos[h]}|{dep[i]}|{pos[i]}")
        rules.add(f"D3|{pos[h]}|{dep[i]}|{pos[i]}")
    for i in range(n - 2):
        rules.add(f"P3|{pos[i]}|{pos[i + 1]}|{pos[i + 2]}")
    return frozenset(rules)


def rules_of(parsed: Parsed) -> frozenset[str]:
    return extract_rules(parsed.pos, parsed.dep, parsed.head)


class RuleVocab:
    """Rule → column index, sorted lexicographically so equal inputs give equal vocabularies."""

    def __init__(self, rules: Sequence[str], min_df: int = 2) -> None:
        self.rules: list[str] = list(rules)
        self.index: dict[str, int] = {r: i for i, r in enumerate(self.rules)}
        self.min_df = min_df

    def __len__(self) -> int:
        return len(self.rules)

    @classmethod
    def fit(cls, rule_sets: Iterable[Iterable[str]], min_df: int = 2) -> RuleVocab:
        df: Counter[str] = Counter()
        for rs in rule_sets:
            df.update(set(rs))
        return cls(sorted(r for r, c in df.items() if c >= min_df), min_df)

    def transform(self, rule_sets: Sequence[Iterable[str]]) -> sp.csr_matrix:
        """Binary CSR matrix (n_sentences × |vocab|); rules outside the vocabulary are ignored."""
        indptr = [0]
        indices: list[int] = []
        for rs in rule_sets:
            cols = sorted({self.index[r] for r in rs if r in self.index})
            indices += cols
            indptr.append(len(indices))
        data = np.ones(len(indices), dtype=np.float32)
        return sp.csr_matrix(
            (data, np.asarray(indices, dtype=np.int32), np.asarray(indptr, dtype=np.int64)),
            shape=(len(rule_sets), len(self.rules)),
        )

    def save(self, path: Path) -> None:
        atomic_write_text(path, json.dumps({"min_df": self.min_df, "rules": self.rules}, indent=0) + "\n")

    @classmethod
    def load(cls, path: Path) -> RuleVocab:
        obj = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls(obj["rules"], int(obj["min_df"]))
