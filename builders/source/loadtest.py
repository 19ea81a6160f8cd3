"""LOAD TEST data: a review file of exactly N reviews made from a real category's reviews.

For builder benchmarks only (``bench/bench_builders.py``), never for a dataset: the output is a
source folder in the official layout, every review reassigned to a synthetic user. Users are drawn
with replacement (seeded); each draw copies one real user's reviews (product, rating, count) under the
new user id ``LOADTEST-<n>-<real id>``, so per-user review counts and products keep the real slice's
distribution, and the meta file is the real one, copied. Every user id carries the ``LOADTEST-``
prefix and the folder holds ``LOADTEST.md``, so a build from it says what it is.

The texts come in two kinds (``texts=``):

* ``"distinct"`` (what the benchmark times): each review keeps the real review's number of
  sentences, each sentence is a real sentence of the slice drawn at random, and in each sentence one
  word, plus each other word with probability :data:`WORD_RATE`, is replaced by a word drawn from the
  slice's running text (so by its frequency), in the case shape of the word it replaces. Texts and
  sentences therefore (almost) never repeat, and no parse or correction cache can answer more often
  than on real reviews, where short sentences ("Love it!") do repeat: the cost per review is at least
  the real one's. Words are real words and sentences keep real lengths, so the parser sees text of
  the real shape, but not real grammar: the *outputs* of a load-test build mean nothing.
* ``"resampled"``: each review is the real review, copied. Texts repeat (the slice has ~1.3K distinct
  reviews), so the caches answer nearly every lookup: it times what does not depend on the text.
"""

from __future__ import annotations

import json
import random
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pqb.builders.source.amazon import ReadStats, iter_reviews
from pqb.dataset.io import atomic_path, atomic_write_text

LOAD_TEST_PREFIX = "LOADTEST-"
WORD_RATE = 0.15
"""Share of a sentence's other words replaced, besides the one word every sentence loses."""
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[A-Za-z]+")
README = """# LOAD TEST DATA, not a dataset source

{n} reviews of `{category}.jsonl` made by `pqb.builders.source.loadtest` (seed {seed}, texts
"{texts}") from the {real} real reviews of {users} users in `{source}`. Each synthetic user
`LOADTEST-<n>-<real id>` copies one real user's products and ratings; {how}
`meta_{category}.jsonl` is the real metadata file, copied.
Use it to measure the builders (time, memory), never to publish a benchmark.
"""
HOW = {
    "distinct": "each text is real sentences of the slice, recombined, with words replaced by words of "
    "the slice (see the module's docstring), so texts do not repeat.",
    "resampled": "each text is the real review's, copied, so texts repeat.",
}


def split_sentences_cheaply(text: str) -> list[str]:
    """Sentences at ``.``/``!``/``?`` followed by white space: enough to count and recombine them
    (the builders' own splitter is spaCy's parser, which is what the benchmark times)."""
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


class _Recombiner:
    """Distinct texts from a slice's sentences and words (see the module docstring)."""

    def __init__(self, texts: Sequence[str], rng: random.Random) -> None:
        self.sentences = [s for t in texts for s in split_sentences_cheaply(t)]
        self.words = [w.lower() for s in self.sentences for w in _WORD.findall(s)]
        self.rng = rng

    def _word(self, like: str) -> str:
        w = self.words[self.rng.randrange(len(self.words))]
        return w.upper() if like.isupper() and len(like) > 1 else w.capitalize() if like[0].isupper() else w

    def _sentence(self) -> str:
        s = self.sentences[self.rng.randrange(len(self.sentences))]
        spans = [m.span() for m in _WORD.finditer(s)]
        if not spans:
            return s
        forced = self.rng.randrange(len(spans))
        out, last = [], 0
        for i, (a, b) in enumerate(spans):
            if i == forced or self.rng.random() < WORD_RATE:
                out += [s[last:a], self._word(s[a:b])]
                last = b
        return "".join(out) + s[last:]

    def text(self, like: str) -> str:
        """As many sentences as ``like`` has; one that ends a real review without a full stop gets
        one when another follows, so the count stays."""
        n = max(1, len(split_sentences_cheaply(like)))
        sents = [self._sentence() for _ in range(n)]
        return " ".join([s if s[-1] in ".!?" else s + "." for s in sents[:-1]] + sents[-1:])


def distinct_shares(texts: Sequence[str]) -> dict[str, float]:
    """Shares of distinct review texts and of distinct (cheaply split) sentences: what a cache keyed
    by text or by sentence cannot answer from an earlier occurrence."""
    sents = [s for t in texts for s in split_sentences_cheaply(t)]
    return {
        "reviews": len(texts),
        "distinct_texts": len(set(texts)) / max(1, len(texts)),
        "sentences": len(sents),
        "distinct_sentences": len(set(sents)) / max(1, len(sents)),
    }


def generate_reviews(
    source: Path,
    category: str,
    n: int,
    out: Path,
    *,
    seed: int = 0,
    texts: Literal["distinct", "resampled"] = "distinct",
) -> dict[str, Any]:
    """Write ``out/<category>.jsonl`` (``n`` load-test reviews), the real meta file and ``LOADTEST.md``.

    Returns the counts and :func:`distinct_shares` of the written texts (``shares``) and of the real
    ones (``real_shares``), so a benchmark reports how often they repeat without reading them again."""
    if n < 1:
        raise ValueError(f"a load test needs n >= 1 reviews, got {n}")
    if texts not in HOW:
        raise ValueError(f"texts must be one of {sorted(HOW)}, got {texts!r}")
    source, out = Path(source), Path(out)
    stats = ReadStats()
    by_user: dict[str, list[dict]] = {}
    for r in iter_reviews(source / f"{category}.jsonl", stats):
        by_user.setdefault(r["user_id"], []).append({k: v for k, v in r.items() if v is not None})
    if not by_user:
        raise ValueError(f"{source / f'{category}.jsonl'} has no usable review to resample")
    users = sorted(by_user)
    rng = random.Random(seed)
    real = [r["text"] for u in users for r in by_user[u] if isinstance(r.get("text"), str)]
    recombine = _Recombiner(real, random.Random(f"{seed}:texts")) if texts == "distinct" else None
    made: list[str] = []
    out.mkdir(parents=True, exist_ok=True)
    written = draws = 0
    with atomic_path(out / f"{category}.jsonl") as tmp, open(tmp, "w", encoding="utf-8") as f:
        while written < n:
            real_user = users[rng.randrange(len(users))]
            uid = f"{LOAD_TEST_PREFIX}{draws}-{real_user}"
            for r in by_user[real_user][: n - written]:
                r = {**r, "user_id": uid}
                if isinstance(r.get("text"), str):
                    if recombine is not None:
                        r["text"] = recombine.text(r["text"])
                    made.append(r["text"])
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
                written += 1
            draws += 1
    with atomic_path(out / f"meta_{category}.jsonl") as tmp:
        shutil.copyfile(source / f"meta_{category}.jsonl", tmp)
    atomic_write_text(
        out / "LOADTEST.md",
        README.format(n=n, category=category, seed=seed, texts=texts, real=stats.records, users=len(users),
                      source=source, how=HOW[texts]),
    )  # fmt: skip
    return {"reviews": written, "users": draws, "real_reviews": stats.records, "real_users": len(users),
            "shares": distinct_shares(made), "real_shares": distinct_shares(real)}  # fmt: skip
