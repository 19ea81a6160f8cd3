"""``pqb-build all``: every stage of a domain, resumable, then publishing, with a final summary.

Stages in order (each skipped when its work-dir manifest fingerprint is fresh):
ingest -> users -> profiles -> errors -> generate -> pair, then publish of every domain that
yielded pairs. :class:`BuildConfig` holds every threshold; :data:`EMBEDDED_DEFAULT` is the
configuration of the offline default build (``pqb-build`` with no arguments) on the small real slice
``amazon2023-mini``, where users have ~20 sentences instead of the paper's 50:

* ``link="any"``: the slice's reviewers almost never review products with full metadata, so each
  target is linked to a seeded subset of qualified users (the card says so);
* ``threshold_kind="heldout", threshold_q=0.95``: each user's acceptance region is the 95th
  percentile of D² over the user's own held-out sentences. The χ²₁₆(0.95) = 26.3 gate is below the
  *median* held-out D² (≈38) of these small-sample Gaussians, so it would exclude most of a user's own
  text; measured on Video_Games with strict max-distance pairs, χ² gives 58 pairs and held-out q95 167;
* ``max_pairs_tried=1``: strictly the farthest pair (DESIGN.md); failures are counted, not retried;
* realizer generation, 50 candidates per product, no semantic gate (see ``pqb.builders.queries.filters``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from pqb.builders.executor import Executor
from pqb.builders.pairing.pairs import PairConfig
from pqb.builders.queries.filters import FilterConfig, semantic_available
from pqb.builders.source.amazon import SourceFileNotFoundError, read_summary
from pqb.builders.workdir import WorkDir
from pqb.dataset import settings
from pqb.dataset.progress import enabled as progress_enabled
from pqb.dataset.progress import progress_bars
from pqb.dataset.schema import category_from_domain, domain_from_category

STAGES: tuple[str, ...] = ("ingest", "users", "profiles", "errors", "generate", "pair")


@dataclass(frozen=True)
class BuildConfig:
    """Everything that decides a build's output besides the source files (recorded in the card)."""

    seed: int = 0
    link: str = "reviewers"
    link_users_per_product: int = 4
    threshold_kind: str = "chi2"
    threshold_q: float = 0.95
    error_backend: str = "symspell"
    generator: str = "realizer"
    generator_kwargs: dict[str, Any] = field(default_factory=dict)
    n_candidates: int = 50
    filters: FilterConfig = field(default_factory=FilterConfig)
    pair: PairConfig = field(default_factory=PairConfig)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


EMBEDDED_DEFAULT = BuildConfig(link="any", threshold_kind="heldout", threshold_q=0.95)
"""The configuration of ``pqb-build`` with no arguments (see the module docstring for each choice)."""


def with_semantic_default(config: BuildConfig) -> BuildConfig:
    """Model back-ends get the semantic gate when its model loads offline; the realizer never needs it."""
    if config.generator != "realizer" and not config.filters.semantic and semantic_available():
        return replace(config, filters=replace(config.filters, semantic=True))
    return config


@dataclass
class DomainResult:
    domain: str
    stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    note: str = ""

    @property
    def rows(self) -> int:
        return int(self.stats.get("pair", {}).get("rows", 0) or 0)


