"""Is system A more robust (or more effective) than system B? Paired differences with CIs and p-values.

``pqb-harness compare A.json B.json`` pairs two results files query by query (their ``ranks``
section) on every task both ran, and for every metric reports the difference A − B with

* a **clustered paired bootstrap** 95% CI: one draw of units per replicate (:mod:`pqb.harness.evaluation.bootstrap`,
  the same draws ``run`` uses for the same seed and unit), applied to both systems at once;
* a **two-sided paired randomization test**: in each of ``n_perm`` permutations every unit
  independently swaps the two systems' ranks of all its queries or keeps them (probability ½); the
  metric is recomputed for both pseudo-systems and p = (1 + #{|Δ*| ≥ |Δ|}) / (1 + n_perm).
  Under the ``user`` unit a syntactic pair whose two users swap differently is scored from one
  system's rank on one side and the other's on the other side — exactly what swapping the users'
  ranks means.

Both resample the same units for both systems, so the CI and the test respect the pairing and the
clustering. With unit ``pair`` on per-query metrics the test is Fisher's randomization test as
``ranx.compare(stat_test="fisher")`` runs it; the definitional differences (the +1 in the p-value,
RR counted to ``rr_cutoff``, clusters) are listed in docs/results.md. Derived metrics (the
ceiling-aware Flip ratio) are recomputed from each pseudo-system's means, never differenced per pair.

Runs on different dataset or corpus fingerprints are refused: their pairs are not the same pairs.
Domain averages (pair-type groups, over the domains' own ``pqb_<pair_type>_<domain>`` tasks only:
:func:`is_domain_task`) average the per-task differences, their replicates and their permutation
statistics replicate by replicate, as group CIs do in ``run``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pqb.harness.errors import DataError, UsageError
from pqb.harness.evaluation.bootstrap import (
    DEFAULT_UNIT,
    Design,
    Level,
    chunk_size,
    exact_product,
    fixed_point,
    iter_count_chunks,
    level_replicates,
    percentile_ci,
)
from pqb.harness.evaluation.design import derive, task_design
from pqb.harness.evaluation.evaluator import TaskData, load_tasks
from pqb.harness.evaluation.integrity import recomputed_problem, refuse_or_note
from pqb.harness.evaluation.pairtypes import PAIR_TYPES
from pqb.harness.evaluation.results import SATURATION_REASON, is_ratio, saturation, stored_ranks
from pqb.harness.evaluation.resume import SHAPING_TASK_FIELDS
from pqb.harness.evaluation.task_registry import TaskConfig, task_from_dict

ALPHA = 0.05

COMPARED_TASK_FIELDS = (*(f for f in SHAPING_TASK_FIELDS if f not in ("main_score", "run_depth")), "error_dose")
"""Task settings both runs must share: the resume key's score-shaping fields (less the headline metric's
name and the TREC file depth, which leave the stored ranks as they are) and the dose. Compare scores both
runs from run A's config, and a run's stored ranks are exact only up to its own config's depth."""


@dataclass
class PairedTask:
    """One task's paired replicates: ``reps[metric]`` bootstrap differences, ``perm[metric]`` the
    randomization statistics, ``diff``/``a``/``b`` the observed values."""

    cfg: TaskConfig
    a: dict[str, float]
    b: dict[str, float]
    diff: dict[str, float]
    reps: dict[str, np.ndarray]
    perm: dict[str, np.ndarray]
    n_units: int
    unit: str


# -- loading ----------------------------------------------------------------------------------------


def common_tasks(
    a: Mapping[str, Any], b: Mapping[str, Any], wanted: Sequence[str] | None = None
) -> list[str]:
    """Tasks both files hold with stored ranks; refuses different dataset or corpus fingerprints."""
    tasks = sorted(set(a.get("ranks") or {}) & set(b.get("ranks") or {}))
    if wanted:
        tasks = [t for t in tasks if t in set(wanted)]
    if not tasks:
        raise UsageError(
            "the two results files share no task with stored ranks (written by pqb-harness >= 0.1 run or score); "
            "rerun both on the same tasks"
        )
    for t in tasks:
        da, db = a["dataset"].get(t, {}), b["dataset"].get(t, {})
        for key in ("fingerprint", "corpus_fingerprint"):
            if da.get(key) != db.get(key):
                raise DataError(
                    f"refusing to compare {t}: the runs evaluated different data ({key} {da.get(key)} vs "
                    f"{db.get(key)}); rerun both systems on the same dataset build (and --limit)"
                )
        ca, cb = (a.get("configs") or {}).get(t) or {}, (b.get("configs") or {}).get(t) or {}
        diffs = [f"{k} {ca.get(k)!r} vs {cb.get(k)!r}" for k in COMPARED_TASK_FIELDS if ca.get(k) != cb.get(k)]
        if diffs:
            raise DataError(
                f"refusing to compare {t}: the runs used different task settings ({'; '.join(diffs)}); "
                "rerun both systems with the same task YAML"
            )
    return tasks


