"""The three kinds of text the naturalness report and the validation study put side by side.

* **PQB**: the rows of a built dataset folder (``<dataset>/data/<domain>/*.parquet``, the published layout),
  with their core terms, users and error queries;
* **the authors' release**: ``<release dir>/<Category>.json`` (``{asin: [{asin, uid, syntax_query,
  typo_query}]}``), which has no core terms: the words present in every query of a product stand in
  for them (:func:`pqb.builders.reports.release_compare.core_term_proxy`);
* **real review sentences** of the same domain's ``<Category>.jsonl`` from a local Amazon Reviews 2023
  copy, cleaned and split by the users stage's own code (spaCy sentences, parse cache), with their
  reviewer, so a study can show a user's own writing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pqb.builders.errors import DataError, UsageError
from pqb.builders.reports.release_compare import core_term_proxy
from pqb.builders.source.amazon import LocalSource, ReadStats, iter_reviews
from pqb.builders.source.users import clean_review_text
from pqb.dataset import settings
from pqb.dataset.schema import category_from_domain, term_spans

_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")
"""The word pattern of :func:`pqb.dataset.schema.words` (the proxy's unit), with positions."""

REAL_MIN_WORDS, REAL_MAX_WORDS = 15, 35
"""Real sentences of 15-35 words: the length range of the queries they are compared with (issue 43)."""


def read_pqb_rows(dataset_dir: str | Path, domain: str) -> list[dict[str, Any]]:
    """Rows of the ``<domain>`` config of a dataset folder, in file order."""
    import pyarrow.parquet as pq

    folder = Path(dataset_dir) / "data" / domain
    files = sorted(folder.glob("*.parquet"))
    if not files:
        raise UsageError(
            f"no {domain} config in {dataset_dir} (looked for {folder}/*.parquet); pass --dataset-path a "
            "built dataset folder, or build the domain with pqb-build all"
        )
    rows: list[dict[str, Any]] = []
    for f in files:
        rows += pq.read_table(f).to_pylist()
    return rows


def release_file(release_dir: str | Path | None, domain: str) -> Path:
    d = Path(release_dir) if release_dir else settings.PQB_RELEASE_DIR
    path = d / f"{category_from_domain(domain)}.json"
    if not path.is_file():
        raise UsageError(
            f"no authors' release file for {domain} ({path} missing); set PQB_RELEASE_DIR or pass --release-dir"
        )
    return path


def read_release(release_dir: str | Path | None, domain: str) -> dict[str, list[dict[str, Any]]]:
    """``{asin: records}`` of the authors' release for ``domain`` (records without a string
    ``syntax_query`` are refused with the file's name: the release never has one)."""
    path = release_file(release_dir, domain)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DataError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected an object keyed by ASIN")
    for asin, records in data.items():
        for r in records:
            if not isinstance(r, dict) or not isinstance(r.get("syntax_query"), str):
                raise DataError(f"{path}: ASIN {asin} has a record without a syntax_query string")
    return {a: data[a] for a in sorted(data)}


@dataclass(frozen=True)
class ReviewSentence:
    user_id: str  # the Amazon reviewer id, as in the source file
    asin: str
    text: str


def review_sentences(
    amazon_dir: str | Path | None, domain: str
) -> tuple[list[ReviewSentence], dict[str, Any]]:
    """Every spaCy sentence of the domain's reviews (deduplicated per user), and the reader's counts."""
    from pqb.builders.parses import split_sentences

    source = LocalSource(Path(amazon_dir) if amazon_dir else settings.PQB_AMAZON_DIR)
    path = source.reviews_path(category_from_domain(domain))
    stats = ReadStats(path=str(path))
    reviews = list(iter_reviews(path, stats))
    cleaned = [clean_review_text(r["text"]) for r in reviews]
    out: list[ReviewSentence] = []
    seen: set[tuple[str, str]] = set()
    for r, sents in zip(reviews, split_sentences(cleaned), strict=True):
        for text, _ in sents:
            if text and (r["user_id"], text) not in seen:
                seen.add((r["user_id"], text))
                out.append(ReviewSentence(r["user_id"], r["parent_asin"], text))
    return out, stats.as_dict()


def in_length(text: str, lo: int = REAL_MIN_WORDS, hi: int = REAL_MAX_WORDS) -> bool:
    """Whitespace-separated word count within ``[lo, hi]``."""
    return lo <= len(text.split()) <= hi


def core_term_spans(text: str, terms: Iterable[str]) -> list[tuple[int, int]]:
    """Character spans of every core term in ``text`` (whole words, case-insensitive)."""
    return sorted(s for t in terms for s in term_spans(text, t))


def word_spans(text: str, vocabulary: set[str]) -> list[tuple[int, int]]:
    """Spans of the words of ``text`` whose lower-cased form is in ``vocabulary``."""
    return [m.span() for m in _WORD.finditer(text) if m.group().lower() in vocabulary]


def proxy_vocabularies(groups: Iterable[Sequence[str]]) -> list[set[str] | None]:
    """Per group of queries of one product: the proxy core-term words (``None`` for a lone query, whose
    proxy would be the whole query)."""
    return [core_term_proxy(list(g)) if len(g) >= 2 else None for g in groups]


__all__ = [
    "REAL_MAX_WORDS",
    "REAL_MIN_WORDS",
    "ReviewSentence",
    "core_term_spans",
    "in_length",
    "proxy_vocabularies",
    "read_pqb_rows",
    "read_release",
    "release_file",
    "review_sentences",
    "word_spans",
]
