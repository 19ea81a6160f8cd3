"""The syntax wing's stage, ``profiles``: rules → encoder → per-user Gaussians, thresholds and audit.

It has the signature every stage has, ``run_profiles(wd, cfg, *, force=False) -> StageStats``; the
artifacts and their columns are declared in :mod:`pqb.builders.workdir`.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter, deque
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pqb.builders.config import BuildConfig, StageStats
from pqb.builders.errors import InsufficientDataError, UsageError
from pqb.builders.nlp import installed_spacy_model_id
from pqb.builders.parses import parse_texts
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
from pqb.builders.workdir import (
    EMBEDDINGS,
    EMBEDDINGS_SCHEMA,
    ENCODER_FILES,
    GAUSSIANS,
    SENTENCES,
    SYNTAX_DIR,
    USERS,
    ParquetStreamWriter,
    WorkDir,
    iter_rows,
    read_parquet,
)
from pqb.dataset.progress import bar

STAGE_VERSION = (
    5  # 2: MKL CNR mode; 3: the MLP products through linalg.matmul; 4: exp, log, sqrt too (no MKL);
)
# 5: trains on qualified (linked) users only

THRESHOLD_RULES = {
    "chi2": "chi2_{d}({q:g}) for every user",
    "heldout": "each user's held-out sentences are split by a salted hash into calibration and audit halves; "
    "threshold = interpolated {q:g} quantile of the calibration D² (n >= {n}), shrunk with weight n/{n} "
    "toward a prior (2 <= n < {n}), the prior alone (n < 2); the prior is the pooled {q:g} quantile of all "
    "users' calibration D² under their own Gaussians (chi2_{d}({q:g}) if fewer than {n} are pooled); "
    "the audit uses only the audit half",
}
"""How a threshold is computed, in words, for the stage stats and the card."""


ENCODE_CHUNK = 16_384
"""Sentences per encoding chunk (the unit handed to the executor, and of each embeddings write)."""
MIN_ENCODE_ROWS = 64
"""Every encoding call sees at least this many rows (zero rows pad a short chunk): torch's CPU matrix
product takes another path for a handful of rows (measured: 1 and 3 rows give other float32 bits than
7 or more), so the padding keeps each embedding independent of where the chunking cut."""
AUDIT_CHUNK = 256
"""Users per audit chunk handed to the executor."""


def encoder_training_users(counts: Mapping[str, int], cap: int, seed: int) -> set[str]:
    """The users whose profile sentences train the encoder: every user when they hold at most ``cap``
    sentences together; otherwise users in the order of SHA-1(seed, user id), each taken when it still
    fits under ``cap`` (whole users, so each keeps its positives). Depends only on (seed, user, count)."""
    if sum(counts.values()) <= cap:
        return set(counts)
    ranked = sorted(counts, key=lambda u: hashlib.sha1(f"pqb-encoder|{seed}|{u}".encode()).digest())
    chosen, total = set(), 0
    for u in ranked:
        if total + counts[u] <= cap:
            chosen.add(u)
            total += counts[u]
    return chosen


def _encode_chunk(job: tuple[Any, list[frozenset[str]]]) -> np.ndarray:
    """One chunk's 16-d embeddings (in whichever process the executor chose), padded per :data:`MIN_ENCODE_ROWS`."""
    enc, rule_sets = job
    n = len(rule_sets)
    return enc.encode_rule_sets([*rule_sets, *[frozenset()] * max(0, MIN_ENCODE_ROWS - n)])[:n]


def _audit_chunk(
    job: tuple[list[tuple[Any, np.ndarray, np.ndarray, np.ndarray, int]], int],
) -> list[dict[str, Any]]:
    """The audits of one chunk of users: each depends on that user's Gaussian, sentences and seed only."""
    users, n_subsamples = job
    return [audit(g, P, A, threshold=g.threshold, stability=H, n_subsamples=n_subsamples, seed=k)
            for g, P, A, H, k in users]  # fmt: skip


def _rule_sets(texts: list[str], executor: Any) -> list[frozenset[str]]:
    """Rules of each text's parse; a text repeated in the list is parsed and ruled once."""
    unique = sorted(set(texts))
    rules = dict(zip(unique, map(rules_of, parse_texts(unique, executor=executor)), strict=True))
    return [rules[t] for t in texts]


# --------------------------------------------------------------------------------------------------
# profiles
# --------------------------------------------------------------------------------------------------