def _task_data(results: Mapping[str, Any], task: str, dataset_path: str | None) -> TaskData:
    """The task's rows and pairs, reloaded from the dataset the run recorded (or ``dataset_path``) and
    checked against the recorded fingerprint, so the units are those of the evaluated rows."""
    cfg = task_from_dict(dict(results["configs"][task]), source=f"results configs[{task}]")
    recorded = results["dataset"][task]
    limit = (results.get("config") or {}).get("limit")
    loaded, skipped = load_tasks([cfg], dataset_path or recorded["path"], limit)
    if task not in loaded:
        raise DataError(f"{task}: its dataset cannot be loaded ({skipped.get(task)}); pass --dataset_path")
    data = loaded[task]
    if data.fingerprint != recorded.get("fingerprint"):
        raise DataError(
            f"{task}: the dataset at {data.dataset_path} is not the one the runs evaluated (fingerprint "
            f"{data.fingerprint} vs {recorded.get('fingerprint')}); pass --dataset_path to that build"
        )
    return data


def aligned_ranks(results: Mapping[str, Any], task: str, data: TaskData) -> np.ndarray:
    """The run's rank of every query of ``data`` in pair-set order."""
    by_id = stored_ranks(results, task)
    missing = [q for q in data.pairs.query_ids if q not in by_id]
    if missing:
        raise DataError(f"{task}: {len(missing)} queries have no stored rank (e.g. {missing[:3]})")
    return np.asarray([by_id[q] for q in data.pairs.query_ids], dtype=np.float64)


# -- paired statistics --------------------------------------------------------------------------------


def _flip_chunks(
    rng: np.random.Generator, n_units: int, n_perm: int, width: int
) -> Iterator[tuple[slice, np.ndarray]]:
    """(permutation slice, (rows, n_units) swap bits) chunk by chunk: 1 = the unit swaps the systems."""
    step = chunk_size(n_perm, width)
    for start in range(0, n_perm, step):
        stop = min(start + step, n_perm)
        yield slice(start, stop), rng.integers(0, 2, size=(stop - start, n_units), dtype=np.int8)


def paired_task(cfg: TaskConfig, data: TaskData, ranks_a: np.ndarray, ranks_b: np.ndarray, *, unit: str,
                n_boot: int, n_perm: int, seed: int) -> PairedTask:  # fmt: skip
    """Bootstrap differences and randomization statistics of every metric of one task."""
    if cfg.similarity_gate is not None:  # the gate needs an embedder; the runs did not record its mask
        raise UsageError(f"{cfg.task}: compare does not support tasks with the authors' cosine pair gate")
    keep = None
    design_a = task_design(cfg, data.pairs, ranks_a, unit=unit, keep=keep)
    design_b = task_design(cfg, data.pairs, ranks_b, unit=unit, keep=keep)
    a, b = derive(design_a.point(), cfg.k_values), derive(design_b.point(), cfg.k_values)
    diff = {k: _sub(a[k], b[k]) for k in a}
    reps = _bootstrap_diffs(cfg, design_a, design_b, n_boot, seed)
    cross = {  # side a from one system, side b from the other: the pairs a per-user swap splits
        (0, 1): task_design(cfg, data.pairs, ranks_a, unit=unit, keep=keep, ranks_b=ranks_b).levels["pairs"],
        (1, 0): task_design(cfg, data.pairs, ranks_b, unit=unit, keep=keep, ranks_b=ranks_a).levels["pairs"],
    }
    perm = _permutation_diffs(cfg, design_a, design_b, cross, n_perm, seed)
    return PairedTask(cfg, a, b, diff, reps, perm, design_a.n_units, unit)


