"""Selection and pairing: from candidate pools and user Gaussians to benchmark rows (docs/design.md §8).

For each target product with at least two linked users that have a syntactic Gaussian:

1. **Pair**: the two users whose Gaussians are farthest apart (symmetric KL by default, Bhattacharyya as
   an option). The authors' code never maximised any distance (docs/design.md §11); the paper
   says pairs are "at maximum distributional distance", so we do, and say which distance in the card.
2. **Select**: for each user of the pair, the candidate with the highest own log-density among those
   *inside* the user's acceptance region (D² ≤ own threshold) *and outside* the partner's
   (D² > partner threshold). The two sets are disjoint, so the two queries always differ.
3. **Inject**: each user's own writing errors (``ErrorInjector``): an ordered chain of up to 3
   readable edits on any word (core terms, brand and title words included), the personal dose as its
   prefix, seeded from ``(seed, asin, user)``.

Every product that yields no pair is counted under the first gate it fails (:data:`GATES`), so the
final summary says exactly where the benchmark loses products.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from pqb.builders.config import BuildConfig, PairConfig, StageStats
from pqb.builders.parses import parse_texts
from pqb.builders.queries.generate import load_candidates
from pqb.builders.seeds import derive_seed
from pqb.builders.workdir import (
    CANDIDATES,
    CORPUS,
    GAUSSIANS,
    LINKS,
    PAIRS,
    PRODUCTS,
    SYNTAX_DIR,
    WorkDir,
    hash_inputs,
    read_parquet,
    write_parquet,
)
from pqb.dataset.progress import bar
from pqb.dataset.schema import ROWS_SCHEMA, count_term, document_string

GATES: tuple[str, ...] = (
    "core_term_not_in_document",  # a core term the target's document does not contain
    "no_candidates",  # no candidate survived generation + filters
    "no_users",  # no linked user has a Gaussian
    "one_user",  # exactly one linked user has a Gaussian
    "no_candidate_inside_own",  # a user of the pair has no candidate with D² <= own threshold
    "no_candidate_outside_partner",  # ... but every such candidate is also inside the partner's region
)


class Gaussian(Protocol):
    """What pairing needs of ``pqb.builders.syntax.gaussian.RankOneDiagGaussian``."""

    threshold: float

    def mahalanobis2(self, Z: np.ndarray) -> np.ndarray: ...

    def logpdf(self, Z: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class Selection:
    """The chosen candidate of one user and the numbers recorded in the row's ``syntax`` column."""

    user: str
    index: int
    own_loglik: float
    own_d2: float
    partner_d2: float
    threshold: float
    partner_threshold: float


def distance_fn(name: str) -> Callable[[Any, Any], float]:
    """The Gaussian distance by name (imported lazily from Builders I's ``pqb.builders.syntax.gaussian``)."""
    from pqb.builders.syntax import gaussian

    fns = {"sym_kl": gaussian.sym_kl, "bhattacharyya": gaussian.bhattacharyya}
    if name not in fns:
        raise ValueError(f"Unknown pair distance {name!r}. Available: {', '.join(fns)}.")
    return fns[name]


