"""Error-sampling validation: can a user be recognised from the typos sampled for them?

The paper's validation table (docs/design.md §14; the definitions are the paper's proposed ones, documented here):

* **Texts**: each profiled user's HELD-OUT sentences (never used to build profiles), 4-40 words,
  at most ``max_texts`` per user (seeded choice). They play the role of clean queries.
* **Conditions** — how the typos are sampled for user ``u``:
  ``personalized`` (u's context rates, mechanism and position-in-the-word distributions), ``global``
  (the pooled model), ``uniform`` (the global slip rate for every token, uniform over mechanisms and
  over positions in the word),
  ``character-random`` (global slip rate, a random letter inserted / deleted / replaced), and
  ``wrong-user`` (the profile of another user, drawn per ``u``). The injector is the production one
  (same eligibility, at least one edit, at most 3), without the semantic gate (this study is about the
  edit distribution; the gate only filters).
* **Attribution**: every candidate user ``w`` scores a typo query by the log-likelihood of its edits
  under w's profile and the injector's process (issue 12): ``log P_w(dose) + Σ_k [log r_w(i_k) -
  log(Σ_eligible r_w - Σ_{j<k} r_w(i_j)) + log P_w(mechanism_k) + log P_w(place_k)]``, the probability of
  drawing the edited positions in chain order without replacement in proportion to w's rates, then each
  edit's mechanism and where in the word it falls (first / interior / last letter); mechanisms outside
  the injectable set get a shared floor probability. (The place term ignores the injector's restriction
  to the buckets a mechanism can reach in a word: an approximation shared by every candidate.) (Positions skipped because no readable edit
  existed are ignored: an approximation shared by every candidate.)
* **Metrics** (ties broken uniformly at random, in expectation): *Top-1* and *MRR* rank the true user
  by the summed score of all of their typo queries; *single-query Top-1* ranks by one query.
  95% percentile-bootstrap CIs resample users (Top-1, MRR) or queries (single-query Top-1).
  Candidates are all profiled users with held-out texts, and also pools of ``pool_size`` (the true
  user plus seeded distractors), closer to the paper's MRR scale.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from pqb.builders.errors import MissingInputError
from pqb.builders.seeds import derive_seed
from pqb.builders.workdir import EDITS, SENTENCES, WorkDir, read_parquet
from pqb.builders.writing_errors.channel import SlipChannel, detected_slips, population_channel
from pqb.builders.writing_errors.context import RATE_CHAIN, doc_signatures
from pqb.builders.writing_errors.injection import ErrorInjector
from pqb.builders.writing_errors.profiles import ErrorProfiles
from pqb.dataset.io import atomic_write_json, atomic_write_text
from pqb.dataset.progress import bar
from pqb.dataset.schema import CHAR_MECHANISMS, POSITIONS

log = logging.getLogger(__name__)

CONDITIONS: tuple[str, ...] = ("personalized", "global", "uniform", "character-random", "wrong-user")
PAPER = {  # the paper's Table (error-sampling attribution): top1 %, MRR, single-query top1 %
    "global": (5.76, 0.1948, 6.53),
    "uniform": (4.68, 0.1874, 4.52),
    "character-random": (4.32, 0.1781, 4.52),
    "wrong-user": (6.47, 0.2003, 4.02),
    "personalized": (9.35, 0.2428, 7.29),
}
FLOOR = 1e-4  # probability of a mechanism no profile can produce (shared by every user: cancels)


def expected_rank_metrics(scores: np.ndarray, true_col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: expected Top-1 and reciprocal rank of ``true_col`` under uniform tie-breaking."""
    own = scores[np.arange(len(scores)), true_col][:, None]
    higher = (scores > own).sum(1)
    ties = (scores == own).sum(1)  # includes the true user
    top1 = np.where(higher == 0, 1.0 / ties, 0.0)
    rr = np.array([np.mean(1.0 / np.arange(h + 1, h + t + 1)) for h, t in zip(higher, ties, strict=True)])
    return top1, rr


