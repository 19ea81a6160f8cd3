"""The first builder stages on a work directory: ingest → users → profiles → validate syntax.

Each ``run_*`` function is what ``pqb-build <stage>`` (and ``pqb-build all``) calls. A stage records its
input fingerprint in ``<work>/<domain>/manifest.json`` and is skipped when nothing changed
(``force=True`` reruns it). Artifacts (names and columns are a contract other stages read):

* ``products.parquet``: parent_asin, title, text, brand, attributes list<{name,value}>, core_terms
  list<str> (5 or empty), protected_terms list<str>, is_target bool — every product with a title;
* ``corpus.parquet``: id, title, text (the retrieval corpus, same products);
* ``reviews.parquet``: user_id, parent_asin, review_idx, text (raw review text, file order; duplicates
  and bad lines dropped and texts capped by :func:`pqb.builders.source.amazon.iter_reviews`);
* ``sentences.parquet``: user_id, parent_asin, review_idx, sent_idx, sentence_id, text, split;
* ``users.parquet``: user_id, n_sentences, n_profile, n_heldout, qualified;
* ``links.parquet``: asin, user_id (target products ↔ qualified users);
* ``syntax/``: vocab.json, svd.safetensors, encoder.safetensors, encoder.json, gaussians.parquet,
  embeddings.parquet (sentence_id, user_id, split, z);
* ``validation/syntax_attribution.{md,json}``.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pqb.builders.errors import DataError
from pqb.builders.executor import Executor
from pqb.builders.nlp import installed_spacy_model_id
from pqb.builders.parses import ParseCache, parse_texts
from pqb.builders.source.amazon import READER_VERSION, ReadStats, iter_meta, iter_reviews, resolve_source
from pqb.builders.source.products import product_row
from pqb.builders.source.users import UserConfig, count_splits, link_rows, sentence_rows, users_from_counts
from pqb.builders.syntax.encoder_config import SYNTAX_DIR, EncoderConfig
from pqb.builders.syntax.gaussian import (
    MIN_CALIBRATION,
    RankOneDiagGaussian,
    audit,
    calibrated_threshold,
    calibration_split,
    chi2_threshold,
    pooled_prior,
    save_gaussians,
)
from pqb.builders.syntax.rules import rules_of
from pqb.builders.workdir import ParquetStreamWriter, WorkDir, read_parquet, write_parquet
from pqb.dataset.io import atomic_write_json, atomic_write_text
from pqb.dataset.schema import ATTRIBUTE_TYPE, CORPUS_SCHEMA, category_from_domain

PRODUCTS_SCHEMA = pa.schema(
    [("parent_asin", pa.string()), ("title", pa.string()), ("text", pa.string()), ("brand", pa.string()),
     ("attributes", pa.list_(ATTRIBUTE_TYPE)), ("core_terms", pa.list_(pa.string())),
     ("protected_terms", pa.list_(pa.string())), ("is_target", pa.bool_())]
)  # fmt: skip
REVIEWS_SCHEMA = pa.schema(
    [
        ("user_id", pa.string()),
        ("parent_asin", pa.string()),
        ("review_idx", pa.int64()),
        ("text", pa.string()),
    ]
)
SENTENCES_SCHEMA = pa.schema(
    [("user_id", pa.string()), ("parent_asin", pa.string()), ("review_idx", pa.int64()), ("sent_idx", pa.int64()),
     ("sentence_id", pa.string()), ("text", pa.string()), ("split", pa.string())]
)  # fmt: skip
USERS_TABLE_SCHEMA = pa.schema(
    [("user_id", pa.string()), ("n_sentences", pa.int64()), ("n_profile", pa.int64()), ("n_heldout", pa.int64()),
     ("qualified", pa.bool_())]
)  # fmt: skip
LINKS_SCHEMA = pa.schema([("asin", pa.string()), ("user_id", pa.string())])
EMBEDDINGS_SCHEMA = pa.schema(
    [
        ("sentence_id", pa.string()),
        ("user_id", pa.string()),
        ("split", pa.string()),
        ("z", pa.list_(pa.float64())),
    ]
)
STAGE_VERSION = 1
INGEST_BATCH = 50_000
"""Reviews per Arrow batch written by ingest: its memory is a batch, not the review file."""
THRESHOLD_RULES = {
    "chi2": "chi2_{d}({q:g}) for every user",
    "heldout": "each user's held-out sentences are split by a salted hash into calibration and audit halves; "
    "threshold = interpolated {q:g} quantile of the calibration D² (n >= {n}), shrunk with weight n/{n} "
    "toward a prior (2 <= n < {n}), the prior alone (n < 2); the prior is the pooled {q:g} quantile of all "
    "users' calibration D² under their own Gaussians (chi2_{d}({q:g}) if fewer than {n} are pooled); "
    "the audit uses only the audit half",
}
"""How a threshold is computed, in words, for the stage stats and the card."""


class InsufficientDataError(DataError, ValueError):
    """A stage cannot produce its artifacts from this domain's data (too few users or sentences)."""