def _exact_distances(
    gs: Sequence[Any], ii: np.ndarray, jj: np.ndarray, distance: Callable[[Any, Any], float]
) -> np.ndarray:
    """``distance(gs[i], gs[j])`` for each pair, computed once per pair of distinct parameter sets.

    A distance between Gaussians is a function of their parameters (μ, V, λ, σ²), so users whose
    Gaussians hold the same bytes (the same profile sentences, as every copy of a user in a LOAD TEST
    has) share every distance; each pair of distinct byte strings is evaluated once, in the pair's own
    (i, j) orientation, so the values are those of the per-pair call.
    """
    params = np.stack([np.concatenate([g.mu, g.V.ravel(), g.lams, g.sigma2]) for g in gs])
    raw = np.ascontiguousarray(params, dtype=np.float64)
    _, first, group = np.unique(
        raw.view(np.dtype((np.void, raw.shape[1] * 8))).ravel(), return_inverse=True, return_index=True
    )
    group = group.ravel()
    keys = group[ii].astype(np.int64) * len(first) + group[jj]
    distinct, back = np.unique(keys, return_inverse=True)
    reps = [(first[k // len(first)], first[k % len(first)]) for k in distinct.tolist()]
    values = np.array([float(distance(gs[a], gs[b])) for a, b in reps], dtype=np.float64)
    return values[back.ravel()]


def ranked_pairs(
    users: Sequence[str],
    gaussians: Mapping[str, Any],
    distance: Callable[[Any, Any], float],
    limit: int | None = None,
) -> list[tuple[float, str, str]]:
    """User pairs farthest first, ties broken by the user ids (so the order is deterministic); the
    first ``limit`` of them (all when ``None``).

    With the default distance on rank-one Gaussians, :func:`~pqb.builders.syntax.gaussian.sym_kl_matrix`
    screens all pairs at once, and only the pairs whose bounds reach the ``limit``-th largest lower
    bound are computed exactly: the same pairs, order and distances as computing every pair, without
    a Python loop or sort over the n²/2 pairs.
    """
    from pqb.builders.syntax import gaussian

    fitted = sorted({u for u in users if u in gaussians})
    n = len(fitted)
    ii, jj = np.triu_indices(n, k=1)
    k = len(ii) if limit is None else min(limit, len(ii))
    if k == 0:
        return []
    gs = [gaussians[u] for u in fitted]
    candidates = np.arange(len(ii))
    if distance is gaussian.sym_kl and all(getattr(g, "V", np.empty((0, 2))).shape[1] == 1 for g in gs):
        D, E = gaussian.sym_kl_matrix(gs)
        lo, hi = (D - E)[ii, jj], (D + E)[ii, jj]
        if np.isfinite(lo).all() and np.isfinite(hi).all():
            kth = np.partition(lo, len(lo) - k)[len(lo) - k]  # the k-th largest lower bound
            candidates = np.flatnonzero(hi >= kth)  # every pair of the exact top k is among these
    exact = _exact_distances(gs, ii[candidates], jj[candidates], distance)
    order = np.lexsort((jj[candidates], ii[candidates], -exact))[
        :k
    ]  # fitted is sorted: index order = id order
    return [(float(exact[o]), fitted[ii[candidates[o]]], fitted[jj[candidates[o]]]) for o in order]


def select_for_user(Z: np.ndarray, own: Gaussian, partner: Gaussian, user: str) -> Selection | str:
    """Highest own log-density inside own region and outside the partner's; else the failed gate name.

    Ties in log-density go to the earlier candidate (pool order is seeded), so selection is stable.
    """
    d2_own = np.asarray(own.mahalanobis2(Z), dtype=np.float64)
    d2_partner = np.asarray(partner.mahalanobis2(Z), dtype=np.float64)
    inside = d2_own <= own.threshold
    if not inside.any():
        return "no_candidate_inside_own"
    ok = inside & (d2_partner > partner.threshold)
    if not ok.any():
        return "no_candidate_outside_partner"
    loglik = np.asarray(own.logpdf(Z), dtype=np.float64)
    masked = np.where(ok, loglik, -np.inf)
    i = int(np.argmax(masked))
    return Selection(
        user=user,
        index=i,
        own_loglik=float(loglik[i]),
        own_d2=float(d2_own[i]),
        partner_d2=float(d2_partner[i]),
        threshold=float(own.threshold),
        partner_threshold=float(partner.threshold),
    )


def user_gate(users: Sequence[str], gaussians: Mapping[str, Any]) -> str | None:
    """Why a target's linked ``users`` cannot give a pair (``no_users``, ``one_user``), else ``None``:
    decided before its candidates are parsed and encoded, which a target that cannot pair never needs."""
    fitted = {u for u in users if u in gaussians}
    return "no_users" if not fitted else "one_user" if len(fitted) == 1 else None


def select_pair(
    Z: np.ndarray,
    users: Sequence[str],
    gaussians: Mapping[str, Any],
    distance: Callable[[Any, Any], float],
    max_pairs_tried: int = 1,
) -> tuple[tuple[Selection, Selection, float, int] | None, str | None]:
    """Pick the farthest user pair and both selections. Returns ``((sel_a, sel_b, dist, rank), None)`` on
    success (``rank`` = 0 for the farthest pair) or ``(None, gate)`` with the farthest pair's failure."""
    if (gate := user_gate(users, gaussians)) is not None:
        return None, gate
    first_failure: str | None = None
    for rank, (dist, a, b) in enumerate(ranked_pairs(users, gaussians, distance, max_pairs_tried)):
        sa = select_for_user(Z, gaussians[a], gaussians[b], a)
        sb = select_for_user(Z, gaussians[b], gaussians[a], b)
        failure = sa if isinstance(sa, str) else sb if isinstance(sb, str) else None
        if failure is None:
            assert isinstance(sa, Selection) and isinstance(sb, Selection)
            return (sa, sb, dist, rank), None
        first_failure = first_failure or failure
    return None, first_failure


# --------------------------------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------------------------------


def make_row(
    domain: str,
    product: Mapping[str, Any],
    query: str,
    sel: Selection,
    pair_distance: float,
    injection: Any | None,
) -> dict[str, Any]:
    """One benchmark row in the ROWS schema, with the *raw* user id (publishing pseudonymises it)."""
    asin = str(product["parent_asin"])
    error_query = getattr(injection, "error_query", None) if injection is not None else None
    edits = list(getattr(injection, "edits", []) or []) if error_query is not None else []
    chain = list(getattr(injection, "chain", []) or []) if error_query is not None else []
    keys = ("start", "end", "original", "edited", "mechanism", "location", "position")
    return {
        "id": f"{domain}:{asin}:{sel.user}",
        "domain": domain,
        "asin": asin,
        "user_id": sel.user,
        "pair_id": f"{domain}:{asin}",
        "query": query,
        "error_query": error_query,
        "error_edits": [{k: e.get(k) for k in keys} for e in edits],
        "error_chain": [{k: e.get(k) for k in keys} for e in chain],
        "profile_evidence": getattr(injection, "profile_evidence", None) if error_query is not None else None,
        "backoff": getattr(injection, "backoff", None) if error_query is not None else None,
        "core_terms": list(product["core_terms"]),
        "protected_terms": list(product.get("protected_terms") or []),
        "attributes": [{"name": a["name"], "value": a["value"]} for a in product.get("attributes") or []],
        "syntax": {
            "own_loglik": sel.own_loglik,
            "own_d2": sel.own_d2,
            "partner_d2": sel.partner_d2,
            "threshold": sel.threshold,
            "partner_threshold": sel.partner_threshold,
            "pair_distance": float(pair_distance),
        },
    }


def pair_products(
    domain: str,
    products: Sequence[Mapping[str, Any]],
    candidates: Mapping[str, Sequence[Any]],
    links: Mapping[str, Sequence[str]],
    gaussians: Mapping[str, Any],
    encode: Callable[[list[str]], np.ndarray],
    *,
    config: PairConfig,
    seed: int,
    injector: Any | None = None,
    progress: bool = True,
) -> tuple[list[dict[str, Any]], Counter[str]]:
    """Select, pair and inject for every target product; returns rows and gate/injection counts."""
    distance = distance_fn(config.distance) if isinstance(config.distance, str) else config.distance
    rows: list[dict[str, Any]] = []
    counts: Counter[str] = Counter()
    for product in bar(products, desc="pair", unit="product", disable=not progress):
        asin = str(product["parent_asin"])
        counts["targets"] += 1
        doc = document_string(product.get("title"), product["text"]) if "text" in product else None
        if doc is not None and not all(count_term(doc, t) for t in product["core_terms"]):
            counts["fail_core_term_not_in_document"] += 1
            continue
        pool = list(candidates.get(asin) or [])
        if not pool:
            counts["fail_no_candidates"] += 1
            continue
        users = list(links.get(asin) or [])
        if (gate := user_gate(users, gaussians)) is not None:
            counts[f"fail_{gate}"] += 1
            continue
        texts = [c.text for c in pool]
        result, gate = select_pair(
            np.asarray(encode(texts)),
            users,
            gaussians,
            distance,
            config.max_pairs_tried,
        )
        if result is None:
            counts[f"fail_{gate}"] += 1
            continue
        sa, sb, dist, rank = result
        counts["paired"] += 1
        counts["paired_with_fallback_pair"] += int(rank > 0)
        for sel in (sa, sb):
            query = texts[sel.index]
            injection = None
            if injector is not None and config.inject_errors:
                injection = injector.inject(
                    query,
                    sel.user,
                    (),
                    derive_seed(seed, asin, sel.user),
                    core_terms=list(product["core_terms"]),
                    brand=str(product.get("brand") or ""),
                    title=str(product.get("title") or ""),
                )
                reason = getattr(injection, "reason", "") or ("ok" if injection.error_query else "none")
                counts[f"inject_{reason}"] += 1
            row = make_row(domain, product, query, sel, dist, injection)
            counts["error_pairs"] += int(row["error_query"] is not None)
            rows.append(row)
    counts["rows"] = len(rows)
    return rows, counts


def links_by_asin(links: pa.Table) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for rec in links.to_pylist():
        out.setdefault(str(rec["asin"]), []).append(str(rec["user_id"]))
    return {k: sorted(set(v)) for k, v in out.items()}


def run_pair(workdir: WorkDir, cfg: BuildConfig, *, force: bool = False) -> StageStats:
    """The ``pair`` stage: candidates + Gaussians + links (+ error profiles) -> ``pairs.parquet``.

    With ``cfg.executor`` the candidates of every target are parsed there first, in chunks, into the
    parse cache; the per-product encoding then reads the cache (same parses, same bits).
    """
    from pqb.builders.syntax.gaussian import load_gaussians

    seed, config = cfg.seed, cfg.pair
    inputs = [workdir.file(n) for n in (PRODUCTS, CANDIDATES, LINKS, GAUSSIANS)]
    inputs += (
        [
            *sorted(p for p in (workdir.path / "errors").glob("*") if p.is_file()),
            workdir.file(CORPUS),
        ]
        if config.inject_errors
        else []
    )
    inputs += sorted(p for p in (workdir.path / SYNTAX_DIR).glob("*") if p.is_file())
    digests = hash_inputs(inputs)  # before the injector reads the profiles and links (WorkDir.stage)
    injector = None
    if config.inject_errors:
        from pqb.builders.writing_errors.injection import ErrorInjector

        injector = ErrorInjector.load(
            workdir.path,
            similarity="auto" if config.cosine_gate else None,
            evidence_floor=config.evidence_floor,
            users=read_parquet(workdir.file(LINKS), columns=["user_id"]).column("user_id").to_pylist(),
        )
    params = {"seed": seed, **config.as_dict(), "injector": injector.settings() if injector else None}
    stage = workdir.stage("pair", inputs, params, [PAIRS], digests=digests)
    if (done := stage.cached(force)) is not None:
        return done
    from pqb.builders.syntax.encoder import SyntaxEncoder

    products = [
        r for r in read_parquet(workdir.file(PRODUCTS)).to_pylist()
        if r.get("is_target") and len(r.get("core_terms") or []) == 5
    ]  # fmt: skip
    products.sort(key=lambda r: r["parent_asin"])
    encoder = SyntaxEncoder.load(workdir.path)
    gaussians = load_gaussians(workdir.file(GAUSSIANS))
    failed = sorted(u for u, g in gaussians.items() if not g.audit.get("valid"))
    if config.audited_only:
        gaussians = {u: g for u, g in gaussians.items() if g.audit.get("valid")}
    candidates = load_candidates(workdir.file(CANDIDATES))
    links = links_by_asin(read_parquet(workdir.file(LINKS)))
    if (executor := cfg.executor) is not None and executor.workers > 1:
        asins = (str(p["parent_asin"]) for p in products)
        pools = (candidates.get(a) or [] for a in asins if user_gate(links.get(a) or [], gaussians) is None)
        parse_texts(sorted({c.text for pool in pools for c in pool}), executor=executor)
    rows, counts = pair_products(
        workdir.domain,
        products,
        candidates,
        links,
        gaussians,
        lambda texts: np.asarray(encoder.encode(texts)),
        config=config,
        seed=seed,
        injector=injector,
    )
    rows.sort(key=lambda r: r["id"])
    write_parquet(pa.Table.from_pylist(rows, schema=ROWS_SCHEMA), workdir.file(PAIRS))
    stats = {
        "rows": len(rows),
        "counts": dict(sorted(counts.items())),
        "users_failing_audit": len(failed),
        "users_failing_audit_excluded": len(failed) if config.audited_only else 0,
    }
    stage.done(stats)
    return stats
