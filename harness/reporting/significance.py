"""``leaderboard --compare``: which differences from the best system in each column are significant.

For every robustness table (pair type × domain view, and the domain average) and every column, the
best system (lowest value) is compared with each other system by :func:`pqb.harness.evaluation.compare.compare_results`
on the tasks of that view, using the newest run of each (system, task) — the runs the table shows.
A difference is significant when the paired randomization test gives p < 0.05 and the bootstrap CI of the
difference excludes 0, at a cut-off where neither system is saturated (``compare``'s rule); the tables mark such
cells with ``†`` and ``significance.{md,csv}`` list every comparison with its CI and p-value.
Runs without stored ranks (results files older than schema 1.1) are left out, with a note.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from pqb.harness.errors import PQBHarnessError
from pqb.harness.evaluation.pairtypes import PAIR_TYPES
from pqb.harness.reporting.collect import Run, select_newest, task_identity
from pqb.harness.reporting.tables import AVERAGE, domains_of, robustness_columns, wide_table

logger = logging.getLogger(__name__)

SIGNIFICANCE_COLUMNS = ("pair_type", "domain", "metric", "best", "model", "diff", "ci_low", "ci_high", "p_value",
                        "significant")  # fmt: skip


def _merged(picks: Mapping[str, Run]) -> dict[str, Any]:
    """One results-shaped dict holding the selected run's sections of each task (for ``compare``)."""
    out: dict[str, Any] = {k: {} for k in ("results", "ranks", "dataset", "configs")}
    for task, run in picks.items():
        for key in out:
            if task in (run.data.get(key) or {}):
                out[key][task] = run.data[key][task]
    first = next(iter(picks.values()))
    out["config"] = first.config
    return out


def _view_tasks(
    chosen: Mapping[tuple[str, str], Run], model: str, pair_type: str, domain: str
) -> dict[str, Run]:
    picks = {}
    for (m, task), run in chosen.items():
        pt, dom, canonical = task_identity(run, task)
        if m == model and pt == pair_type and ((domain == AVERAGE and canonical) or dom == domain):
            picks[task] = run
    return picks


def significance_frame(runs: Sequence[Run], tidy: pd.DataFrame, *, n_boot: int = 1000, n_perm: int = 1000,
                       seed: int = 0) -> pd.DataFrame:  # fmt: skip
    """Every (view, column, other system) comparison against the column's best system."""
    from pqb.harness.evaluation.compare import compare_results

    chosen = select_newest(runs)
    cache: dict[tuple, dict[str, Any] | None] = {}
    rows = []
    for pair_type in PAIR_TYPES:
        for domain in [AVERAGE, *domains_of(tidy)]:
            metrics = robustness_columns(tidy, pair_type, domain)
            table = wide_table(tidy, pair_type, metrics, domain)
            for metric in metrics:
                col = (
                    pd.to_numeric(table.get(metric), errors="coerce").dropna()
                    if metric in table
                    else pd.Series()
                )
                if len(col) < 2:
                    continue
                best = str(col.idxmin())
                for model in (str(m) for m in col.index if str(m) != best):
                    a, b = (
                        _view_tasks(chosen, best, pair_type, domain),
                        _view_tasks(chosen, model, pair_type, domain),
                    )
                    if domain == AVERAGE and set(a) != set(b):  # the two averages are over other domains
                        logger.warning("--compare: %s/%s: %s and %s averaged different domains; not tested",
                                       pair_type, metric, best, model)  # fmt: skip
                        continue
                    tasks = tuple(sorted(set(a) & set(b)))
                    key = (best, model, tasks)
                    if key not in cache:
                        cache[key] = _compare(compare_results, a, b, tasks, n_boot, n_perm, seed)
                    report = cache[key]
                    if report is None:
                        continue
                    entry = (
                        report["groups"].get(pair_type)
                        if domain == AVERAGE
                        else report["tasks"].get(tasks[0])
                    )
                    row = (entry or {}).get("metrics", {}).get(metric)
                    if row is None:
                        continue
                    # b (the other system) minus the best, so a positive value is how much worse it is
                    rows.append({"pair_type": pair_type, "domain": domain, "metric": metric, "best": best,
                                 "model": model, "diff": -row["diff"], "ci_low": -row["diff_ci"][1],
                                 "ci_high": -row["diff_ci"][0], "p_value": row["p_value"],
                                 "significant": row["significant"]})  # fmt: skip
    return pd.DataFrame(rows, columns=list(SIGNIFICANCE_COLUMNS))


def _compare(fn: Any, a: Mapping[str, Run], b: Mapping[str, Run], tasks: tuple[str, ...], n_boot: int,
             n_perm: int, seed: int) -> dict[str, Any] | None:  # fmt: skip
    if not tasks:
        return None
    ra, rb = _merged({t: a[t] for t in tasks}), _merged({t: b[t] for t in tasks})
    if not all(t in ra["ranks"] and t in rb["ranks"] for t in tasks):
        logger.warning("--compare: %s has no stored ranks (older results file); not tested", ", ".join(tasks))
        return None
    try:
        return fn(ra, rb, tasks=list(tasks), n_boot=n_boot, n_perm=n_perm, seed=seed)
    except PQBHarnessError as exc:
        logger.warning("--compare: %s not tested: %s", ", ".join(tasks), exc)
        return None


def significant_cells(frame: pd.DataFrame) -> set[tuple[str, str, str, str]]:
    """``{(pair_type, domain, model, metric)}`` whose difference from the column's best is significant."""
    sel = frame[frame["significant"].astype(bool)] if not frame.empty else frame
    return {(r.pair_type, r.domain, r.model, r.metric) for r in sel.itertuples()}


def significance_markdown(frame: pd.DataFrame, n_perm: int) -> str:
    """The comparisons as one markdown table (×100 except p)."""
    lines = [
        "## Differences from the best system per column",
        "",
        f"Other − best in %, 95% clustered paired bootstrap CI; p: two-sided paired randomization test "
        f"({n_perm} permutations); † = p < 0.05 and the CI excludes 0, at a K where neither system is saturated "
        "(marked in the robustness tables).",
        "",
        "| Pair type | Domain | Metric | Best | Model | Δ (%) [95% CI] | p |",
        "|---|---|---|---|---|---:|---:|",
    ]
    for r in frame.itertuples():
        mark = " †" if r.significant else ""
        lines.append(f"| {r.pair_type} | {r.domain} | {r.metric} | {r.best} | {r.model} | {100 * r.diff:.2f} "
                     f"[{100 * r.ci_low:.2f}, {100 * r.ci_high:.2f}] | {r.p_value:.4f}{mark} |")  # fmt: skip
    if frame.empty:
        lines.append("| – | – | – | – | – | – | – |")
    return "\n".join(lines) + "\n"
