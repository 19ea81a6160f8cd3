"""Selection and pairing: from candidate pools and user Gaussians to benchmark rows (DESIGN.md decisions).

For each target product with at least two linked users that have a syntactic Gaussian:

1. **Pair**: the two users whose Gaussians are farthest apart (symmetric KL by default, Bhattacharyya as
   an option). The authors' code never maximised any distance (reference spec §4.6, §8.1); the paper
   says pairs are "at maximum distributional distance", so we do, and say which distance in the card.
2. **Select**: for each user of the pair, the candidate with the highest own log-density among those
   *inside* the user's acceptance region (D² ≤ own threshold) *and outside* the partner's
   (D² > partner threshold). The two sets are disjoint, so the two queries always differ.
3. **Inject**: each user's own writing errors (Builders II's ``ErrorInjector``), protecting the 5 core
   terms and the product's title/brand words, seeded from ``(seed, asin, user)``.

Every product that yields no pair is counted under the first gate it fails (:data:`GATES`), so the
final summary says exactly where the benchmark loses products.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from pqb.builders.queries.generate import CANDIDATES_FILE, derive_seed, load_candidates
from pqb.builders.workdir import WorkDir, read_parquet, write_parquet
from pqb.dataset.progress import bar
from pqb.dataset.schema import ROWS_SCHEMA, count_term, document_string

PAIRS_FILE = "pairs.parquet"

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
class PairConfig:
    """``distance``: ``sym_kl`` or ``bhattacharyya``. ``max_pairs_tried`` > 1 falls back to the next
    most distant pairs when the farthest one has no valid selection (1 = strictly the farthest pair).
    ``audited_only``: pair only users whose Gaussian passed the audit (``audit["valid"]``: numerics,
    calibration on the audit split, stability). Off by default: users failing it are paired and
    flagged (``audit_valid`` in ``<d>-users``), and the card reports how many pairs have both users
    passing; on the small slice the audit passes few users, and pairing only those leaves a handful
    of pairs (the card and the stage stats say which rule was applied)."""

    distance: str = "sym_kl"
    max_pairs_tried: int = 1
    inject_errors: bool = True
    audited_only: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


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


def ranked_pairs(
    users: Sequence[str], gaussians: Mapping[str, Any], distance: Callable[[Any, Any], float]
) -> list[tuple[float, str, str]]:
    """All user pairs, farthest first; ties broken by the user ids (so the order is deterministic)."""
    fitted = sorted({u for u in users if u in gaussians})
    pairs = [
        (float(distance(gaussians[a], gaussians[b])), a, b) for a, b in itertools.combinations(fitted, 2)
    ]
    return sorted(pairs, key=lambda t: (-t[0], t[1], t[2]))


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


def select_pair(
    Z: np.ndarray,
    users: Sequence[str],
    gaussians: Mapping[str, Any],
    distance: Callable[[Any, Any], float],
    max_pairs_tried: int = 1,
) -> tuple[tuple[Selection, Selection, float, int] | None, str | None]:
    """Pick the farthest user pair and both selections. Returns ``((sel_a, sel_b, dist, rank), None)`` on
    success (``rank`` = 0 for the farthest pair) or ``(None, gate)`` with the farthest pair's failure."""
    fitted = [u for u in users if u in gaussians]
    if not fitted:
        return None, "no_users"
    if len(set(fitted)) == 1:
        return None, "one_user"
    first_failure: str | None = None
    for rank, (dist, a, b) in enumerate(ranked_pairs(users, gaussians, distance)[:max_pairs_tried]):
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
    return {
        "id": f"{domain}:{asin}:{sel.user}",
        "domain": domain,
        "asin": asin,
        "user_id": sel.user,
        "pair_id": f"{domain}:{asin}",
        "query": query,
        "error_query": error_query,
        "error_edits": [
            {k: e[k] for k in ("start", "end", "original", "edited", "mechanism")} for e in edits
        ],
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
        texts = [c.text for c in pool]
        result, gate = select_pair(
            np.asarray(encode(texts)),
            list(links.get(asin) or []),
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
        protected = list(product["core_terms"]) + list(product.get("protected_terms") or [])
        for sel in (sa, sb):
            query = texts[sel.index]
            injection = None
            if injector is not None and config.inject_errors:
                injection = injector.inject(query, sel.user, protected, derive_seed(seed, asin, sel.user))
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


def run_pair(
    workdir: WorkDir,
    *,
    seed: int = 0,
    config: PairConfig | None = None,
    force: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """The ``pair`` stage: candidates + Gaussians + links (+ error profiles) -> ``pairs.parquet``."""
    from pqb.builders.syntax.gaussian import load_gaussians

    config = config or PairConfig()
    inputs = [
        workdir.file(n)
        for n in ("products.parquet", CANDIDATES_FILE, "links.parquet", "syntax/gaussians.parquet")
    ]
    inputs += (
        sorted(p for p in (workdir.path / "errors").glob("*") if p.is_file()) if config.inject_errors else []
    )
    inputs += sorted(p for p in (workdir.path / "syntax").glob("*") if p.is_file())
    injector = None
    if config.inject_errors:
        from pqb.builders.writing_errors.injection import ErrorInjector

        injector = ErrorInjector.load(workdir.path)
    params = {"seed": seed, **config.as_dict(), "injector": injector.settings() if injector else None}
    stage = workdir.stage("pair", inputs, params, [PAIRS_FILE])
    if stage.is_fresh() and not force:
        return dict(workdir.manifest["stages"]["pair"]["stats"], skipped=True)
    from pqb.builders.syntax.encoder import SyntaxEncoder

    products = [
        r for r in read_parquet(workdir.file("products.parquet")).to_pylist()
        if r.get("is_target") and len(r.get("core_terms") or []) == 5
    ]  # fmt: skip
    products.sort(key=lambda r: r["parent_asin"])
    encoder = SyntaxEncoder.load(workdir.path)
    gaussians = load_gaussians(workdir.file("syntax/gaussians.parquet"))
    failed = sorted(u for u, g in gaussians.items() if not g.audit.get("valid"))
    if config.audited_only:
        gaussians = {u: g for u, g in gaussians.items() if g.audit.get("valid")}
    rows, counts = pair_products(
        workdir.domain,
        products,
        load_candidates(workdir.file(CANDIDATES_FILE)),
        links_by_asin(read_parquet(workdir.file("links.parquet"))),
        gaussians,
        lambda texts: np.asarray(encoder.encode(texts)),
        config=config,
        seed=seed,
        injector=injector,
        progress=progress,
    )
    rows.sort(key=lambda r: r["id"])
    write_parquet(pa.Table.from_pylist(rows, schema=ROWS_SCHEMA), workdir.file(PAIRS_FILE))
    stats = {
        "rows": len(rows),
        "counts": dict(sorted(counts.items())),
        "users_failing_audit": len(failed),
        "users_failing_audit_excluded": len(failed) if config.audited_only else 0,
    }
    stage.done(stats)
    return stats