def _sub(x: float, y: float) -> float:
    return float(x - y) if np.isfinite(x) and np.isfinite(y) else float("nan")


def _bootstrap_diffs(
    cfg: TaskConfig, da: Design, db: Design, n_boot: int, seed: int
) -> dict[str, np.ndarray]:
    names = list(derive(da.point(), cfg.k_values))
    if n_boot <= 0 or da.n_units == 0:
        return {k: np.empty(0) for k in names}
    out = {k: np.full(n_boot, np.nan) for k in names}
    sums = {(n, side): d.levels[n].fixed_sums(d.n_units) for n, lv in da.levels.items() if lv.single and lv.n
            for side, d in (("a", da), ("b", db))}  # fmt: skip
    for rows, counts in iter_count_chunks(da, n_boot, seed):
        ma: dict[str, np.ndarray] = {}
        mb: dict[str, np.ndarray] = {}
        for name in da.levels:
            ma.update(level_replicates(da.levels[name], counts, da.n_units, sums.get((name, "a"))))
            mb.update(level_replicates(db.levels[name], counts, db.n_units, sums.get((name, "b"))))
        ra, rb = derive(ma, cfg.k_values), derive(mb, cfg.k_values)
        for k in ra:
            out[k][rows] = ra[k] - rb[k]
    return out


def _permutation_diffs(cfg: TaskConfig, da: Design, db: Design, cross: Mapping[tuple[int, int], Level],
                       n_perm: int, seed: int) -> dict[str, np.ndarray]:  # fmt: skip
    names = list(derive(da.point(), cfg.k_values))
    if n_perm <= 0 or da.n_units == 0:
        return {k: np.empty(0) for k in names}
    out = {k: np.full(n_perm, np.nan) for k in names}
    rng = np.random.default_rng([seed, 1])  # independent of the bootstrap draws, same on every machine
    width = max([da.n_units, *(lv.n for lv in da.levels.values())])
    swaps = {name: _SwapSums.of(la, db.levels[name], da.n_units) for name, la in da.levels.items()
             if la.single and la.n}  # fmt: skip
    for rows, flips in _flip_chunks(rng, da.n_units, n_perm, width):
        ma: dict[str, np.ndarray] = {}
        mb: dict[str, np.ndarray] = {}
        for name, la in da.levels.items():
            if la.n == 0:
                continue
            if name in swaps:
                sa, sb = swaps[name].means(flips)
            else:
                sa, sb = _swapped_means(la, db.levels[name], flips, cross if name == "pairs" else None)
            ma.update(sa)
            mb.update(sb)
        ra, rb = derive(ma, cfg.k_values), derive(mb, cfg.k_values)
        for k in ra:
            out[k][rows] = ra[k] - rb[k]
    return out


