"""The source wing's two stages: ``ingest`` (Amazon files → products, corpus, reviews) and ``users``
(reviews → sentences, the profile/held-out split, qualified users, product links).

Both have the signature every stage has, ``run_<stage>(wd, cfg, *, force=False) -> StageStats``
(:mod:`pqb.builders.pipeline` runs them in order); the artifacts and their columns are declared in
:mod:`pqb.builders.workdir`.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pqb.builders.config import BuildConfig, StageStats
from pqb.builders.errors import EmptyInputError
from pqb.builders.nlp import installed_spacy_model_id
from pqb.builders.parses import ParseCache
from pqb.builders.source.amazon import READER_VERSION, ReadStats, iter_meta, iter_reviews, resolve_source
from pqb.builders.source.descriptors import ATTESTATION_PER, DescriptorModel, PhraseCounter, rejection_report
from pqb.builders.source.products import attribute_candidates, clean_text, finish_row, own_text, product_base
from pqb.builders.source.users import count_splits, link_rows, sentence_rows, users_from_counts
from pqb.builders.workdir import (
    CORPUS,
    LINKS,
    LINKS_SCHEMA,
    PRODUCTS,
    PRODUCTS_SCHEMA,
    REVIEWS,
    REVIEWS_SCHEMA,
    SENTENCES,
    SENTENCES_SCHEMA,
    USERS,
    USERS_TABLE_SCHEMA,
    ParquetStreamWriter,
    WorkDir,
    read_parquet,
    write_parquet,
)
from pqb.dataset.schema import CORPUS_SCHEMA, category_from_domain

STAGE_VERSION = 1
CORE_TERM_VERSION = 3
"""Version of the core-term judgement (:mod:`pqb.builders.source.descriptors`); 2: issue 43's rules; 3: kinds
from how the domain's text uses each value, category-path platforms (issue 43, round two)."""
INGEST_BATCH = 50_000
"""Reviews per Arrow batch written by ingest: its memory is a batch, not the review file."""
USERS_CHUNK = 20_000
"""Reviews per chunk of the users stage: its memory is a chunk's rows plus per-user counters."""