def bootstrap_ci(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> tuple[float, float]:
    """95% percentile interval of the mean."""
    if len(values) == 0:
        return (float("nan"), float("nan"))
    idx = rng.integers(0, len(values), size=(n_boot, len(values)))
    means = values[idx].mean(1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def _select_texts(
    rows: list[dict[str, Any]], users: set[str], max_texts: int, seed: int
) -> dict[str, list[str]]:
    by: dict[str, list[str]] = {}
    for r in rows:
        t = r.get("text")
        if (
            r.get("split") == "heldout"
            and r["user_id"] in users
            and isinstance(t, str)
            and 4 <= len(t.split()) <= 40
        ):
            by.setdefault(r["user_id"], []).append(t)
    out = {}
    for u in sorted(by):
        texts = sorted(set(by[u]))
        if len(texts) > max_texts:
            rng = np.random.default_rng(derive_seed(seed, "texts", u))
            texts = [texts[i] for i in sorted(rng.choice(len(texts), max_texts, replace=False))]
        out[u] = texts
    return out


def _rate_matrix(
    profiles: ErrorProfiles, sig_list: Sequence[dict[str, str]], users: Sequence[str]
) -> np.ndarray:
    """``R[i, w]``: slip rate of token ``i`` under user ``w`` (deduplicated over signature chains)."""
    keys = [tuple(s[k] for k in RATE_CHAIN) for s in sig_list]
    uniq = {k: j for j, k in enumerate(dict.fromkeys(keys))}
    first = {k: s for k, s in zip(keys, sig_list, strict=True)}
    U = np.empty((len(uniq), len(users)))
    for k, j in bar(uniq.items(), desc="rates", leave=False):
        U[j] = [profiles.rate(w, first[k]) for w in users]
    return U[[uniq[k] for k in keys]]


def run_error_study(
    workdir: WorkDir,
    *,
    seed: int = 0,
    n_boot: int = 1000,
    max_texts: int = 10,
    pool_size: int = 20,
    nlp: Any = None,
    channel: SlipChannel | None = None,
) -> dict[str, Any]:
    """Run the study on a built work dir; write ``validation/error_sampling.{json,md}``; return the JSON.
    ``channel``: the slip channel (``None``: the domain's population channel, as the pair stage uses)."""
    from pqb.builders.nlp import load_spacy

    sp = workdir.path / SENTENCES
    if not sp.is_file():
        raise MissingInputError(
            f"{sp} does not exist; run `pqb-build users --domain {workdir.domain}` first."
        )
    # the error profiles must be those of the current users and sentences, not of an earlier build
    workdir.require_consistent("validating errors", stages=("ingest", "users", "errors"))
    channel = channel or population_channel(detected_slips(workdir.path / EDITS), domain=workdir.domain)
    profiles = ErrorProfiles.load(workdir).with_population(channel.population)  # as the pair stage does
    nlp = nlp or load_spacy()
    texts = _select_texts(read_parquet(sp).to_pylist(), set(profiles.users), max_texts, seed)
    users = sorted(texts)
    if len(users) < 2:
        raise ValueError(f"error study needs >= 2 users with held-out sentences, found {len(users)}")
    col = {u: j for j, u in enumerate(users)}
    flat = [(u, t) for u in users for t in texts[u]]
    docs = list(nlp.pipe([t for _, t in flat], batch_size=128))
    sigs = [doc_signatures(d) for d in docs]
    offsets = np.cumsum([0] + [len(d) for d in docs])
    all_sigs = [s for ss in sigs for s in ss]
    R = np.clip(_rate_matrix(profiles, all_sigs, users), 1e-9, 1 - 1e-9)
    R_glob = np.array([profiles.rate(None, s) for s in all_sigs])
    p0 = profiles.global_rate
    M = np.array([[profiles.mechanism_probs(w)[m] for m in CHAR_MECHANISMS] for w in users])
    logM = np.log(np.concatenate([M, np.full((len(users), 1), FLOOR)], axis=1))
    mech_col = {m: i for i, m in enumerate(CHAR_MECHANISMS)}
    gprobs = profiles.global_mechanism_probs()
    uniform = dict.fromkeys(CHAR_MECHANISMS, 1 / len(CHAR_MECHANISMS))
    inj = ErrorInjector(profiles, nlp, similarity=None, channel=channel)
    gdose = profiles.global_dose_probs()
    dose_col = {d: i for i, d in enumerate(gdose)}
    logD = np.log(np.array([[profiles.dose_probs(w)[d] for d in gdose] for w in users]))
    pos_col = {k: i for i, k in enumerate(POSITIONS)}
    logP = np.log(np.array([[profiles.position_probs(w)[k] for k in POSITIONS] for w in users]))
    gpos = profiles.global_position_probs()
    upos = dict.fromkeys(POSITIONS, 1 / len(POSITIONS))
    rng_wrong = np.random.default_rng(derive_seed(seed, "wrong-user"))
    wrong = {u: users[(col[u] + 1 + int(rng_wrong.integers(len(users) - 1))) % len(users)] for u in users}

    results: dict[str, Any] = {}
    for cond in CONDITIONS:
        scores, truth, failed = [], [], 0
        for q, ((u, _), doc) in enumerate(bar(list(zip(flat, docs, strict=True)), desc=cond, leave=False)):
            a, b = offsets[q], offsets[q + 1]
            src = wrong[u] if cond == "wrong-user" else u
            if cond in ("personalized", "wrong-user"):
                rates, probs = R[a:b, col[src]], profiles.mechanism_probs(src)
            elif cond == "global":
                rates, probs = R_glob[a:b], gprobs
            else:
                rates = np.full(b - a, p0)
                probs = uniform if cond == "uniform" else None
            personal = cond in ("personalized", "wrong-user")
            dprobs = profiles.dose_probs(src) if personal else gdose
            pprobs = profiles.position_probs(src) if personal else upos if cond == "uniform" else gpos
            res = inj.inject_with(
                doc, rates, probs, [], derive_seed(seed, cond, u, q), dose_probs=dprobs, pos_probs=pprobs
            )
            if res.error_query is None:
                failed += 1
                continue
            elig = inj.eligible(doc, [])
            Rq = np.where(elig[:, None], R[a:b], 0.0)
            tok_at = {t.idx: t.i for t in doc}
            # P(ordered positions | w): successive draws without replacement in proportion to w's rates
            left = Rq.sum(0)
            s = logD[:, dose_col[str(len(res.edits))]].copy()
            for e in res.edits:
                i = tok_at[e["start"]]
                s = s + np.log(np.maximum(Rq[i], 1e-12)) - np.log(np.maximum(left, 1e-12))
                left = left - Rq[i]
                s = s + logM[:, mech_col.get(e["mechanism"], len(CHAR_MECHANISMS))]
                s = s + logP[:, pos_col[e["position"]]]
            scores.append(s)
            truth.append(col[u])
        results[cond] = _metrics(
            np.array(scores), np.array(truth), len(users), failed, n_boot, pool_size, seed
        )
    report = {
        "domain": workdir.domain,
        "seed": seed,
        "n_boot": n_boot,
        "users": len(users),
        "queries": len(flat),
        "max_texts": max_texts,
        "pool_size": pool_size,
        "chance_top1_all": 1 / len(users),
        "chance_top1_pool": 1 / min(pool_size, len(users)),
        "profiles_backend": profiles.meta.get("backend"),
        "conditions": results,
        "paper": {
            k: {"top1_pct": v[0], "mrr": v[1], "single_query_top1_pct": v[2]} for k, v in PAPER.items()
        },
    }
    out = workdir.file("validation/error_sampling.json")
    atomic_write_json(out, report)
    atomic_write_text(workdir.file("validation/error_sampling.md"), render_markdown(report))
    return report


def _metrics(
    scores: np.ndarray, truth: np.ndarray, n_users: int, failed: int, n_boot: int, pool_size: int, seed: int
) -> dict[str, Any]:
    rng = np.random.default_rng(derive_seed(seed, "boot"))
    out: dict[str, Any] = {"queries": len(truth), "failed_injections": failed}
    if len(truth) == 0:
        return out
    pools = {"all": None}
    if pool_size < n_users:
        prng = np.random.default_rng(derive_seed(seed, "pool"))
        pools["pool"] = {
            u: np.sort(
                np.concatenate(
                    [[u], prng.choice(np.delete(np.arange(n_users), u), pool_size - 1, replace=False)]
                )
            )
            for u in range(n_users)
        }
    for name, pool in pools.items():
        # user level: summed scores of each user's queries
        present = np.unique(truth)
        summed = np.stack([scores[truth == u].sum(0) for u in present])

        def restrict(mat: np.ndarray, t: np.ndarray, pool: Any = pool) -> tuple[np.ndarray, np.ndarray]:
            if pool is None:
                return mat, t
            cols = np.stack([pool[int(u)] for u in t])
            return np.take_along_axis(mat, cols, 1), np.array(
                [int(np.searchsorted(pool[int(u)], u)) for u in t]
            )

        m_u, t_u = restrict(summed, present)
        top1_u, rr_u = expected_rank_metrics(m_u, t_u)
        m_q, t_q = restrict(scores, truth)
        top1_q, _ = expected_rank_metrics(m_q, t_q)
        out[name] = {
            "top1": float(top1_u.mean()),
            "top1_ci": bootstrap_ci(top1_u, n_boot, rng),
            "mrr": float(rr_u.mean()),
            "mrr_ci": bootstrap_ci(rr_u, n_boot, rng),
            "single_query_top1": float(top1_q.mean()),
            "single_query_top1_ci": bootstrap_ci(top1_q, n_boot, rng),
            "users": len(present),
        }
    return out


def render_markdown(report: dict[str, Any]) -> str:
    """The study as a markdown table per candidate set, with the paper's numbers beside ours."""
    lines = [
        f"# Error-sampling attribution — {report['domain']}",
        "",
        f"{report['users']} users with held-out sentences, {report['queries']} clean texts "
        f"(≤ {report['max_texts']} per user); profiles from `{report['profiles_backend']}`; seed "
        f"{report['seed']}; {report['n_boot']} bootstrap resamples (95% CI). Definitions: "
        "`builders/reports/error_study.py` docstring.",
        "",
    ]
    for name, title, chance in (
        ("all", "all users as candidates", report["chance_top1_all"]),
        ("pool", f"pools of {report['pool_size']} candidates", report["chance_top1_pool"]),
    ):
        if not any(name in c for c in report["conditions"].values()):
            continue
        lines += [
            f"## {title} (chance Top-1 {100 * chance:.2f}%)",
            "",
            "| condition | Top-1 % [CI] | MRR [CI] | single-query Top-1 % [CI] | queries | paper Top-1 % | paper MRR | paper SQ Top-1 % |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for cond, c in report["conditions"].items():
            if name not in c:
                continue
            m, p = c[name], report["paper"][cond]
            lines.append(
                f"| {cond} | {100 * m['top1']:.2f} [{100 * m['top1_ci'][0]:.1f}, {100 * m['top1_ci'][1]:.1f}] "
                f"| {m['mrr']:.4f} [{m['mrr_ci'][0]:.3f}, {m['mrr_ci'][1]:.3f}] "
                f"| {100 * m['single_query_top1']:.2f} [{100 * m['single_query_top1_ci'][0]:.1f}, "
                f"{100 * m['single_query_top1_ci'][1]:.1f}] | {c['queries']} "
                f"| {p['top1_pct']} | {p['mrr']} | {p['single_query_top1_pct']} |"
            )
        lines.append("")
    return "\n".join(lines)