@dataclass(frozen=True)
class _SwapSums:
    """A single-unit level's per-unit sums under both systems, prepared once for every permutation chunk.

    A permutation swaps whole units, so A' = ΣA + Σ_swapped (B − A): one exact product of the swap bits
    with the fixed-point per-unit differences (:func:`fixed_point`)."""

    names: tuple[str, ...]
    sum_a: dict[str, float]
    sum_b: dict[str, float]
    total: float
    ints: np.ndarray
    scale: np.ndarray

    @classmethod
    def of(cls, la: Level, lb: Level, n_units: int) -> _SwapSums:
        (sa, tot), (sb, _) = la.unit_sums(n_units), lb.unit_sums(n_units)
        ints, scale = fixed_point(np.column_stack([sb[k] - sa[k] for k in sa]), n_units)
        return cls(
            tuple(sa), {k: sa[k].sum() for k in sa}, {k: sb[k].sum() for k in sa}, tot.sum(), ints, scale
        )

    def means(self, flips: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        moved = exact_product(flips.astype(np.float64), self.ints, self.scale)
        out_a = {k: (self.sum_a[k] + moved[:, i]) / self.total for i, k in enumerate(self.names)}
        out_b = {k: (self.sum_b[k] - moved[:, i]) / self.total for i, k in enumerate(self.names)}
        return out_a, out_b


def _swapped_means(la: Level, lb: Level, flips: np.ndarray,
                   cross: Mapping[tuple[int, int], Level] | None) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:  # fmt: skip
    """Means of the two pseudo-systems for each permutation (rows of ``flips``) of a two-unit level: a pair
    scores each side from the system its own unit kept, via the ``cross`` levels (single-unit levels use
    :class:`_SwapSums`)."""
    base = np.ones(la.n) if la.base is None else la.base
    s1, s2 = flips[:, la.units[:, 0]].astype(bool), flips[:, la.units[:, 1]].astype(bool)
    table = {(0, 0): la, (1, 1): lb, **(cross or {})}  # (source of side a, source of side b)
    out_a, out_b = {}, {}
    for k in la.values:
        va, vb = np.zeros(s1.shape), np.zeros(s1.shape)
        for (x, y), level in table.items():
            mask = (s1 == bool(x)) & (s2 == bool(y))
            va[mask] = np.broadcast_to(level.values[k], s1.shape)[mask]
            vb[mask] = np.broadcast_to(table[(1 - x, 1 - y)].values[k], s1.shape)[mask]
        out_a[k], out_b[k] = (va * base).sum(axis=1) / base.sum(), (vb * base).sum(axis=1) / base.sum()
    return out_a, out_b


def p_value(observed: float, perm: np.ndarray) -> float:
    """Two-sided permutation p-value (1 + #{|Δ*| ≥ |Δ|}) / (1 + R); NaN when undefined."""
    perm = np.asarray(perm, dtype=np.float64)
    perm = perm[~np.isnan(perm)]
    if not np.isfinite(observed) or perm.size == 0:
        return float("nan")
    tol = 1e-12 * max(1.0, abs(observed))
    return float((1 + np.count_nonzero(np.abs(perm) >= abs(observed) - tol)) / (1 + perm.size))


# -- report ---------------------------------------------------------------------------------------------


def _metric_rows(a: dict, b: dict, diff: dict, reps: dict, perm: dict, higher: Mapping[str, bool],
                 saturated: Sequence[int] = ()) -> dict[str, dict[str, Any]]:  # fmt: skip
    """One row per metric. ``significant`` needs both readings: the randomization test (p < ``ALPHA``) and
    the bootstrap CI of A − B (excludes 0); ``evidence`` says which ones hold (``both``, ``test only``,
    ``CI only``, ``neither``): they disagree near the threshold and for a ratio, whose test also reacts
    to a difference in hit rate. A robustness metric at a cut-off where either system is saturated
    (``saturated``: the K values) is never significant: a saturated 0 says "no room to flip"."""
    out = {}
    for k in diff:
        lo, hi = percentile_ci(reps.get(k, np.empty(0)))
        p = p_value(diff[k], perm.get(k, np.empty(0)))
        better = None
        if np.isfinite(diff[k]) and diff[k] != 0:
            better = "a" if (diff[k] > 0) == higher.get(k, True) else "b"
        test = bool(np.isfinite(p) and p < ALPHA)
        ci = lo is not None and hi is not None and bool(np.isfinite(lo) and np.isfinite(hi)) and (lo > 0 or hi < 0)
        evidence = "both" if test and ci else "test only" if test else "CI only" if ci else "neither"
        sat = at_cutoff(k) in saturated
        out[k] = {"a": a[k], "b": b[k], "diff": diff[k], "diff_ci": [lo, hi], "p_value": p,
                  "significant": test and ci and not sat, "evidence": evidence, "saturated": sat,
                  "better": better}  # fmt: skip
    return out


def at_cutoff(metric: str) -> int | None:
    """The K of a robustness metric at a cut-off (``flip@10``, ``deg@5``, ``flip@10_ratio``), else ``None``
    (``flip@K_expected`` is a function of the hit rates, an effectiveness difference)."""
    if not metric.startswith(("flip@", "deg@")) or metric.endswith("_expected"):
        return None
    head = metric.split("@", 1)[1].split("_", 1)[0]
    return int(head) if head.isdigit() else None


def saturated_ks(res_a: Mapping[str, Any], res_b: Mapping[str, Any], task: str, pair_type: str) -> dict[str, list[int]]:
    """``{"a": [K...], "b": [K...]}``: where each run is saturated on ``task``, by the current rule
    (:func:`pqb.harness.evaluation.results.saturation`) applied to its recorded entry."""
    return {side: saturation(res["results"][task], pair_type)["saturated_at"]
            for side, res in (("a", res_a), ("b", res_b))}  # fmt: skip


def compare_results(res_a: Mapping[str, Any], res_b: Mapping[str, Any], *, tasks: Sequence[str] | None = None,
                    n_boot: int = 1000, n_perm: int = 1000, seed: int = 0, unit: str | None = None,
                    dataset_path: str | None = None, allow_edited: bool = False,
                    paths: Sequence[Any] = ("A", "B")) -> dict[str, Any]:  # fmt: skip
    """The comparison of two results files (JSON-able; keys documented in docs/results.md).

    Each file's stored metrics must be what its stored ranks give (recomputed here on the reloaded
    pairs): an edited rank list once made ``compare`` print B's Deg@1 as −1.90 (p = 0.005) where B's own
    results said +1.90. A disagreement is refused naming the file (``paths``) and the metric, or noted
    under ``allow_edited`` (:func:`~pqb.harness.evaluation.integrity.refuse_or_note`)."""
    names = common_tasks(res_a, res_b, tasks)
    out: dict[str, Any] = {"a": _system(res_a), "b": _system(res_b), "tasks": {}, "groups": {},
                           "settings": {"n_boot": n_boot, "n_perm": n_perm, "seed": seed, "alpha": ALPHA,
                                        "test": "two-sided paired randomization (unit swaps)",
                                        "ci": "clustered paired percentile bootstrap"}}  # fmt: skip
    paired: dict[str, PairedTask] = {}
    sat: dict[str, dict[str, list[int]]] = {}
    for t in names:
        data = _task_data(res_a, t, dataset_path)
        u = unit or _recorded_unit(res_a, res_b, t)
        paired[t] = paired_task(data.cfg, data, aligned_ranks(res_a, t, data), aligned_ranks(res_b, t, data),
                                unit=u, n_boot=n_boot, n_perm=n_perm, seed=seed)  # fmt: skip
        pt = paired[t]
        sat[t] = saturated_ks(res_a, res_b, t, pt.cfg.pair_type)
        for res, values, path in ((res_a, pt.a, paths[0]), (res_b, pt.b, paths[1])):
            refuse_or_note(recomputed_problem(res, t, values), path, allow_edited=allow_edited)
        out["tasks"][t] = {"pair_type": pt.cfg.pair_type, "unit": pt.unit, "n_units": pt.n_units,
                           "n_pairs": len(data.pairs.pair_a), "saturated_at": sat[t],
                           "metrics": _metric_rows(pt.a, pt.b, pt.diff, pt.reps, pt.perm,
                                                   pt.cfg.higher_is_better(), sorted({*sat[t]["a"], *sat[t]["b"]}))}  # fmt: skip
    for pair_type in PAIR_TYPES:
        members = [t for t in names if paired[t].cfg.pair_type == pair_type and is_domain_task(paired[t].cfg)]
        if members:
            # an average is saturated at K for a system when every domain it averages is (as the leaderboard's)
            group_sat = {s: sorted(set.intersection(*(set(sat[t][s]) for t in members))) for s in ("a", "b")}
            out["groups"][pair_type] = {**_group(members, paired, sorted({*group_sat["a"], *group_sat["b"]})),
                                        "saturated_at": group_sat}  # fmt: skip
    return out


def is_domain_task(cfg: TaskConfig) -> bool:
    """Whether a task is its domain's own ``pqb_<pair_type>_<dataset_name>`` task, the only kind a domain
    average takes (the run's ``syntactic``/``error`` groups, the leaderboard's average rows): a fixed-dose
    task (``pqb_error3_*``), the authors' variant, a release import or a user's task is another view of a
    domain already averaged, and averaging it in would count that domain twice under another name."""
    return cfg.task == f"pqb_{cfg.pair_type}_{cfg.dataset_name}"


def _group(members: list[str], paired: Mapping[str, PairedTask], saturated: Sequence[int] = ()) -> dict[str, Any]:
    """Equal-weight mean over tasks of one pair type, replicate by replicate (tasks are independent)."""
    keys = [k for k in paired[members[0]].diff if all(k in paired[t].diff for t in members)]
    mean = {
        f: {k: float(np.mean([getattr(paired[t], f)[k] for t in members])) for k in keys}
        for f in ("a", "b", "diff")
    }
    stack = {
        f: {k: np.mean(np.stack([getattr(paired[t], f)[k] for t in members]), axis=0) for k in keys}
        for f in ("reps", "perm")
    }
    higher = paired[members[0]].cfg.higher_is_better()
    return {"tasks": members, "metrics": _metric_rows(mean["a"], mean["b"], mean["diff"], stack["reps"],
                                                      stack["perm"], higher, saturated)}  # fmt: skip


def _recorded_unit(res_a: Mapping[str, Any], res_b: Mapping[str, Any], task: str) -> str:
    ua = res_a["results"][task].get("bootstrap_unit")
    ub = res_b["results"][task].get("bootstrap_unit")
    return ua if ua is not None and ua == ub else DEFAULT_UNIT


def _system(res: Mapping[str, Any]) -> dict[str, Any]:
    config = res.get("config") or {}
    return {"model": config.get("model"), "model_info": config.get("model_info")}


def compare_markdown(report: Mapping[str, Any], metrics: Sequence[str] | None = None) -> str:
    """One table per task and group: A, B, A − B with its 95% CI and p (×100 except p)."""
    a, b = report["a"]["model"], report["b"]["model"]
    lines = [f"## {a} (A) vs {b} (B)", "", f"A − B in % (flip@K_ratio as a ratio), 95% clustered paired bootstrap CI; p: two-sided paired "
             f"randomization test ({report['settings']['n_perm']} permutations); * = p < {ALPHA} and the CI "
             "excludes 0 (both readings agree); `test only` / `CI only` = one of them, not starred; ˢ = a cut-off "
             "where A or B is saturated, never starred (footnote).", ""]  # fmt: skip
    any_saturated = False
    sections = [*((f"task {t}", e) for t, e in report["tasks"].items()),
                *((f"group {g} (mean over {len(e['tasks'])} domains)", e) for g, e in report["groups"].items())]  # fmt: skip
    for title, entry in sections:
        unit = f", unit {entry['unit']} ({entry['n_units']} units)" if "unit" in entry else ""
        lines += [
            f"### {title}{unit}",
            "",
            "| metric | A | B | A − B [95% CI] | p |",
            "|---|---:|---:|---:|---:|",
        ]
        for k, row in entry["metrics"].items():
            if metrics and k not in metrics:
                continue
            star = _mark(row)
            any_saturated |= bool(row.get("saturated"))
            ci = row["diff_ci"]
            scale = 1 if is_ratio(k) else 100  # a ratio (1.0 = independent sides) is not a percentage
            ci_text = (
                f" [{scale * ci[0]:.2f}, {scale * ci[1]:.2f}]" if ci[0] is not None and np.isfinite(ci[0]) else ""
            )
            lines.append(f"| {k} | {_pct(row['a'], scale)} | {_pct(row['b'], scale)} | {_pct(row['diff'], scale)}"
                         f"{ci_text} | {row['p_value']:.4f}{star} |")  # fmt: skip
        if sat := entry.get("saturated_at"):
            lines.append(f"saturated at K: A {_ks(sat['a'])}, B {_ks(sat['b'])}")
        lines.append("")
    if any_saturated:
        lines.append(
            f"ˢ saturated: {SATURATION_REASON}. There a Flip@K or Deg@K (of A or B) cannot show robustness, so "
            "the difference is not a robustness difference and is never starred, whatever p and the CI say."
        )
    return "\n".join(lines)


def _mark(row: Mapping[str, Any]) -> str:
    """The last column's mark: ``*`` where test and CI agree, which one holds where they do not, ``ˢ``."""
    mark = " ˢ" if row.get("saturated") else " *" if row["significant"] else ""
    evidence = row.get("evidence")
    return mark + (f" ({evidence})" if evidence in ("test only", "CI only") else "")


def _ks(values: Sequence[int]) -> str:
    return ",".join(map(str, values)) or "none"


def _pct(v: float | None, scale: int = 100) -> str:
    return "–" if v is None or not np.isfinite(v) else f"{scale * v:.2f}"