def run_profiles(wd: WorkDir, cfg: BuildConfig, *, force: bool = False) -> StageStats:
    """Rules → vocabulary/SVD/encoder on PROFILE sentences → per-user rank-one + diagonal Gaussians.

    ``sentences.parquet`` holds the linked users' sentences only (the users stage writes no other), so
    the vocabulary, the SVD and the encoder train on profile sentences of linked, qualified users (held-out
    text is never used), at most ``cfg.encoder_max_sentences`` of them (:func:`encoder_training_users`),
    and every Gaussian is a linked user's: no stage parses a sentence of any other user. ``threshold_kind`` is
    ``chi2`` (χ²_d quantile ``threshold_q``) or ``heldout`` (:data:`THRESHOLD_RULES`: the user's
    calibration-split D² quantile with the small-sample rule of
    :func:`pqb.builders.syntax.gaussian.calibrated_threshold`; the audit runs on the disjoint audit split).

    Memory is bounded by two narrow columns of the sentence table (user and split), the qualified users'
    16-d embeddings and their sentence ids: the texts are read a row group at a time
    (:func:`~pqb.builders.workdir.iter_rows`), the qualified users' sentences are parsed and encoded in
    chunks of :data:`ENCODE_CHUNK` and the audits run
    in chunks of users, both through ``cfg.executor`` (in input order, so the bytes do not depend on it).
    The Gaussians are fitted in one batched solve over all users, as before: :func:`pqb.builders.linalg.eigh`
    stops when the whole batch has converged, so splitting the batch would change bits.
    """
    seed, domain = cfg.seed, wd.domain
    threshold_kind, threshold_q = cfg.threshold_kind, cfg.threshold_q
    n_subsamples = cfg.n_subsamples
    if threshold_kind not in {"chi2", "heldout"}:
        raise UsageError(f"threshold_kind must be 'chi2' or 'heldout', got {threshold_kind!r}")
    if cfg.encoder_max_sentences < 2:
        raise UsageError(f"encoder_max_sentences must be >= 2, got {cfg.encoder_max_sentences}")
    ecfg = cfg.encoder_config()
    outputs = [*ENCODER_FILES, GAUSSIANS, EMBEDDINGS]
    stage = wd.stage(
        "profiles",
        [wd.path / SENTENCES, wd.path / USERS],
        {
            "encoder": ecfg.as_dict(),
            "seed": seed,  # also seeds the stability audit's subsamples
            "threshold_kind": threshold_kind,
            "threshold_q": threshold_q,
            "encoder_max_sentences": cfg.encoder_max_sentences,
            "n_subsamples": n_subsamples,
            "spacy": installed_spacy_model_id(),
            "version": STAGE_VERSION,
        },
        outputs,
    )
    if (done := stage.cached(force)) is not None:
        return done
    from pqb.builders.syntax.encoder import SyntaxEncoder  # torch: only when the stage runs

    t0 = time.perf_counter()
    ex = cfg.executor
    sentences = wd.path / SENTENCES
    users = read_parquet(wd.path / USERS, columns=["user_id", "qualified"])
    qualified = set(
        users.filter(pc.fill_null(users.column("qualified"), False)).column("user_id").to_pylist()
    )
    del users
    if len(qualified) < 2:
        raise InsufficientDataError(
            f"{domain}: {len(qualified)} qualified user(s); profiles need >= 2 (lower the users thresholds)"
        )
    # every row's user as its rank among the sorted user ids; masks instead of row dicts. Only these two
    # columns are read whole: the texts and ids are read a row group at a time (iter_rows) when needed
    table = read_parquet(sentences, columns=["user_id", "split"])
    coded = pc.dictionary_encode(table.column("user_id").combine_chunks())
    names = coded.dictionary.to_pylist()
    by_name = sorted(range(len(names)), key=names.__getitem__)
    rank_of = np.empty(len(names), np.int64)
    rank_of[by_name] = np.arange(len(names))
    user_names = [names[i] for i in by_name]
    code = rank_of[coded.indices.to_numpy(zero_copy_only=False)]
    is_qualified = np.array([u in qualified for u in user_names], bool)[code]
    is_profile = pc.fill_null(pc.equal(table.column("split"), "profile"), False).to_numpy(
        zero_copy_only=False
    )
    del table, coded, names, by_name, rank_of
    eligible = is_profile & is_qualified
    counts = np.bincount(code[eligible], minlength=len(user_names))
    chosen = encoder_training_users(
        {user_names[r]: int(c) for r, c in enumerate(counts) if c}, cfg.encoder_max_sentences, seed
    )
    train = np.flatnonzero(eligible & np.array([u in chosen for u in user_names], bool)[code])
    rows = next(iter_rows(sentences, ["user_id", "parent_asin", "text"], train, max(1, len(train))), None)
    rows = rows.to_pydict() if rows is not None else {"user_id": [], "parent_asin": [], "text": []}
    t_parse = time.perf_counter()
    train_rules = _rule_sets(rows["text"], ex)
    t_parse = time.perf_counter() - t_parse
    try:
        enc = SyntaxEncoder.fit(train_rules, rows["user_id"], rows["parent_asin"], ecfg)
    except ValueError as exc:
        raise InsufficientDataError(f"{domain}: {exc}") from exc
    del train_rules, rows
    t_enc = time.perf_counter() - t0 - t_parse
    enc.save(wd.path / SYNTAX_DIR)

    use = np.flatnonzero(is_qualified)
    # rows regrouped per user (sorted ids): its profile, then its held-out sentences, each in file order,
    # so every user's rows are a slice (a view), not a copy; each embedding is written straight to its
    # regrouped row (``position``), so no second (rows x dim) array is ever made
    ucode, held = code[use], ~is_profile[use]
    order = np.lexsort((np.arange(len(use)), held, ucode))
    position = np.empty(len(use), np.int64)
    position[order] = np.arange(len(use))
    parse_times: list[float] = []
    written: deque[pa.Table] = deque()  # the ids of each chunk handed out, until its embeddings return
    sids: list[pa.ChunkedArray] = []  # the sentence ids in ``use`` order, kept as Arrow (a few bytes a row)

    def jobs() -> Iterator[tuple[Any, list[frozenset[str]]]]:
        for part in iter_rows(sentences, ["sentence_id", "user_id", "split", "text"], use, ENCODE_CHUNK):
            t = time.perf_counter()
            rules = _rule_sets(part.column("text").to_pylist(), ex)
            parse_times.append(time.perf_counter() - t)
            written.append(part.select(["sentence_id", "user_id", "split"]))
            yield enc, rules

    n_chunks = -(-len(use) // ENCODE_CHUNK)
    Z = np.empty((len(use), ecfg.dim))
    with ParquetStreamWriter(wd.file(EMBEDDINGS), EMBEDDINGS_SCHEMA) as out:
        mapped = map(_encode_chunk, jobs()) if ex is None else ex.map(_encode_chunk, jobs())
        for a, Zc in zip(range(0, len(use), ENCODE_CHUNK), bar(mapped, total=n_chunks, desc="encode",
                                                                   unit="chunk", leave=False), strict=True):  # fmt: skip
            ids = written.popleft()
            sids.append(ids.column("sentence_id"))
            part = ids.to_pydict()
            out.write_rows([{"sentence_id": s, "user_id": u, "split": sp, "z": z}
                            for s, u, sp, z in zip(part["sentence_id"], part["user_id"], part["split"],
                                                   Zc.tolist(), strict=True)])  # fmt: skip
            Z[position[a : a + len(Zc)]] = Zc
    t_parse += sum(parse_times)
    del position
    key = ucode[order] * 2 + held[order]
    ranks = np.unique(ucode)
    p0, p1, h1 = (np.searchsorted(key, ranks * 2 + i) for i in range(3))
    sid = pa.chunked_array([c for ids in sids for c in ids.chunks], pa.string()).take(order).combine_chunks()
    del sids
    users = [user_names[r] for r in ranks]
    by_user = {u: {"profile": slice(int(p0[i]), int(p1[i])), "heldout": slice(int(p1[i]), int(h1[i]))}
               for i, u in enumerate(users)}  # fmt: skip
    chi2 = chi2_threshold(threshold_q, ecfg.dim)
    fits = RankOneDiagGaussian.fit_many([Z[by_user[u]["profile"]] for u in users])
    splits = {u: calibration_split(sid[by_user[u]["heldout"]].to_pylist()) for u in users}
    del sid
    d2_cal = {
        u: g.mahalanobis2(Z[by_user[u]["heldout"]][splits[u][0]]) for u, g in zip(users, fits, strict=True)
    }
    prior, prior_kind = pooled_prior(list(d2_cal.values()), threshold_q, ecfg.dim)
    rule_counts: Counter[str] = Counter()
    for uid, g in zip(users, fits, strict=True):
        if threshold_kind == "heldout":
            g.threshold, rule = calibrated_threshold(d2_cal[uid], threshold_q, ecfg.dim, prior=prior)
            g.threshold_kind = f"heldout_q{threshold_q:g}_{rule}"
        else:
            g.threshold, rule = chi2, "chi2"
            g.threshold_kind = f"chi2_{ecfg.dim}_q{threshold_q:g}"
        rule_counts[rule] += 1

    def audit_jobs() -> Iterator[tuple[list[tuple[Any, np.ndarray, np.ndarray, np.ndarray, int]], int]]:
        for a in range(0, len(users), AUDIT_CHUNK):
            part = []
            for k in range(a, min(a + AUDIT_CHUNK, len(users))):
                P, H = Z[by_user[users[k]]["profile"]], Z[by_user[users[k]]["heldout"]]
                part.append((fits[k], P, H[splits[users[k]][1]], H, seed + k))
            yield part, n_subsamples

    audits = map(_audit_chunk, audit_jobs()) if ex is None else ex.map(_audit_chunk, audit_jobs())
    gaussians: dict[str, RankOneDiagGaussian] = {}
    k = 0
    for chunk in bar(audits, total=-(-len(users) // AUDIT_CHUNK), desc="audit", unit="chunk", leave=False):
        for result in chunk:
            uid, g = users[k], fits[k]
            cal, aud = splits[uid]
            P, H = by_user[uid]["profile"], by_user[uid]["heldout"]
            g.audit = {**result, "n_profile": P.stop - P.start, "n_heldout": H.stop - H.start,
                       "n_calibration": len(cal), "n_audit": len(aud)}  # fmt: skip
            gaussians[uid] = g
            k += 1
    save_gaussians(wd.file(GAUSSIANS), gaussians)
    d2_all = np.concatenate([g.mahalanobis2(Z[by_user[u]["heldout"]]) for u, g in gaussians.items()])
    stats = {
        "parsed_sentences": len(np.union1d(train, use)),
        "encoder_eligible_sentences": int(eligible.sum()),
        "encoder_max_sentences": cfg.encoder_max_sentences,
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
