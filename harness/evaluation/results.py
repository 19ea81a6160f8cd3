"""The results file: build, write, load and validate (lm-eval ``EvalResults`` shape).

``<output_path>/<model_sanitized>/results_<timestamp>.json`` holds one run; ``harness/evaluation/results_schema.json``
is its JSON Schema and ``docs/results.md`` documents every key. NaN (an empty pair set) is written
as ``null`` so the file is strict JSON. :func:`load_results` is what the leaderboard reads.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from pqb.dataset import settings
from pqb.dataset.io import atomic_write_json, atomic_write_text
from pqb.harness.errors import ResultsSchemaError
from pqb.harness.evaluation.bootstrap import percentile_ci
from pqb.harness.evaluation.evaluator import EvaluationOutput, TaskOutcome
from pqb.harness.task_registry import TaskRegistry

SCHEMA_VERSION = "1.1"
"""1.1: groups never mix pair types; CIs for every metric; bootstrap unit; ranks; ceiling-aware Flip."""
RESULTS_GLOB = "results_*.json"
CHECKPOINT_GLOB = "checkpoint_*.json"
"""A run's finished tasks so far (plus their bootstrap replicates), rewritten after each task and
deleted once ``results_<timestamp>.json`` is written; a killed run leaves it for the resume."""
COUNT_KEYS = (
    "n_pairs",
    "n_queries",
    "ties_touch_target",
    "n_targets_missing",
    "n_malformed",
    "n_pairs_gated",
    "n_bootstrap_units",
    "n_queries_missing_from_run",
)
REWRITE_METRICS = ("rewrite_corrected", "rewrite_clean_kept")
"""A defense's own rates on error tasks (``pqb.harness.evaluation.evaluator.rewrite_values``)."""


def sanitize_model_name(name: str) -> str:
    """``BAAI/bge-m3`` -> ``BAAI__bge-m3`` (lm-eval's folder naming)."""
    return re.sub(r"[^A-Za-z0-9._=-]+", "__", name).strip("_") or "model"


def timestamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H-%M-%S.%f")


