"""The syntax wing's stage, ``profiles``: rules → encoder → per-user Gaussians, thresholds and audit.

It has the signature every stage has, ``run_profiles(wd, cfg, *, force=False) -> StageStats``; the
artifacts and their columns are declared in :mod:`pqb.builders.workdir`.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict

import numpy as np
import pyarrow as pa

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
    WorkDir,
    read_parquet,
    write_parquet,
)

STAGE_VERSION = 1

THRESHOLD_RULES = {
    "chi2": "chi2_{d}({q:g}) for every user",
    "heldout": "each user's held-out sentences are split by a salted hash into calibration and audit halves; "
    "threshold = interpolated {q:g} quantile of the calibration D² (n >= {n}), shrunk with weight n/{n} "
    "toward a prior (2 <= n < {n}), the prior alone (n < 2); the prior is the pooled {q:g} quantile of all "
    "users' calibration D² under their own Gaussians (chi2_{d}({q:g}) if fewer than {n} are pooled); "
    "the audit uses only the audit half",
}
"""How a threshold is computed, in words, for the stage stats and the card."""


# --------------------------------------------------------------------------------------------------
# profiles
# --------------------------------------------------------------------------------------------------


def run_profiles(wd: WorkDir, cfg: BuildConfig, *, force: bool = False) -> StageStats:
    """Rules → vocabulary/SVD/encoder on PROFILE sentences → per-user rank-one + diagonal Gaussians.

    ``cfg.encoder_users="all"`` trains the encoder on the profile sentences of every user (held-out text of
    any user is never used); ``"qualified"`` restricts it to qualified users. ``threshold_kind`` is
    ``chi2`` (χ²_d quantile ``threshold_q``) or ``heldout`` (:data:`THRESHOLD_RULES`: the user's
    calibration-split D² quantile with the small-sample rule of
    :func:`pqb.builders.syntax.gaussian.calibrated_threshold`; the audit runs on the disjoint audit split).
    """
    seed, domain = cfg.seed, wd.domain
    threshold_kind, threshold_q = cfg.threshold_kind, cfg.threshold_q
    encoder_users, n_subsamples = cfg.encoder_users, cfg.n_subsamples
    if threshold_kind not in {"chi2", "heldout"}:
        raise UsageError(f"threshold_kind must be 'chi2' or 'heldout', got {threshold_kind!r}")
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
            "encoder_users": encoder_users,
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
    sents = read_parquet(wd.path / SENTENCES).to_pylist()
    qualified = {u["user_id"] for u in read_parquet(wd.path / USERS).to_pylist() if u["qualified"]}
    parsed = parse_texts([s["text"] for s in sents], executor=cfg.executor)
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
    write_parquet(pa.Table.from_pylist(emb_rows, schema=EMBEDDINGS_SCHEMA), wd.file(EMBEDDINGS))
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
    save_gaussians(wd.file(GAUSSIANS), gaussians)
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