class EmptyInputError(DataError):
    """A source file yields no usable record (empty, or every line counted bad)."""


def _wd(workdir: str | Path, domain: str) -> WorkDir:
    return WorkDir(Path(workdir), domain)


def _skip(wd: WorkDir, name: str) -> dict[str, Any]:
    rec = wd.manifest["stages"][name]
    return {"skipped": True, **rec.get("stats", {})}


# --------------------------------------------------------------------------------------------------
# ingest
# --------------------------------------------------------------------------------------------------


def run_ingest(
    workdir: str | Path,
    source: str | Path | None = None,
    domain: str = "video_games",
    strict: bool = False,
    *,
    category: str | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Stream the category's reviews and metadata into products/corpus/reviews parquet files."""
    wd = _wd(workdir, domain)
    category = category or category_from_domain(domain)
    src = resolve_source(source)
    reviews_path, meta_path = src.reviews_path(category), src.meta_path(category)
    stage = wd.stage(
        "ingest",
        [reviews_path, meta_path],
        {
            "source": src.describe(),
            "category": category,
            "strict": strict,
            "version": STAGE_VERSION,
            "reader": READER_VERSION,
        },
        ["products.parquet", "corpus.parquet", "reviews.parquet"],
    )
    if stage.is_fresh() and not force:
        return _skip(wd, "ingest")
    t0 = time.perf_counter()
    mstats, rstats = ReadStats(), ReadStats()
    products: dict[str, dict[str, Any]] = {}
    dup = no_title = 0
    for meta in iter_meta(meta_path, mstats, strict=strict):
        if not isinstance(meta.get("title"), str) or not meta["title"].strip():
            no_title += 1
            continue
        if meta["parent_asin"] in products:
            dup += 1
            continue
        row = product_row(meta)
        if row["title"]:
            products[meta["parent_asin"]] = row
        else:
            no_title += 1
    prows = [products[a] for a in sorted(products)]
    targets = {p["parent_asin"] for p in prows if p["is_target"]}
    per_user: Counter[str] = Counter()
    n_reviews = with_meta = of_targets = 0
    with ParquetStreamWriter(wd.file("reviews.parquet"), REVIEWS_SCHEMA) as out:
        batch: list[dict[str, Any]] = []
        for r in iter_reviews(reviews_path, rstats, strict=strict):
            batch.append({"user_id": r["user_id"], "parent_asin": r["parent_asin"], "review_idx": n_reviews,
                          "text": r["text"]})  # fmt: skip
            n_reviews += 1
            per_user[r["user_id"]] += 1
            with_meta += r["parent_asin"] in products
            of_targets += r["parent_asin"] in targets
            if len(batch) == INGEST_BATCH:
                out.write_rows(batch)
                batch = []
        out.write_rows(batch)
        _require_records(rstats, "reviews")
        _require_records(mstats, "metadata")
    write_parquet(pa.Table.from_pylist(prows, schema=PRODUCTS_SCHEMA), wd.file("products.parquet"))
    corpus = [{"id": p["parent_asin"], "title": p["title"], "text": p["text"]} for p in prows]
    write_parquet(pa.Table.from_pylist(corpus, schema=CORPUS_SCHEMA), wd.file("corpus.parquet"))
    stats = {
        "reviews": n_reviews,
        "users": len(per_user),
        "users_ge5_reviews": sum(1 for c in per_user.values() if c >= 5),
        "meta_records": mstats.records,
        "products": len(prows),
        "products_without_title": no_title,
        "duplicate_meta": dup,
        "targets": len(targets),
        "reviews_with_meta": with_meta,
        "reviews_of_targets": of_targets,
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


# --------------------------------------------------------------------------------------------------
# users
# --------------------------------------------------------------------------------------------------


USERS_CHUNK = 20_000
"""Reviews per chunk of the users stage: its memory is a chunk's rows plus per-user counters."""


def run_users(
    workdir: str | Path,
    domain: str = "video_games",
    *,
    seed: int = 0,
    link: str = "reviewers",
    link_users_per_product: int = 4,
    config: UserConfig | None = None,
    executor: Executor | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Sentences (spaCy boundaries), the profile/held-out split, qualified users and product links.

    Reviews stream through in chunks of :data:`USERS_CHUNK`: each chunk's sentences are split (parses
    cached as they finish), counted per user and appended to ``sentences.parquet``, so memory does
    not grow with the review file and a killed run re-parses at most one parse chunk.
    """
    wd = _wd(workdir, domain)
    cfg = config or UserConfig(link=link, link_users_per_product=link_users_per_product, seed=seed)  # type: ignore[arg-type]
    stage = wd.stage(
        "users",
        [wd.path / "reviews.parquet", wd.path / "products.parquet"],
        {**cfg.as_dict(), "spacy": installed_spacy_model_id(), "version": STAGE_VERSION},
        ["sentences.parquet", "users.parquet", "links.parquet"],
    )
    if stage.is_fresh() and not force:
        return _skip(wd, "users")
    t0 = time.perf_counter()
    products = read_parquet(wd.path / "products.parquet").select(["parent_asin", "is_target"]).to_pylist()
    targets = [p["parent_asin"] for p in products if p["is_target"]]
    target_set = set(targets)
    counts: dict[str, list[int]] = {}
    reviewers: dict[str, set[str]] = defaultdict(set)
    n_sents = 0
    reviews = pq.ParquetFile(wd.path / "reviews.parquet")
    cache = ParseCache.default()
    with ParquetStreamWriter(wd.file("sentences.parquet"), SENTENCES_SCHEMA) as out:
        for batch in reviews.iter_batches(batch_size=USERS_CHUNK):
            chunk = batch.to_pylist()
            sents = sentence_rows(chunk, cfg, cache=cache, executor=executor)
            count_splits(sents, counts)
            out.write_rows(sents)
            n_sents += len(sents)
            for r in chunk:
                if r["parent_asin"] in target_set:
                    reviewers[r["parent_asin"]].add(r["user_id"])
    cache.close()
    t_parse = time.perf_counter() - t0
    users = users_from_counts(counts, cfg)
    qualified = [u["user_id"] for u in users if u["qualified"]]
    links = link_rows(targets, reviewers, qualified, cfg)
    write_parquet(pa.Table.from_pylist(users, schema=USERS_TABLE_SCHEMA), wd.file("users.parquet"))
    write_parquet(pa.Table.from_pylist(links, schema=LINKS_SCHEMA), wd.file("links.parquet"))
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


# --------------------------------------------------------------------------------------------------
# profiles
# --------------------------------------------------------------------------------------------------


def run_profiles(
    workdir: str | Path,
    domain: str = "video_games",
    *,
    seed: int = 0,
    encoder_config: EncoderConfig | None = None,
    threshold_kind: str = "chi2",
    threshold_q: float = 0.95,
    encoder_users: str = "all",
    n_subsamples: int = 20,
    executor: Executor | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Rules → vocabulary/SVD/encoder on PROFILE sentences → per-user rank-one + diagonal Gaussians.

    ``encoder_users="all"`` trains the encoder on the profile sentences of every user (held-out text of
    any user is never used); ``"qualified"`` restricts it to qualified users. ``threshold_kind`` is
    ``chi2`` (χ²_d quantile ``threshold_q``) or ``heldout`` (:data:`THRESHOLD_RULES`: the user's
    calibration-split D² quantile with the small-sample rule of
    :func:`pqb.builders.syntax.gaussian.calibrated_threshold`; the audit runs on the disjoint audit split).
    """
    if threshold_kind not in {"chi2", "heldout"}:
        raise ValueError(f"threshold_kind must be 'chi2' or 'heldout', got {threshold_kind!r}")
    wd = _wd(workdir, domain)
    ecfg = encoder_config or EncoderConfig(seed=seed)
    outputs = [f"{SYNTAX_DIR}/{n}" for n in ("vocab.json", "svd.safetensors", "encoder.safetensors",
                                               "encoder.json", "gaussians.parquet", "embeddings.parquet")]  # fmt: skip
    stage = wd.stage(
        "profiles",
        [wd.path / "sentences.parquet", wd.path / "users.parquet"],
        {
            "encoder": ecfg.as_dict(),
            "seed": seed,  # also seeds the stability audit's subsamples
            "threshold_kind": threshold_kind,
            "threshold_q": threshold_q,
            "encoder_users": encoder_users,
            "n_subsamples": n_subsamples,
            "spacy": installed_spacy_model_id(),
            "version": STAGE_VERSION,
        },
        outputs,
    )
    if stage.is_fresh() and not force:
        return _skip(wd, "profiles")
    from pqb.builders.syntax.encoder import SyntaxEncoder  # torch: only when the stage runs

    t0 = time.perf_counter()
    sents = read_parquet(wd.path / "sentences.parquet").to_pylist()
    qualified = {u["user_id"] for u in read_parquet(wd.path / "users.parquet").to_pylist() if u["qualified"]}
    parsed = parse_texts([s["text"] for s in sents], executor=executor)
    rules = [rules_of(p) for p in parsed]
    t_parse = time.perf_counter() - t0
    if len(qualified) < 2:
        raise InsufficientDataError(
            f"{domain}: {len(qualified)} qualified user(s); profiles need >= 2 (lower the users thresholds)"
        )
    train = [
        i
        for i, s in enumerate(sents)
        if s["split"] == "profile" and (encoder_users == "all" or s["user_id"] in qualified)
    ]
    try:
        enc = SyntaxEncoder.fit(
            [rules[i] for i in train],
            [sents[i]["user_id"] for i in train],
            [sents[i]["parent_asin"] for i in train],
            ecfg,
        )
    except ValueError as exc:
        raise InsufficientDataError(f"{domain}: {exc}") from exc
    t_enc = time.perf_counter() - t0 - t_parse
    enc.save(wd.path / SYNTAX_DIR)
    use = [i for i, s in enumerate(sents) if s["user_id"] in qualified]
    Z = enc.encode_rule_sets([rules[i] for i in use])
    emb_rows = [{"sentence_id": sents[i]["sentence_id"], "user_id": sents[i]["user_id"], "split": sents[i]["split"],
                 "z": Z[j].tolist()} for j, i in enumerate(use)]  # fmt: skip
    write_parquet(
        pa.Table.from_pylist(emb_rows, schema=EMBEDDINGS_SCHEMA), wd.file(f"{SYNTAX_DIR}/embeddings.parquet")
    )
    by_user: dict[str, dict[str, list[int]]] = defaultdict(lambda: {"profile": [], "heldout": []})
    for j, i in enumerate(use):
        by_user[sents[i]["user_id"]][sents[i]["split"]].append(j)
    chi2 = chi2_threshold(threshold_q, ecfg.dim)
    users = sorted(by_user)
    fits = RankOneDiagGaussian.fit_many([Z[by_user[u]["profile"]] for u in users])
    splits = {
        u: calibration_split([emb_rows[j]["sentence_id"] for j in by_user[u]["heldout"]]) for u in users
    }
    d2_cal = {
        u: g.mahalanobis2(Z[by_user[u]["heldout"]][splits[u][0]]) for u, g in zip(users, fits, strict=True)
    }
    prior, prior_kind = pooled_prior(list(d2_cal.values()), threshold_q, ecfg.dim)
    gaussians: dict[str, RankOneDiagGaussian] = {}
    rule_counts: Counter[str] = Counter()
    for k, (uid, g) in enumerate(zip(users, fits, strict=True)):
        P, H = Z[by_user[uid]["profile"]], Z[by_user[uid]["heldout"]]
        cal, aud = splits[uid]
        if threshold_kind == "heldout":
            g.threshold, rule = calibrated_threshold(d2_cal[uid], threshold_q, ecfg.dim, prior=prior)
            g.threshold_kind = f"heldout_q{threshold_q:g}_{rule}"
        else:
            g.threshold, rule = chi2, "chi2"
            g.threshold_kind = f"chi2_{ecfg.dim}_q{threshold_q:g}"
        rule_counts[rule] += 1
        g.audit = {**audit(g, P, H[aud], threshold=g.threshold, stability=H, n_subsamples=n_subsamples,
                           seed=seed + k),
                   "n_profile": len(P), "n_heldout": len(H), "n_calibration": len(cal), "n_audit": len(aud)}  # fmt: skip
        gaussians[uid] = g
    save_gaussians(wd.file(f"{SYNTAX_DIR}/gaussians.parquet"), gaussians)
    d2_all = np.concatenate([g.mahalanobis2(Z[by_user[u]["heldout"]]) for u, g in gaussians.items()])
    stats = {
        "parsed_sentences": len(sents),
        "train_sentences": len(train),
        **enc.meta["train"],
        "gaussians": len(gaussians),
        "valid_gaussians": sum(bool(g.audit["valid"]) for g in gaussians.values()),
        "audit_pass": {
            k: sum(bool(g.audit[k]) for g in gaussians.values())
            for k in ("audit_numerics", "audit_calibration", "audit_stability")
        },
        "heldout_d2_median": float(np.median(d2_all)) if len(d2_all) else None,
        "heldout_d2_p95": float(np.percentile(d2_all, 95)) if len(d2_all) else None,
        "threshold": chi2 if threshold_kind == "chi2" else "per-user",
        "threshold_rule": THRESHOLD_RULES[threshold_kind].format(
            q=threshold_q, d=ecfg.dim, n=MIN_CALIBRATION
        ),
        "threshold_rules_used": dict(sorted(rule_counts.items())),
        "threshold_prior": {"kind": prior_kind, "value": prior} if threshold_kind == "heldout" else None,
        "parse_seconds": round(t_parse, 3),
        "encoder_seconds": round(t_enc, 3),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    stage.done(stats)
    return stats


# --------------------------------------------------------------------------------------------------
# validate syntax
# --------------------------------------------------------------------------------------------------


def run_validate_syntax(
    workdir: str | Path, domain: str = "video_games", *, seed: int = 0, n_boot: int = 500, force: bool = False
) -> dict[str, Any]:
    """The attribution table (7 models × balanced/AUROC/full-profile, bootstrap CIs) as md + json."""
    wd = _wd(workdir, domain)
    emb_path = wd.path / SYNTAX_DIR / "embeddings.parquet"
    stage = wd.stage(
        "validate_syntax",
        [emb_path, wd.path / "sentences.parquet"],
        {"seed": seed, "n_boot": n_boot, "version": STAGE_VERSION},
        ["validation/syntax_attribution.md", "validation/syntax_attribution.json"],
    )
    if stage.is_fresh() and not force:
        return _skip(wd, "validate_syntax")
    from pqb.builders.reports.attribution import run_attribution, to_markdown

    t0 = time.perf_counter()
    emb = read_parquet(emb_path).to_pylist()
    prof: dict[str, list] = defaultdict(list)
    held: dict[str, list] = defaultdict(list)
    for r in emb:
        (prof if r["split"] == "profile" else held)[r["user_id"]].append(r["z"])
    users = sorted(set(prof) & set(held))
    reviewed: dict[str, set[str]] = defaultdict(set)
    for s in read_parquet(wd.path / "sentences.parquet").select(["user_id", "parent_asin"]).to_pylist():
        if s["user_id"] in prof:
            reviewed[s["parent_asin"]].add(s["user_id"])
    co = sorted({(a, b) for us in reviewed.values() for a in us for b in us if a < b})
    if len(users) < 2:
        raise InsufficientDataError(
            f"{domain}: {len(users)} user(s) with profile and held-out embeddings; need >= 2"
        )
    results = run_attribution(
        {u: np.array(prof[u]) for u in users},
        {u: np.array(held[u]) for u in users},
        coreview=co,
        n_boot=n_boot,
        seed=seed,
    )
    info = {
        "domain": domain,
        "users": len(users),
        "heldout_sentences": sum(len(held[u]) for u in users),
        "profile_sentences": sum(len(prof[u]) for u in users),
        "pair_set": "all user pairs",
        "coreviewer_pairs": len(co),
        "bootstrap": f"{n_boot} user resamples, seed {seed}",
    }
    payload = {"info": info, "results": [r.as_dict() for r in results]}
    atomic_write_json(wd.file("validation/syntax_attribution.json"), payload)
    atomic_write_text(wd.file("validation/syntax_attribution.md"), to_markdown(results, info))
    stats = {**info, "rank1_diag": next(r.as_dict() for r in results if r.key == "rank1_diag"),
             "seconds": round(time.perf_counter() - t0, 3)}  # fmt: skip
    stage.done(stats)
    return stats
