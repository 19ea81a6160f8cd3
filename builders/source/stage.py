"""The source wing's two stages: ``ingest`` (Amazon files → products, corpus, reviews) and ``users``
(reviews → sentences, the profile/held-out split, qualified users, product links).

Both have the signature every stage has, ``run_<stage>(wd, cfg, *, force=False) -> StageStats``
(:mod:`pqb.builders.pipeline` runs them in order); the artifacts and their columns are declared in
:mod:`pqb.builders.workdir`.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict, deque
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pqb.builders.config import BuildConfig, StageStats, UserConfig
from pqb.builders.errors import EmptyInputError
from pqb.builders.executor import Executor
from pqb.builders.nlp import installed_spacy_model_id
from pqb.builders.source.amazon import READER_VERSION, ReadStats, iter_meta, iter_reviews, resolve_source
from pqb.builders.source.descriptors import (
    ATTESTATION_PER,
    DescriptorModel,
    PhraseCounter,
    catalogue_phrases,
    count_phrases,
    rejection_report,
)
from pqb.builders.source.products import attribute_candidates, clean_text, finish_row, own_text, product_base
from pqb.builders.source.users import CapChooser, count_chunk, link_rows, qualified_mask, sentence_rows
from pqb.builders.text import SENTENCE_END
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
from pqb.dataset.progress import bar
from pqb.dataset.schema import CORPUS_SCHEMA, category_from_domain

STAGE_VERSION = 1
CORE_TERM_VERSION = 3
"""Version of the core-term judgement (:mod:`pqb.builders.source.descriptors`); 2: issue 43's rules; 3: kinds
from how the domain's text uses each value, category-path platforms (issue 43, round two)."""
USERS_VERSION = 2
"""2: sentences cut at sentence ends (no parse), counted for every user, written for the linked users only."""
INGEST_BATCH = 50_000
"""Reviews per Arrow batch written by ingest: its memory is a batch, not the review file."""
USERS_CHUNK = 20_000
"""Reviews per chunk of the users stage (a counting job, or a batch of linked users' reviews)."""


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
    voice, catalogue = PhraseCounter(values), PhraseCounter(catalogue_phrases(candidates.values()))
    for text in texts.values():  # the catalogue: what the domain's sellers write in free text
        catalogue.add(text)
    texts.clear()
    per_user: Counter[str] = Counter()
    per_product: Counter[str] = Counter()
    n_reviews = 0
    frozen = tuple(values)

    def batches(out: ParquetStreamWriter) -> Iterator[tuple[tuple[str, ...], list[str]]]:
        """Write the reviews a batch at a time; each batch's texts go on to be counted (the voice)."""
        nonlocal n_reviews
        batch: list[dict[str, Any]] = []
        for r in iter_reviews(reviews_path, rstats, strict=cfg.strict):
            batch.append({"user_id": r["user_id"], "parent_asin": r["parent_asin"], "review_idx": n_reviews,
                          "text": r["text"]})  # fmt: skip
            n_reviews += 1
            per_user[r["user_id"]] += 1
            per_product[r["parent_asin"]] += 1
            if len(batch) == INGEST_BATCH:
                out.write_rows(batch)
                yield frozen, [b["text"] for b in batch]
                batch = []
        out.write_rows(batch)
        yield frozen, [b["text"] for b in batch]

    with ParquetStreamWriter(wd.file(REVIEWS), REVIEWS_SCHEMA) as out:
        jobs = batches(out)
        ex = cfg.executor
        for part in map(count_phrases, jobs) if ex is None else ex.map(count_phrases, jobs):
            voice.merge(part)
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
    """Sentences, the profile/held-out split, qualified users, product links, and the linked users' sentences.

    Three streaming passes over ``reviews.parquet``, none of which parses (docs/design.md §3, "Users"):

    1. **count** every review's sentences per split (cut at sentence ends, the tokenizer only for
       pieces too short to be sure), in chunks of :data:`USERS_CHUNK` through ``cfg.executor``, and sum
       them per user with Arrow: ``users.parquet`` (every user, qualified or not);
    2. **link**: the qualified reviewers of each target (``user_id`` and ``parent_asin`` columns only),
       then :func:`~pqb.builders.source.users.link_rows`: ``links.parquet``;
    3. **sentences** of the linked users alone, capped per :meth:`UserConfig.caps` when a cap is set (one
       more pass over those users' reviews finds, for users over the cap, the sentences of smallest
       ``cap_key``): ``sentences.parquet``, the only sentences any later stage reads or parses.

    Memory is a chunk of reviews, per-user counts (as Arrow columns) and, under a cap, at most twice
    the cap's keys per linked user over it.
    """
    ucfg = cfg.user_config()
    stage = wd.stage(
        "users",
        [wd.path / REVIEWS, wd.path / PRODUCTS],
        {
            **ucfg.as_dict(),
            "sentence_split": SENTENCE_END.pattern,
            "spacy": installed_spacy_model_id(),
            "version": USERS_VERSION,
        },
        [SENTENCES, USERS, LINKS],
    )
    if (done := stage.cached(force)) is not None:
        return done
    t0 = time.perf_counter()
    products = read_parquet(wd.path / PRODUCTS, columns=["parent_asin", "is_target"])
    targets = products.filter(pc.fill_null(products.column("is_target"), False)).column("parent_asin")
    reviews = pq.ParquetFile(wd.path / REVIEWS)
    users = _count_users(reviews, ucfg, cfg.executor)
    write_parquet(users, wd.file(USERS))
    t_count = time.perf_counter() - t0
    qualified = users.filter(users.column("qualified")).column("user_id").combine_chunks()
    reviewers = _target_reviewers(reviews, targets, qualified)
    links = link_rows(targets.to_pylist(), reviewers, qualified.to_pylist(), ucfg, executor=cfg.executor)
    write_parquet(pa.Table.from_pylist(links, schema=LINKS_SCHEMA), wd.file(LINKS))
    linked = pa.array(sorted({lk["user_id"] for lk in links}), pa.string())
    t_link = time.perf_counter() - t0 - t_count
    written, capped = _write_sentences(reviews, users, linked, ucfg, wd.file(SENTENCES))
    per_asin = Counter(lk["asin"] for lk in links)
    n_profile, n_heldout = (pc.sum(users.column(c), min_count=0).as_py() for c in ("n_profile", "n_heldout"))
    stats = {
        "sentences": n_profile + n_heldout,
        "profile_sentences": n_profile,
        "heldout_sentences": n_heldout,
        "users": users.num_rows,
        "users_qualified": len(qualified),
        "sentences_of_qualified": pc.sum(
            users.filter(users.column("qualified")).column("n_sentences"), min_count=0
        ).as_py(),
        "links": len(links),
        "linked_targets": len(per_asin),
        "linked_users": len(linked),
        "targets_with_2plus_users": sum(1 for c in per_asin.values() if c >= 2),
        "sentences_written": written,
        "users_capped": capped,
        "count_seconds": round(t_count, 3),
        "link_seconds": round(t_link, 3),
        "sentence_seconds": round(time.perf_counter() - t0 - t_count - t_link, 3),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    stage.done(stats)
    return stats


def _count_users(reviews: pq.ParquetFile, ucfg: UserConfig, executor: Executor | None) -> pa.Table:
    """Pass 1: every user's (profile, held-out) sentence counts and qualification, sorted by ``user_id``
    (the rows of ``users.parquet``). The texts go to the executor a chunk at a time; the user ids wait
    here, in order, as Arrow arrays."""
    ids: deque[pa.Array] = deque()

    def jobs() -> Iterator[tuple[list[str], UserConfig]]:
        for batch in reviews.iter_batches(batch_size=USERS_CHUNK, columns=["user_id", "text"]):
            ids.append(batch.column(0))
            yield batch.column(1).to_pylist(), ucfg

    n_chunks = -(-reviews.metadata.num_rows // USERS_CHUNK)
    mapped = map(count_chunk, jobs()) if executor is None else executor.map(count_chunk, jobs())
    parts = []
    for counts in bar(mapped, total=n_chunks, desc="count sentences", unit="chunk", leave=False):
        parts.append(pa.table({"user_id": ids.popleft(), "p": counts[:, 0], "h": counts[:, 1]}))
    summed = (
        pa.concat_tables(parts).group_by("user_id").aggregate([("p", "sum"), ("h", "sum")]).sort_by("user_id")
    )
    p, h = (summed.column(c).to_numpy() for c in ("p_sum", "h_sum"))
    return pa.table(
        [
            summed.column("user_id"),
            pa.array(p + h),
            pa.array(p),
            pa.array(h),
            pa.array(qualified_mask(p, h, ucfg)),
        ],
        schema=USERS_TABLE_SCHEMA,
    )


def _target_reviewers(reviews: pq.ParquetFile, targets: pa.Array, qualified: pa.Array) -> dict[str, set[str]]:
    """Pass 2: the qualified users who reviewed each target (two narrow columns, filtered batch by batch)."""
    out: dict[str, set[str]] = defaultdict(set)
    for batch in reviews.iter_batches(batch_size=INGEST_BATCH, columns=["user_id", "parent_asin"]):
        keep = pc.and_(
            pc.is_in(batch.column(1), value_set=targets), pc.is_in(batch.column(0), value_set=qualified)
        )
        part = batch.filter(keep)
        for u, a in zip(part.column(0).to_pylist(), part.column(1).to_pylist(), strict=True):
            out[a].add(u)
    return out


def _linked_reviews(reviews: pq.ParquetFile, linked: pa.Array) -> Iterator[list[dict[str, Any]]]:
    """The reviews of the ``linked`` users, in file order, a batch at a time."""
    for batch in reviews.iter_batches(
        batch_size=USERS_CHUNK, columns=["user_id", "parent_asin", "review_idx", "text"]
    ):
        part = batch.filter(pc.is_in(batch.column(0), value_set=linked))
        if part.num_rows:
            yield part.to_pylist()


def _write_sentences(
    reviews: pq.ParquetFile, users: pa.Table, linked: pa.Array, ucfg: UserConfig, path: Path
) -> tuple[int, int]:
    """Pass 3: ``sentences.parquet`` for the ``linked`` users, in file order; returns (rows, users capped).

    Under a cap, a first pass over the reviews of the linked users who exceed it chooses their sentences
    (:class:`~pqb.builders.source.users.CapChooser`); every other linked user keeps all of theirs."""
    caps = ucfg.caps()
    over = pa.array([], pa.string())
    if caps is not None:
        mine = users.filter(pc.is_in(users.column("user_id"), value_set=linked))
        big = pc.or_(
            pc.greater(mine.column("n_profile"), caps[0]), pc.greater(mine.column("n_heldout"), caps[1])
        )
        over = mine.filter(big).column("user_id").combine_chunks()
    chosen: set[tuple[int, int]] = set()
    if len(over):
        chooser = CapChooser(caps)  # type: ignore[arg-type]
        for part in _linked_reviews(reviews, over):
            for row in sentence_rows(part, ucfg):
                chooser.add(row)
        chosen = chooser.chosen()
    over_set = set(over.to_pylist())
    n = 0
    with ParquetStreamWriter(path, SENTENCES_SCHEMA) as out:
        for part in bar(_linked_reviews(reviews, linked), desc="sentences", unit="chunk", leave=False):
            rows = [r for r in sentence_rows(part, ucfg)
                    if r["user_id"] not in over_set or (r["review_idx"], r["sent_idx"]) in chosen]  # fmt: skip
            out.write_rows(rows)
            n += len(rows)
    return n, len(over)