def _timed(result: DomainResult, name: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    t0 = time.perf_counter()
    stats = fn()
    result.stats[name] = stats
    result.seconds[name] = round(time.perf_counter() - t0, 1)
    return stats


def build_domain(
    domain: str,
    source: str | Path | None,
    work: Path,
    config: BuildConfig,
    *,
    force: Sequence[str] = (),
    progress: bool = True,
    strict: bool = False,
    log: TextIO | None = None,
    executor: Executor | None = None,
) -> DomainResult:
    """Run the stages of one domain; stops after ``ingest`` when the domain has no target products.

    ``strict`` makes every bad input line an error at ingest (see :mod:`pqb.builders.source.amazon`).
    ``executor`` runs the parse maps (:mod:`pqb.builders.executor`; default: this process); it is not
    part of any fingerprint, because it does not change a byte of the output.
    """
    from pqb.builders import stages

    log = log or sys.stderr  # looked up per call: a default bound at import outlives a replaced stderr
    from pqb.builders.pairing.pairs import run_pair
    from pqb.builders.queries.generate import run_generate
    from pqb.builders.writing_errors.profiles import run_errors

    res = DomainResult(domain)
    wd = WorkDir(work, domain)
    f = set(force)
    print(f"[{domain}] ingest", file=log)
    ing = _timed(res, "ingest", lambda: stages.run_ingest(work, source, domain, strict, force="ingest" in f))
    if not ing.get("targets"):
        res.note = "no target products (no product with 5 usable attributes: title-only metadata)"
        return res
    print(f"[{domain}] users", file=log)
    _timed(
        res,
        "users",
        lambda: stages.run_users(
            work,
            domain,
            seed=config.seed,
            link=config.link,
            link_users_per_product=config.link_users_per_product,
            executor=executor,
            force="users" in f,
        ),
    )
    print(f"[{domain}] profiles", file=log)
    prof = _timed(
        res,
        "profiles",
        lambda: stages.run_profiles(
            work,
            domain,
            seed=config.seed,
            threshold_kind=config.threshold_kind,
            threshold_q=config.threshold_q,
            executor=executor,
            force="profiles" in f,
        ),
    )
    if not prof.get("gaussians"):
        res.note = "no user Gaussians (no qualified users)"
        return res
    print(f"[{domain}] errors", file=log)
    _timed(
        res,
        "errors",
        lambda: run_errors(wd, backend=config.error_backend, seed=config.seed, force="errors" in f),
    )
    print(f"[{domain}] generate", file=log)
    _timed(
        res,
        "generate",
        lambda: run_generate(
            wd,
            backend=config.generator,
            n=config.n_candidates,
            seed=config.seed,
            filter_config=config.filters,
            generator_kwargs=config.generator_kwargs,
            force="generate" in f,
            progress=progress,
        ),
    )
    print(f"[{domain}] pair", file=log)
    _timed(
        res,
        "pair",
        lambda: run_pair(
            wd, seed=config.seed, config=config.pair, force="pair" in f, progress=progress, executor=executor
        ),
    )
    if not res.rows:
        res.note = "no pairs passed the selection gates"
    return res


def discover_domains(source: str | Path | None) -> list[str]:
    """Domains of a local source directory: every ``<Category>.jsonl[.gz]`` that has a ``meta_`` file."""
    root = Path(source or settings.PQB_AMAZON_DIR)
    if not root.is_dir():
        raise SourceFileNotFoundError(
            f"Amazon Reviews 2023 directory {root} not found; pass --source <dir|hub> or set PQB_AMAZON_DIR."
        )
    cats = set()
    for p in root.iterdir():
        name = p.name.removesuffix(".gz").removesuffix(".jsonl")
        is_reviews = p.name.endswith((".jsonl", ".jsonl.gz")) and not name.startswith("meta_")
        if is_reviews and any((root / f"meta_{name}{ext}").exists() for ext in (".jsonl", ".jsonl.gz")):
            cats.add(name)
    return sorted(domain_from_category(c) for c in cats)


def build(
    domains: Sequence[str] | None = None,
    *,
    source: str | Path | None = None,
    work: Path = Path("work"),
    dataset_dir: Path | None = None,
    config: BuildConfig = EMBEDDED_DEFAULT,
    publish: bool = True,
    force: Sequence[str] = (),
    progress: bool = True,
    strict: bool = False,
    log: TextIO | None = None,
    executor: Executor | None = None,
) -> list[DomainResult]:
    """Build ``domains`` (default: every category of the local source) and publish those with pairs.

    ``progress=False`` silences every bar, including those inside stages (:mod:`builders.progress`).
    """
    from pqb.builders.publish.tables import publish as publish_dataset

    log = log or sys.stderr
    config = with_semantic_default(config)
    t0 = time.perf_counter()
    if not domains:
        domains = discover_domains(source)
    progress = progress and progress_enabled()
    with progress_bars(progress):
        results = [
            build_domain(
                d,
                source,
                Path(work),
                config,
                force=force,
                progress=progress,
                strict=strict,
                log=log,
                executor=executor,
            )
            for d in domains
        ]
    built = [WorkDir(Path(work), r.domain) for r in results if r.rows]
    if publish and built:
        t1 = time.perf_counter()
        info = {"seed": config.seed, "config": config.as_dict(), "source": str(source or "PQB_AMAZON_DIR")}
        counts = publish_dataset(built, dataset_dir or settings.PQB_DATASET_DIR, build_info=_portable(info))
        for r in results:
            if r.rows:
                r.stats["publish"] = {k: v for k, v in counts.items() if k.split("-")[0] == r.domain}
                r.seconds["publish"] = round(time.perf_counter() - t1, 1)
    print(summary(results, time.perf_counter() - t0), file=log)
    return results


def _portable(info: dict[str, Any]) -> dict[str, Any]:
    """Source paths reduced to their folder name, so the card does not depend on where the checkout lives."""
    src = str(info.get("source", ""))
    if src and Path(src).exists():
        info = dict(info, source=f"local:{Path(src).name}")
    return info


def _input_lines(r: DomainResult) -> list[str]:
    """What ingest read and counted (dropped or altered lines), so bad input is seen in the summary."""
    ing = r.stats.get("ingest", {})
    if "reviews_read" not in ing:
        return []
    return [f"    input: reviews {read_summary(ing['reviews_read'])}; meta {read_summary(ing['meta_read'])}"]


def summary(results: Sequence[DomainResult], seconds: float) -> str:
    """The final report: per domain its stage counts and times, pairing gate failures, or why it was skipped."""
    lines = ["", "PQB build summary", "================="]
    for r in results:
        if not r.rows:
            lines.append(f"- {r.domain} ({category_from_domain(r.domain)}): skipped: {r.note}")
            lines += _input_lines(r)
            continue
        ing, us, pr = r.stats.get("ingest", {}), r.stats.get("users", {}), r.stats.get("profiles", {})
        gen, pair = r.stats.get("generate", {}), r.stats.get("pair", {})
        counts = pair.get("counts", {})
        fails = {k.removeprefix("fail_"): v for k, v in counts.items() if k.startswith("fail_")}
        inj = {k.removeprefix("inject_"): v for k, v in counts.items() if k.startswith("inject_")}
        gates = gen.get("gates", {})
        lines += [
            f"- {r.domain}: {pair.get('rows', 0)} rows = {counts.get('paired', 0)} syntactic pairs, "
            f"{counts.get('error_pairs', 0)} error pairs",
            f"    ingest: {ing.get('products', '?')} products, {ing.get('targets', '?')} targets, "
            f"{ing.get('reviews', '?')} reviews | users: {us.get('users_qualified', '?')} qualified, "
            f"{us.get('links', '?')} links | profiles: {pr.get('gaussians', '?')} Gaussians",
            f"    generate: {gates.get('generated', 0)} candidates, kept {gates.get('kept', 0)}; rejected "
            + ", ".join(
                f"{k.removeprefix('rejected_')}={v}" for k, v in gates.items() if k.startswith("rejected_")
            )
            + f"; products without a valid candidate: {gates.get('products_without_valid_candidates', 0)}",
            f"    pairing gate failures (products): {fails or 'none'}",
            f"    error injection: {inj or 'off'}",
            *_input_lines(r),
            "    seconds: " + ", ".join(f"{k}={v}" for k, v in r.seconds.items()),
        ]
    lines.append(f"total {seconds:.1f} s")
    return "\n".join(lines)