def git_hash() -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(settings.REPO_ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=5, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def clean_json(value: Any) -> Any:
    """NaN/inf -> None, numpy scalars -> Python, recursively (strict JSON)."""
    if isinstance(value, Mapping):
        return {str(k): clean_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_json(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# -- building ---------------------------------------------------------------------------------------------


def task_entry(o: TaskOutcome) -> dict[str, Any]:
    """One task's scores: every metric with its clustered-bootstrap CI, the counts and the unit."""
    entry: dict[str, Any] = {"alias": o.cfg.task}
    names = [*o.cfg.metric_names(), *(m for m in REWRITE_METRICS if m in o.metrics)]
    entry.update({m: o.metrics.get(m) for m in names})
    entry.update({f"{m}_ci": list(o.ci.get(m, (None, None))) for m in names})
    entry.update(o.counts)
    entry["bootstrap_unit"] = o.unit
    return entry


def _mean_entry(name: str, members: list[str], results: dict, reps: dict[str, dict[str, np.ndarray]]) -> dict:
    """Equal-weight mean over ``members`` (tasks of one pair type); CIs from their averaged replicates."""
    entry: dict[str, Any] = {"alias": name}
    metric_keys = sorted(
        {
            k
            for m in members
            for k, v in results[m].items()
            if k not in {"alias", *COUNT_KEYS} and not k.endswith("_ci") and not isinstance(v, str)
        }
    )
    for key in metric_keys:
        vals = [results[m][key] for m in members if key in results[m]]
        vals = [v for v in vals if v is not None]
        entry[key] = float(np.mean(vals)) if vals else None
        have = [reps.get(m, {}).get(key) for m in members if key in results[m]]
        if any(f"{key}_ci" in results[m] for m in members):
            ok = all(h is not None and h.size for h in have)
            entry[f"{key}_ci"] = (
                list(percentile_ci(np.mean(np.stack(have), axis=0))) if ok and have else [None, None]
            )
    for key in COUNT_KEYS:
        if any(key in results[m] for m in members):
            entry[key] = int(sum(results[m].get(key, 0) for m in members))
    units = {results[m].get("bootstrap_unit") for m in members}
    if len(units) == 1 and None not in units:
        entry["bootstrap_unit"] = units.pop()
    return entry


def group_entry(name: str, members: list[str], results: dict, reps: dict[str, dict[str, np.ndarray]],
                pair_types: Mapping[str, str]) -> dict:  # fmt: skip
    """A group's scores. Tasks of one pair type: their equal-weight mean (``pair_type`` says which).

    A group whose members are of both pair types (``pqb``) is never averaged across them — Flip@K of
    syntactic pairs and of error pairs measure different things — but reports each pair type's mean
    side by side under ``by_pair_type``.
    """
    by_type: dict[str, list[str]] = {}
    for m in members:
        by_type.setdefault(pair_types[m], []).append(m)
    if len(by_type) == 1:
        ((pair_type, tasks),) = by_type.items()
        return {**_mean_entry(name, tasks, results, reps), "pair_type": pair_type}
    return {
        "alias": name,
        "pair_type": "mixed",
        "by_pair_type": {
            pt: {**_mean_entry(f"{name}/{pt}", tasks, results, reps), "pair_type": pt}
            for pt, tasks in sorted(by_type.items())
        },
    }


def build_results(
    output: EvaluationOutput,
    *,
    registry: TaskRegistry,
    groups: Iterable[str],
    config: dict[str, Any],
    started: float,
    finished: float,
    resume: Mapping[str, Any] | None = None,
    reused: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Assemble the results dict.

    ``resume`` is ``{task: resume key}`` of the tasks computed now; ``reused`` maps each reused task
    to the earlier file it is copied from (``PreviousRun.as_source()``: content plus ``_path`` and,
    for checkpoints, ``_replicates``, so group CIs come out as in an uninterrupted run).
    """
    from pqb import harness

    reused = reused or {}
    res: dict[str, Any] = {k: {} for k in ("results", "groups", "group_subtasks", "configs", "versions",
                                            "higher_is_better", "n-samples", "breakdowns", "skipped",
                                            "task_hashes", "dataset", "resume", "ranks")}  # fmt: skip
    for name, previous in reused.items():
        _copy_task(res, previous, name)
    for name, o in sorted(output.outcomes.items()):
        _add_task(res, name, o)
    res["resume"].update({k: v for k, v in (resume or {}).items() if k in output.outcomes})
    res["skipped"] = {k: v for k, v in sorted(output.skipped.items()) if k not in res["results"]}
    reps = {n: prev.get("_replicates", {}).get(n, {}) for n, prev in reused.items()}
    reps.update({n: o.replicates for n, o in output.outcomes.items()})
    for g in groups:
        members = [t for t in registry.expand(g) if t in res["results"]]
        if members:
            res["group_subtasks"][g] = members
            types = {m: res["configs"][m]["pair_type"] for m in members}
            res["groups"][g] = group_entry(g, members, res["results"], reps, types)
            res["versions"][g] = registry.groups[g].metadata.get("version") if g in registry.groups else None
    res.update(
        schema_version=SCHEMA_VERSION,
        config={**config, "reused_tasks": sorted(reused)},
        git_hash=git_hash(),
        date=started,
        total_evaluation_time_seconds=round(finished - started, 3),
        pqb_version=harness.__version__,
    )
    return clean_json(res)


def ranks_entry(query_ids: list[str], ranks: np.ndarray) -> dict[str, list]:
    """``{"query_id": [...], "rank": [int | null]}``: what ``compare`` pairs two systems on (null = unranked)."""
    return {
        "query_id": list(query_ids),
        "rank": [int(r) if np.isfinite(r) else None for r in np.asarray(ranks, dtype=np.float64)],
    }


def stored_ranks(results: Mapping[str, Any], task: str) -> dict[str, float]:
    """``{query id: rank}`` of one task from a results file (``inf`` = unranked); ``{}`` if not stored."""
    entry = (results.get("ranks") or {}).get(task) or {}
    return {
        q: (float("inf") if r is None else float(r))
        for q, r in zip(entry.get("query_id", []), entry.get("rank", []), strict=True)
    }


def _add_task(res: dict, name: str, o: TaskOutcome) -> None:
    res["results"][name] = task_entry(o)
    res["configs"][name] = o.cfg.to_dict()
    res["versions"][name] = o.cfg.version
    res["higher_is_better"][name] = o.cfg.higher_is_better()
    effective = o.counts.get("n_pairs_gated", o.counts["n_pairs"])
    res["n-samples"][name] = {"original": o.counts["n_pairs"], "effective": effective}
    res["task_hashes"][name] = o.cfg.hash()
    res["dataset"][name] = o.dataset
    if o.ranks is not None:
        res["ranks"][name] = ranks_entry(o.query_ids, o.ranks)
    if o.breakdown is not None:
        res["breakdowns"][name] = o.breakdown


TASK_SECTIONS = ("results", "configs", "versions", "higher_is_better", "n-samples", "breakdowns",
                 "task_hashes", "dataset", "resume", "ranks")  # fmt: skip
"""Top-level keys that hold one entry per task (what a reused task is copied with)."""


def _copy_task(res: dict, previous: Mapping[str, Any], name: str) -> None:
    for key in TASK_SECTIONS:
        if name in previous.get(key, {}):
            res[key][name] = previous[key][name]
    res["results"][name] = {**res["results"][name], "reused_from": str(previous.get("_path", ""))}


# -- writing ----------------------------------------------------------------------------------------------


def write_results(results: dict[str, Any], output_path: Path, model: str, outcomes: Mapping[str, TaskOutcome] = {},
                  log_samples: bool = False, stamp: str | None = None) -> tuple[Path, list[Path]]:  # fmt: skip
    """Write the results JSON (and samples JSONL + TREC runs when asked); returns (results file, others)."""
    folder = Path(output_path) / sanitize_model_name(model)
    stamp = stamp or timestamp()
    path = folder / f"results_{stamp}.json"
    validate_results(results)
    atomic_write_json(path, results)
    path.chmod(0o644)  # mkstemp creates 0600; results are meant to be shared
    extra: list[Path] = []
    if log_samples:
        for name, o in sorted(outcomes.items()):
            p = folder / f"samples_{name}_{stamp}.jsonl"
            atomic_write_text(
                p,
                "".join(
                    json.dumps(clean_json(s), ensure_ascii=False, sort_keys=True) + "\n" for s in o.samples
                ),
            )
            t = folder / f"run_{name}_{stamp}.trec"
            atomic_write_text(t, "\n".join(o.trec) + ("\n" if o.trec else ""))
            q = folder / f"qrels_{name}_{stamp}.txt"
            atomic_write_text(q, "\n".join(o.qrels) + ("\n" if o.qrels else ""))
            extra += [p, t, q]
    return path, extra


def checkpoint_path(output_path: Path, model: str, stamp: str) -> Path:
    return Path(output_path) / sanitize_model_name(model) / f"checkpoint_{stamp}.json"


def write_checkpoint(
    path: Path, results: dict[str, Any], replicates: Mapping[str, Mapping[str, np.ndarray]]
) -> None:
    """Atomically (re)write a run's checkpoint: the results so far plus each task's bootstrap replicates."""
    validate_results(results)
    reps = {
        t: {m: np.asarray(v, dtype=np.float64).tolist() for m, v in r.items()} for t, r in replicates.items()
    }
    atomic_write_json(path, {**results, "replicates": reps}, indent=None)


def load_checkpoint(path: Path) -> tuple[dict[str, Any], dict[str, dict[str, np.ndarray]]]:
    """(results part, replicates) of a checkpoint; a damaged one raises :class:`ResultsSchemaError`."""
    try:
        obj = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ResultsSchemaError(f"{path} is not JSON: {exc}; delete it to resume without it") from exc
    reps = obj.pop("replicates", {}) if isinstance(obj, dict) else {}
    validate_results(obj)
    return obj, {t: {m: np.asarray(v, dtype=np.float64) for m, v in r.items()} for t, r in reps.items()}


# -- loading ----------------------------------------------------------------------------------------------


def results_schema() -> dict[str, Any]:
    return json.loads(
        resources.files("pqb.harness.evaluation").joinpath("results_schema.json").read_text(encoding="utf-8")
    )


def validate_results(obj: Mapping[str, Any]) -> None:
    """Raise :class:`ResultsSchemaError` naming the first offending key path if ``obj`` breaks the schema."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(results_schema())
    errors = sorted(validator.iter_errors(obj), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = "/".join(str(p) for p in e.absolute_path) or "<root>"
        raise ResultsSchemaError(
            f"results file does not match the schema at {where}: {e.message} ({len(errors)} error(s))"
        )


def load_results(path: str | Path) -> dict[str, Any]:
    """Read and validate one results file (raises :class:`ResultsSchemaError` if it is not one)."""
    path = Path(path)
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ResultsSchemaError(f"{path} is not JSON: {exc}") from exc
    validate_results(obj)
    return obj


# -- summary -----------------------------------------------------------------------------------------------

SUMMARY_COLUMNS = ("flip@10", "flip@10_ratio", "rrstd", "deg@10", "mrr_deg", "hit@10", "mrr", "hit@10_clean",
                   "hit@10_error", "rewrite_corrected")  # fmt: skip


def flat_groups(groups: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Group scores one pair type each: a mixed group (``pqb``) becomes ``pqb/syntactic`` and ``pqb/error``."""
    out: dict[str, Mapping[str, Any]] = {}
    for name, entry in groups.items():
        for pt, sub in (entry.get("by_pair_type") or {}).items():
            out[f"{name}/{pt}"] = sub
        if "by_pair_type" not in entry:
            out[name] = entry
    return out


def _fmt(entry: Mapping[str, Any], key: str) -> str:
    v = entry.get(key)
    if v is None:
        return "—" if key in entry else ""
    text = f"{100 * v:.2f}"
    ci = entry.get(f"{key}_ci")
    if ci and ci[0] is not None:
        text += f" [{100 * ci[0]:.2f}, {100 * ci[1]:.2f}]"
    return text


def summary_table(results: Mapping[str, Any]) -> str:
    """Markdown table: rows = tasks then groups, columns = main metrics ×100 with 95% CIs."""
    sections = {"results": results["results"], "groups": flat_groups(results["groups"])}
    cols = [c for c in SUMMARY_COLUMNS if any(c in e for sec in sections.values() for e in sec.values())]
    lines = ["| task | n pairs | " + " | ".join(cols) + " |", "|---|---:|" + "---:|" * len(cols)]
    for sec, entries in sections.items():
        for name, e in sorted(entries.items()):
            label = f"**{name}**" if sec == "groups" else name
            lines.append(
                f"| {label} | {e.get('n_pairs', '')} | " + " | ".join(_fmt(e, c) for c in cols) + " |"
            )
    for name, why in sorted(results.get("skipped", {}).items()):
        lines.append(f"| {name} | skipped: {why.split(';')[0]} |" + " |" * len(cols))
    return "\n".join(lines)
