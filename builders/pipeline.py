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
* ``max_pairs_tried=1``: strictly the farthest pair (docs/design.md §8); failures are counted, not retried;
* realizer generation, 50 candidates per product, no semantic gate (see ``pqb.builders.queries.filters``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from pqb.builders.config import EMBEDDED_DEFAULT, BuildConfig, StageStats
from pqb.builders.errors import SourceFileNotFoundError
from pqb.builders.executor import Executor
from pqb.builders.pairing.pairs import run_pair
from pqb.builders.queries.filters import semantic_available
from pqb.builders.queries.generate import run_generate
from pqb.builders.source.amazon import read_summary
from pqb.builders.source.stage import run_ingest, run_users
from pqb.builders.syntax.stage import run_profiles
from pqb.builders.workdir import WorkDir, writer_lock
from pqb.builders.writing_errors.profiles import run_errors
from pqb.dataset import settings
from pqb.dataset.progress import enabled as progress_enabled
from pqb.dataset.progress import progress_bars
from pqb.dataset.schema import category_from_domain, config_kind, domain_from_category


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


@dataclass(frozen=True)
class Step:
    """One stage of a domain's build: its name (``pqb-build <name>``, the ``--force`` key), the stage
    function, and what stops the domain after it (a note for the summary, or ``None`` to go on)."""

    name: str
    run: Callable[..., StageStats]
    stop: Callable[[StageStats], str | None] = lambda stats: None


STAGES: tuple[Step, ...] = (
    Step("ingest", run_ingest, lambda s: None if s.get("targets") else NO_TARGETS),
    Step("users", run_users),
    Step(
        "profiles",
        run_profiles,
        lambda s: None if s.get("gaussians") else "no user Gaussians (no qualified users)",
    ),
    Step("errors", run_errors),
    Step("generate", run_generate),
    Step("pair", run_pair, lambda s: None if s.get("rows") else "no pairs passed the selection gates"),
)
"""The build, in order: every stage has the signature ``run(wd, cfg, *, force) -> StageStats``."""
NO_TARGETS = "no target products (no product with 5 usable attributes: title-only metadata)"


def build_domain(
    domain: str,
    work: Path,
    config: BuildConfig,
    *,
    force: Sequence[str] = (),
    log: TextIO | None = None,
) -> DomainResult:
    """Run :data:`STAGES` on one domain, stopping early when a stage leaves nothing to build on."""
    log = log or sys.stderr  # looked up per call: a default bound at import outlives a replaced stderr
    res = DomainResult(domain)
    wd = WorkDir(work, domain)
    for step in STAGES:
        print(f"[{domain}] {step.name}", file=log)
        t0 = time.perf_counter()
        stats = step.run(wd, config, force=step.name in force)
        res.stats[step.name] = stats
        res.seconds[step.name] = round(time.perf_counter() - t0, 1)
        if note := step.stop(stats):
            res.note = note
            break
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
    semantic_default: bool = True,
) -> list[DomainResult]:
    """Build ``domains`` (default: every category of the local source) and publish those with pairs.

    ``progress=False`` silences every bar, including those inside stages (:mod:`pqb.dataset.progress`).
    ``semantic_default=False``: ``config.filters.semantic`` is the caller's decision (the CLI resolves
    ``--semantic/--no-semantic`` itself), never turned on here.
    """
    from pqb.builders.publish.tables import publish as publish_dataset
    from pqb.builders.publish.tables import record_build_info

    log = log or sys.stderr
    if semantic_default:
        config = with_semantic_default(config)
    t0 = time.perf_counter()
    if not domains:
        domains = discover_domains(source)
    if config.pair.inject_errors:  # the pair stage's slip channel needs the real slips: say so before any work
        from pqb.builders.writing_errors.channel import typos_path

        typos_path()
    progress = progress and progress_enabled()
    target = Path(dataset_dir or settings.default_dataset_dir())
    # one writer per work dir and dataset folder, for the whole build: a second build stops at once
    with writer_lock(*(Path(work) / d for d in domains), *([target] if publish else [])):
        with progress_bars(progress):
            cfg = replace(config, source=source, strict=strict, executor=executor)
            results = [build_domain(d, Path(work), cfg, force=force, log=log) for d in domains]
        built = [WorkDir(Path(work), r.domain) for r in results if r.rows]
        info = _portable({"seed": config.seed, "config": config.as_dict(), "source": str(source or "PQB_AMAZON_DIR")})
        if built and not publish:  # a later `pqb-build publish` of these work dirs writes the same card
            record_build_info(built, info)
        if publish:  # a domain that yields no pairs now loses its configs of an earlier build
            t1 = time.perf_counter()
            skipped = [r.domain for r in results if not r.rows]
            counts = publish_dataset(built, target, build_info=info, withdraw=skipped)
            for r in results:
                mine = {k: v for k, v in counts.items() if config_kind(k)[0] == r.domain}
                if r.rows:
                    r.stats["publish"] = mine
                    r.seconds["publish"] = round(time.perf_counter() - t1, 1)
                elif mine:
                    r.note += f"; its {len(mine)} configs from an earlier build were removed from {target}"
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