def run_ingest(wd: WorkDir, cfg: BuildConfig, *, force: bool = False) -> StageStats:
    """Stream the category's reviews and metadata into products/corpus/reviews parquet files."""
    category = cfg.category or category_from_domain(wd.domain)
    src = resolve_source(cfg.source)
    reviews_path, meta_path = src.reviews_path(category), src.meta_path(category)
    stage = wd.stage(
        "ingest",
        [reviews_path, meta_path],
        {
            "source": src.describe(),
            "category": category,
            "strict": cfg.strict,
            "version": STAGE_VERSION,
            "reader": READER_VERSION,
            "core_terms": {
                "version": CORE_TERM_VERSION,
                "attestation_per": ATTESTATION_PER,
                "spacy": installed_spacy_model_id(),
            },
        },
        [PRODUCTS, CORPUS, REVIEWS],
    )
    if (done := stage.cached(force)) is not None:
        return done
    t0 = time.perf_counter()
    mstats, rstats = ReadStats(), ReadStats()
    no_title = 0

    def titled(meta: Mapping[str, Any]) -> str | None:
        """Why a record gives no product (no title, or one that cleaning empties), else ``None``: the
        corpus has a document per titled product, so the reader counts the others with their line."""
        nonlocal no_title
        if clean_text(meta.get("title")):
            return None
        no_title += 1
        raw = meta.get("title")
        return "no title (a product needs one)" if not raw else f"title {raw[:60]!r} is empty after cleaning"

    bases: dict[str, dict[str, Any]] = {}
    candidates: dict[str, list[Any]] = {}
    texts: dict[str, str] = {}
    for meta in iter_meta(meta_path, mstats, strict=cfg.strict, usable=titled):
        bases[meta["parent_asin"]] = product_base(meta)
        candidates[meta["parent_asin"]] = attribute_candidates(meta)
        texts[meta["parent_asin"]] = own_text(meta)
    values = sorted({c.value for cands in candidates.values() for c in cands})
    voice, catalogue = PhraseCounter(values), PhraseCounter(values)
    for text in texts.values():  # the catalogue: what the domain's sellers write in free text
        catalogue.add(text)
    texts.clear()
    per_user: Counter[str] = Counter()
    per_product: Counter[str] = Counter()
    n_reviews = 0
    with ParquetStreamWriter(wd.file(REVIEWS), REVIEWS_SCHEMA) as out:
        batch: list[dict[str, Any]] = []
        for r in iter_reviews(reviews_path, rstats, strict=cfg.strict):
            batch.append({"user_id": r["user_id"], "parent_asin": r["parent_asin"], "review_idx": n_reviews,
                          "text": r["text"]})  # fmt: skip
            n_reviews += 1
            per_user[r["user_id"]] += 1
            per_product[r["parent_asin"]] += 1
            voice.add(r["text"])
            if len(batch) == INGEST_BATCH:
                out.write_rows(batch)
                batch = []
        out.write_rows(batch)
        _require_records(rstats, "reviews")
        _require_records(mstats, "metadata")
    asins = sorted(bases)
    model = DescriptorModel.learn([candidates[a] for a in asins], voice, catalogue)
    judged: list[Any] = []
    prows = [finish_row(bases[a], candidates[a], model, judged) for a in asins]
    targets = {p["parent_asin"] for p in prows if p["is_target"]}
    with_meta = sum(n for a, n in per_product.items() if a in bases)
    of_targets = sum(n for a, n in per_product.items() if a in targets)
    write_parquet(pa.Table.from_pylist(prows, schema=PRODUCTS_SCHEMA), wd.file(PRODUCTS))
    corpus = [{"id": p["parent_asin"], "title": p["title"], "text": p["text"]} for p in prows]
    write_parquet(pa.Table.from_pylist(corpus, schema=CORPUS_SCHEMA), wd.file(CORPUS))
    stats = {
        "reviews": n_reviews,
        "users": len(per_user),
        "users_ge5_reviews": sum(1 for c in per_user.values() if c >= 5),
        "meta_records": mstats.records,
        "products": len(prows),
        "products_without_title": no_title,
        "duplicate_meta": mstats.counts["duplicate"],
        "targets": len(targets),
        "reviews_with_meta": with_meta,
        "reviews_of_targets": of_targets,
        "core_term_judgement": {**rejection_report(judged), **model.summary()},
        "reviews_read": rstats.as_dict(),
        "meta_read": mstats.as_dict(),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    stage.done(stats)
    return stats


def _require_records(stats: ReadStats, what: str) -> None:
    """Stop at ingest when a file gave nothing, so later stages are not blamed (thresholds, no users)."""
    if stats.records:
        return
    if not stats.lines:
        raise EmptyInputError(
            f"{stats.path}: the {what} file has no records (0 non-blank lines); "
            "download it again or pick another --domain"
        )
    counted = ", ".join(f"{k}={n}" for k, n in sorted(stats.counts.items()) if n)
    first = next((v[0] for v in stats.examples.values() if v), "")
    raise EmptyInputError(
        f"{stats.path}: none of its {stats.lines} lines is a usable {what} record "
        f"({counted}; first: {first}); fix the file"
    )


def run_users(wd: WorkDir, cfg: BuildConfig, *, force: bool = False) -> StageStats:
    """Sentences (spaCy boundaries), the profile/held-out split, qualified users and product links.

    Reviews stream through in chunks of :data:`USERS_CHUNK`: each chunk's sentences are split (parses
    cached as they finish, through ``cfg.executor``), counted per user and appended to
    ``sentences.parquet``, so memory does not grow with the review file and a killed run re-parses at
    most one parse chunk.
    """
    ucfg = cfg.user_config()
    stage = wd.stage(
        "users",
        [wd.path / REVIEWS, wd.path / PRODUCTS],
        {**ucfg.as_dict(), "spacy": installed_spacy_model_id(), "version": STAGE_VERSION},
        [SENTENCES, USERS, LINKS],
    )
    if (done := stage.cached(force)) is not None:
        return done
    t0 = time.perf_counter()
    products = read_parquet(wd.path / PRODUCTS).select(["parent_asin", "is_target"]).to_pylist()
    targets = [p["parent_asin"] for p in products if p["is_target"]]
    target_set = set(targets)
    counts: dict[str, list[int]] = {}
    reviewers: dict[str, set[str]] = defaultdict(set)
    n_sents = 0
    reviews = pq.ParquetFile(wd.path / REVIEWS)
    cache = ParseCache.default()
    with ParquetStreamWriter(wd.file(SENTENCES), SENTENCES_SCHEMA) as out:
        for batch in reviews.iter_batches(batch_size=USERS_CHUNK):
            chunk = batch.to_pylist()
            sents = sentence_rows(chunk, ucfg, cache=cache, executor=cfg.executor)
            count_splits(sents, counts)
            out.write_rows(sents)
            n_sents += len(sents)
            for r in chunk:
                if r["parent_asin"] in target_set:
                    reviewers[r["parent_asin"]].add(r["user_id"])
    cache.close()
    t_parse = time.perf_counter() - t0
    users = users_from_counts(counts, ucfg)
    qualified = [u["user_id"] for u in users if u["qualified"]]
    links = link_rows(targets, reviewers, qualified, ucfg, executor=cfg.executor)
    write_parquet(pa.Table.from_pylist(users, schema=USERS_TABLE_SCHEMA), wd.file(USERS))
    write_parquet(pa.Table.from_pylist(links, schema=LINKS_SCHEMA), wd.file(LINKS))
    per_asin = Counter(lk["asin"] for lk in links)
    n_profile = sum(c[0] for c in counts.values())
    stats = {
        "sentences": n_sents,
        "profile_sentences": n_profile,
        "heldout_sentences": n_sents - n_profile,
        "users": len(users),
        "users_qualified": len(qualified),
        "sentences_of_qualified": sum(u["n_sentences"] for u in users if u["qualified"]),
        "links": len(links),
        "linked_targets": len(per_asin),
        "targets_with_2plus_users": sum(1 for c in per_asin.values() if c >= 2),
        "sentence_seconds": round(t_parse, 3),
        "sentences_per_second": round(n_sents / max(t_parse, 1e-9), 1),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    stage.done(stats)
    return stats
