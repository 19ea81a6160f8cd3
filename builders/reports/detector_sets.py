"""The third labelled set of the slip detector (the *test* set): review text no earlier set has seen.

The dev and held-out sets (:mod:`pqb.builders.reports.detector_eval`) cover all 23 categories of
``amazon2023-mini`` and every one of its users; once the held-out set had been scored against three
rule revisions it no longer measured unseen data. This set comes from the two other real Amazon Reviews
2023 samples under ``<PQB_DATA_DIR>/amazon2023`` that hold review text the slice does not:

* ``Electronics_stream``: the first 10,000 streamed rows of ``raw_review_Electronics``
  (``insominiac21__Product-recommendor-Amazon-2023``); it carries no product metadata, so the domain
  lexicon takes ``amazon2023-mini``'s Electronics products;
* ``Beauty_PGraphRAG``: the 5,000 beauty/personal-care user profiles of PGraphRAG's dev and test splits;
  the lexicon takes the slice's All_Beauty and Beauty_and_Personal_Care products.

A review is kept only when its user is absent from both earlier sets (by the labels' user key) and its
cleaned text is not a review of the slice, so users and texts are disjoint from everything the rules were
chosen on. :func:`candidates` lists the tokens to label (the universe, defined without any detector):
every alphabetic token of at least 3 letters outside both spelling dictionaries the detector knows
(symspell's and pyspellchecker's) that is lower-case, capitalised at the start of a sentence, or
capitalised mid-sentence within one edit of a common word; plus every token of a few fully read
sentences, drawn with a fixed seed.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pqb.builders.errors import MissingInputError

SOURCES: dict[str, dict[str, Any]] = {
    "Electronics_stream": {
        "files": ["insominiac21__Product-recommendor-Amazon-2023/Output Data__sampled_reviews_10k.parquet"],
        "products": ["Electronics"],
    },
    "Beauty_PGraphRAG": {
        "files": [
            "PGraphRAG-benchmark__PGraphRAG/data_splits__amazon_dev.json",
            "PGraphRAG-benchmark__PGraphRAG/data_splits__amazon_test.json",
        ],
        "products": ["All_Beauty", "Beauty_and_Personal_Care"],
    },
}
"""The set's categories: review files under ``<PQB_DATA_DIR>/amazon2023`` and the slice's product files
whose titles, brands and attributes make the domain lexicon."""

COMMON_COUNT = 2e6
"""symspell count above which a word is common: a capitalised mid-sentence token one edit from one is a
candidate ("Intenet"); other capitalised tokens are names, which no rule of the detector corrects."""


def _raw_reviews(path: Path) -> Iterator[tuple[str, str]]:
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path, columns=["reviewerID", "reviewText"]).to_pydict()
        yield from zip(table["reviewerID"], table["reviewText"], strict=True)
    else:
        for profile in json.loads(path.read_text(encoding="utf-8")):
            for review in profile["profile"]:
                yield profile["id"], review.get("text") or ""


def source_reviews(
    category: str, data_dir: Path, slice_dir: Path, seen_users: set[str] | None = None
) -> list[tuple[str, str]]:
    """``(user_id, cleaned text)`` of one category: users not in ``seen_users`` (label user keys; by default
    those of both earlier sets), texts not in the slice, each (user, text) once, in file order."""
    from pqb.builders.reports.detector_labels import HELDOUT, LABELS, load_labels, user_key
    from pqb.builders.source.users import clean_review_text

    if seen_users is None:
        seen_users = {r["user"] for p in (LABELS, HELDOUT) for r in load_labels(p)[1]}
    slice_texts = {
        clean_review_text(json.loads(line).get("text") or "")
        for f in sorted(slice_dir.glob("[A-Z]*.jsonl"))
        for line in f.read_text(encoding="utf-8").splitlines()
        if line.strip()
    }
    out: list[tuple[str, str]] = []
    kept: set[tuple[str, str]] = set()
    for name in SOURCES[category]["files"]:
        if not (data_dir / name).is_file():
            raise MissingInputError(
                f"{data_dir / name} is missing: the detector's test set reads it (set PQB_DATA_DIR to the folder "
                "holding amazon2023/)."
            )
        for uid, raw in _raw_reviews(data_dir / name):
            text = clean_review_text(raw or "")
            if user_key(uid) in seen_users or text in slice_texts or (uid, text) in kept:
                continue
            kept.add((uid, text))
            out.append((uid, text))
    return out


def source_products(category: str, slice_dir: Path) -> list[dict[str, Any]]:
    """The slice's product records of the category's product files (the domain lexicon's products)."""
    return [
        json.loads(line)
        for name in SOURCES[category]["products"]
        for line in (slice_dir / f"meta_{name}.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def candidates(
    data_dir: Path, slice_dir: Path, fully_read_per_category: int = 40, seed: int = 2027
) -> list[dict[str, Any]]:
    """Every token of the universe (module docstring) as an unlabelled row, with its sentence."""
    from pqb.builders.nlp import load_spacy
    from pqb.builders.reports.detector_labels import fragment_key, user_key
    from pqb.builders.writing_errors.detection import _large_wordlist, _load_symspell, fix_missing_apostrophes

    sym = _load_symspell(2)
    known = set(sym.words) | set(_large_wordlist())
    common = {w for w, c in sym.words.items() if c > COMMON_COUNT}
    nlp = load_spacy()
    rows: list[dict[str, Any]] = []
    for cat in SOURCES:
        reviews = source_reviews(cat, data_dir, slice_dir)
        sents: list[tuple[str, str]] = []
        for (uid, _), doc in zip(reviews, nlp.pipe([t for _, t in reviews], batch_size=256), strict=True):
            sents += [(uid, fix_missing_apostrophes(s.text)) for s in doc.sents if len(s) >= 3]
        rnd = random.Random(seed)
        users = sorted({u for u, _ in sents})
        rnd.shuffle(users)
        by_user: dict[str, list[str]] = {}
        for u, s in sents:
            by_user.setdefault(u, []).append(s)
        read = {(u, rnd.choice(by_user[u])) for u in users[:fully_read_per_category]}
        for uid, text in dict.fromkeys(sents):
            doc = nlp.make_doc(text)
            for tok in doc:
                w = tok.text
                source = None
                if (uid, text) in read and any(c.isalpha() for c in w):
                    source = "fully_read"
                elif len(w) >= 3 and w.isalpha() and w.lower() not in known:
                    if w.islower():
                        source = "lowercase_oov"
                    elif tok.is_sent_start or tok.i == 0:
                        source = "initial_capital_oov"
                    elif len(w) >= 4 and _near_common(sym, w.lower(), common):
                        source = "capital_oov_near_word"
                if source is None:
                    continue
                _, fragment, offset = fragment_key(cat, text, tok.idx, w)
                rows.append(
                    {"category": cat, "user": user_key(uid), "fragment": fragment, "offset": offset,
                     "token": w, "source": source, "sentence": text}
                )  # fmt: skip
    return rows


def _near_common(sym: Any, word: str, common: set[str]) -> bool:
    from symspellpy import Verbosity

    return any(s.term in common for s in sym.lookup(word, Verbosity.ALL, max_edit_distance=1))
