"""The results file: build, write, load and validate (lm-eval ``EvalResults`` shape).

``<output_path>/<model_sanitized>/results_<timestamp>.json`` holds one run and nothing else sits in
that folder: per-query samples, TREC runs, qrels and checkpoints go to
``<output_path>/details/<model_sanitized>/``, so readers of lm-eval results folders (which skip any
folder holding a non-JSON file and read every JSON file they find) read each model folder.
``harness/evaluation/results_schema.json`` is its JSON Schema and ``docs/results.md`` documents every key. Per-task
entries are flat numbers (each CI as ``<metric>_ci_lower`` / ``<metric>_ci_upper``), ``config`` carries
lm-eval's ``model_name``, ``model_name_sanitized``, ``model_sha``, ``model_revision``, ``model_dtype``
and ``model_args`` as a ``k=v,...`` string. NaN (an empty pair set) is written as ``null`` so the file
is strict JSON. :func:`load_results` is what the leaderboard reads.
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
from pqb.dataset.io import atomic_write_bytes, atomic_write_json, atomic_write_text
from pqb.dataset.rules import SATURATION_HIT, SATURATION_MIN_PAIRS, at_ceiling, at_floor
from pqb.harness.errors import ResultsSchemaError
from pqb.harness.evaluation.bootstrap import percentile_ci
from pqb.harness.evaluation.evaluator import EvaluationOutput, TaskOutcome
from pqb.harness.evaluation.integrity import CI_SUFFIXES, is_ratio, seal, verify
from pqb.harness.evaluation.task_registry import TaskRegistry

SCHEMA_VERSION = "1.5"
"""1.1: groups never mix pair types; CIs for every metric; bootstrap unit; ranks; ceiling-aware Flip.
1.2: flat CI numbers (``<m>_ci_lower``/``<m>_ci_upper``), lm-eval model fields, details out of the model folder.
1.3: error breakdowns by position in the word (``breakdowns/<task>/position``).
1.4: lm-eval's shape: ``results`` holds metrics and ``<m>_stderr,`` only, groups too; CIs in
``confidence_intervals``, counts and other non-metric keys in ``task_info``; saturation.
1.5: ``content_digest`` (:mod:`pqb.harness.evaluation.integrity`): readers check it."""
DETAILS_DIR = "details"
"""``<output_path>/details/<model_sanitized>/``: samples, runs, qrels and checkpoints of each run."""
RESULTS_GLOB = "results_*.json"
CHECKPOINT_GLOB = "checkpoint_*.json.partial"
"""A run's finished tasks so far (plus their bootstrap replicates), rewritten after each task and
deleted once ``results_<timestamp>.json`` is written; a killed run leaves it for the resume. Not named
``*.json``: results readers (lm-eval's, the Demo Leaderboard's, which reads every JSON file of a folder
holding only JSON files) never take it for a results file. :func:`checkpoint_path` is its one home."""
STDERR_SUFFIX = "_stderr"
"""A metric's bootstrap standard error in the flat view (:func:`flat_results`): ``<m>_stderr``."""
LM_EVAL_STDERR = "_stderr,"
"""The same in the file: lm-eval's ``make_table`` reads the standard error of metric key ``m,f`` at
``m_stderr,f``; our metric keys have no filter (``f`` = ""), so ``flip@10``'s is ``flip@10_stderr,``."""
CI_SECTION = "confidence_intervals"
INFO_SECTION = "task_info"
COUNT_KEYS = (
    "n_pairs",
    "n_queries",
    "ties_touch_target",
    "n_targets_missing",
    "n_malformed",
    "n_pairs_gated",
    "n_bootstrap_units",
    "n_queries_missing_from_run",
    "n_run_docs_not_in_corpus",
    "n_queries_shallower_than_k",
    "n_queries_ranks_against_scores",
    "n_short_chain",
)
REWRITE_METRICS = ("rewrite_corrected", "rewrite_clean_kept")
"""A defense's own rates on error tasks (``pqb.harness.evaluation.evaluator.rewrite_values``)."""


def sanitize_model_name(name: str) -> str:
    """``BAAI/bge-m3`` -> ``BAAI__bge-m3`` (lm-eval's folder naming).

    Dots that could climb out of ``--output_path`` (a run tag ``..``) and leading dots are replaced
    too, so every system name, whatever its source, is one folder below the output path."""
    out = re.sub(r"[^A-Za-z0-9._=-]+", "__", name).strip("_")
    out = re.sub(r"\.{2,}", "__", out).lstrip(".")
    return out or "model"


def check_system_name(name: str) -> None:
    """Raise :class:`~pqb.harness.errors.UsageError` when a system's folder name (:func:`sanitize_model_name`)
    is longer than :data:`~pqb.dataset.io.MAX_NAME_LENGTH`: a run file's tag names the system, and a
    301-character one ran to the end, then could not write its results (``ENAMETOOLONG``)."""
    from pqb.dataset.io import MAX_NAME_LENGTH
    from pqb.harness.errors import UsageError

    if len(folder := sanitize_model_name(name)) > MAX_NAME_LENGTH:
        raise UsageError(
            f"the system name {name[:40]!r}... ({len(folder)} characters as a folder name) is too long: at most "
            f"{MAX_NAME_LENGTH}; name it with --name"
        )


def names_a_file(output_path: Path) -> bool:
    """lm-eval's habit: an ``--output_path`` ending in ``.json`` is the results file itself, not a folder."""
    return Path(output_path).suffix.lower() == ".json"


def model_folder(output_path: Path, model: str) -> Path:
    """Where a model's results files live: ``<output_path>/<model_sanitized>/`` (results JSON only), or
    the folder of ``<output_path>`` when it names the file."""
    if names_a_file(output_path):
        return Path(output_path).parent
    return Path(output_path) / sanitize_model_name(model)


def results_file(output_path: Path, model: str, stamp: str) -> Path:
    """The results file a run writes: ``<model folder>/results_<stamp>.json``, or ``<output_path>`` itself."""
    if names_a_file(output_path):
        return Path(output_path)
    return model_folder(output_path, model) / f"results_{stamp}.json"


def details_folder(output_path: Path, model: str) -> Path:
    """Where a model's samples, TREC runs, qrels and checkpoints live, out of its results folder (beside
    the file when ``--output_path`` names one)."""
    root = Path(output_path).parent if names_a_file(output_path) else Path(output_path)
    return root / DETAILS_DIR / sanitize_model_name(model)


def ci_of(entry: Mapping[str, Any], metric: str) -> tuple[float | None, float | None] | None:
    """A metric's CI from a scores entry as ``(lower, upper)``; ``None`` when the entry has none."""
    lo, hi = (f"{metric}{s}" for s in CI_SUFFIXES)
    if lo not in entry and hi not in entry:
        return None
    return entry.get(lo), entry.get(hi)


def with_ci(metric: str, ci: Iterable[float | None]) -> dict[str, float | None]:
    """``{<m>_ci_lower: lo, <m>_ci_upper: hi}``: the flat form a per-task entry stores a CI in."""
    lo, hi = ci
    return {f"{metric}_ci_lower": lo, f"{metric}_ci_upper": hi}


def is_ci_key(key: str) -> bool:
    """A CI bound or standard error: what travels with a metric, never a metric itself."""
    return key.endswith((*CI_SUFFIXES, STDERR_SUFFIX))


def bootstrap_stderr(replicates: np.ndarray | None) -> float | None:
    """The bootstrap standard error: the std (ddof=1) of the finite replicates; ``None`` without two."""
    if replicates is None:
        return None
    r = np.asarray(replicates, dtype=np.float64)
    r = r[np.isfinite(r)]
    return float(np.std(r, ddof=1)) if r.size >= 2 else None


def lm_eval_model_fields(
    model: str, model_args: Mapping[str, Any], info: Mapping[str, Any]
) -> dict[str, Any]:
    """lm-eval's model identity fields for ``config`` (the Hugging Face leaderboard readers use them).

    ``model_name`` is the name run (a registered model or preset: ``bm25``, ``minilm``, ``gte-base``),
    ``model_sha`` the weights' resolved Hub commit, else their sha256, else ``""`` (lexical models have
    no weights); ``model_revision`` the revision asked for (``main`` when none); ``model_dtype`` the
    dtype scores were computed in (``torch.float32``...; ``none`` for models without weights);
    ``model_args`` lm-eval's ``k=v,k=v`` string of the arguments given.
    """
    weights = info.get("weights") if isinstance(info.get("weights"), Mapping) else {}
    dtypes = [info["dtype"]] if info.get("dtype") else []
    if not dtypes and isinstance(info.get("components"), list):  # a hybrid: its components' dtypes
        dtypes = sorted({str(c["dtype"]) for c in info["components"] if isinstance(c, Mapping) and c.get("dtype")})
    return {
        "model_name": model,
        "model_name_sanitized": sanitize_model_name(model),
        "model_sha": str(weights.get("commit") or weights.get("sha256") or ""),
        "model_revision": str(weights.get("revision") or "main"),
        "model_dtype": "+".join(f"torch.{d}" for d in dtypes) or "none",
        "model_args": ",".join(f"{k}={v}" for k, v in model_args.items()),
    }


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
    for m in names:
        entry.update(with_ci(m, o.ci.get(m, (None, None))))
        entry[f"{m}{STDERR_SUFFIX}"] = bootstrap_stderr(o.replicates.get(m)) if m in o.ci else None
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
            if k not in {"alias", *INFO_KEYS} and not is_ci_key(k) and isinstance(v, int | float | None)
        }
    )
    for key in metric_keys:
        # A member's undefined metric (NaN when computed now, null when reused from a file) leaves the
        # mean undefined, as its all-NaN replicates leave the CI: dropping it would average fewer
        # domains than the group names, and only in a resumed run (``--overwrite only-missing``).
        vals = [np.nan if results[m][key] is None else results[m][key] for m in members if key in results[m]]
        entry[key] = float(np.mean(vals)) if vals else None
        have = [reps.get(m, {}).get(key) for m in members if key in results[m]]
        if any(ci_of(results[m], key) is not None for m in members):
            ok = all(h is not None and h.size for h in have)
            mean_reps = np.mean(np.stack(have), axis=0) if ok and have else None
            entry.update(with_ci(key, percentile_ci(mean_reps) if mean_reps is not None else (None, None)))
            entry[f"{key}{STDERR_SUFFIX}"] = bootstrap_stderr(mean_reps)
    for key in COUNT_KEYS:
        if any(key in results[m] for m in members):
            entry[key] = int(sum(results[m].get(key, 0) for m in members))
    units = {results[m].get("bootstrap_unit") for m in members}
    if len(units) == 1 and None not in units:
        entry["bootstrap_unit"] = units.pop()
    return entry


def group_entries(name: str, members: list[str], results: dict, reps: dict[str, dict[str, np.ndarray]],
                  pair_types: Mapping[str, str]) -> dict[str, dict]:  # fmt: skip
    """A group's flat score entries, ``{group name: entry}``, each the equal-weight mean of tasks of one
    pair type (``pair_type`` says which).

    A group whose members are of both pair types (``pqb``) is never averaged across them — Flip@K of
    syntactic pairs and of error pairs measure different things — but gives one entry per pair type,
    ``<group>/syntactic`` and ``<group>/error``, side by side (flat, as lm-eval's tools read groups).
    """
    by_type: dict[str, list[str]] = {}
    for m in members:
        by_type.setdefault(pair_types[m], []).append(m)
    if len(by_type) == 1:
        ((pair_type, tasks),) = by_type.items()
        return {name: {**_mean_entry(name, tasks, results, reps), "pair_type": pair_type}}
    return {
        f"{name}/{pt}": {**_mean_entry(f"{name}/{pt}", tasks, results, reps), "pair_type": pt}
        for pt, tasks in sorted(by_type.items())
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
    from pqb.dataset import __version__

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
    for name, entry in res["results"].items():
        entry.update(saturation(entry, res["configs"][name]["pair_type"]))
    reps = {n: prev.get("_replicates", {}).get(n, {}) for n, prev in reused.items()}
    reps.update({n: o.replicates for n, o in output.outcomes.items()})
    for g in groups:
        members = [t for t in registry.expand(g) if t in res["results"]]
        if members:
            types = {m: res["configs"][m]["pair_type"] for m in members}
            version = registry.groups[g].metadata.get("version") if g in registry.groups else None
            for name, entry in group_entries(g, members, res["results"], reps, types).items():
                res["groups"][name] = {**entry, **saturation(entry, entry["pair_type"])}
                res["group_subtasks"][name] = [m for m in members if types[m] == entry["pair_type"]]
                res["versions"][name] = version
                res["higher_is_better"][name] = {  # lm-eval states it for groups too (make_table's arrows)
                    k: v
                    for m in res["group_subtasks"][name]
                    for k, v in res["higher_is_better"].get(m, {}).items()
                }
    res.update(
        schema_version=SCHEMA_VERSION,
        model_name=config.get("model_name"),
        model_name_sanitized=config.get("model_name_sanitized"),
        model_source="pqb",
        config={**config, "reused_tasks": sorted(reused)},
        git_hash=git_hash(),
        date=started,
        total_evaluation_time_seconds=round(finished - started, 3),
        pqb_version=__version__,
    )
    return seal(clean_json(lm_eval_shape(res)))  # what run writes, and what the Python API returns


def saturation(entry: Mapping[str, Any], pair_type: str) -> dict[str, list[int]]:
    """``{"saturated_at": [K...], "too_few_pairs_at": [K...]}`` of a task (or group) entry.

    Saturated at K (the task cannot measure robustness there): both sides' Hit@K above
    :data:`~pqb.dataset.rules.SATURATION_HIT` (the ceiling) or below ``1 − SATURATION_HIT`` (the floor: a
    run that retrieves nothing, e.g. of another corpus, has Flip@K = Deg@K = 0 [0, 0] because nothing can
    flip or degrade, not because the system is robust), or — given at least
    :data:`~pqb.dataset.rules.SATURATION_MIN_PAIRS` pairs — the Flip@K expected when the two sides miss
    independently, 2p(1−p) (``flip@K_expected``; not a bound: sides whose misses never coincide flip
    more), below the width of the 95% CI of the K's robustness metric (Flip@K on syntactic tasks,
    Deg@K on error tasks). With fewer pairs that CI is wide because the sample is small (a 10-pair run
    read "saturated at K 5" at Hit@5 = 60%), so such a K is listed in ``too_few_pairs_at`` instead.
    :data:`SATURATION_REASON` says it in one line; the rules' numbers live in :mod:`pqb.dataset.rules`.

    A small corpus (the embedded 1,488-document slice) puts lexical retrievers at Hit@10 = 100% on both
    sides, where Flip@10 = 0 [0, 0] says "saturated", not "robust"; the mark says so wherever the
    number is shown. Syntactic tasks read Hit@K over all their queries (both sides of every pair).
    """
    from pqb.harness.evaluation.pairtypes import PAIR_TYPES

    out: dict[str, list[int]] = {"saturated_at": [], "too_few_pairs_at": []}
    kind = PAIR_TYPES.get(pair_type)
    if kind is None:
        return out
    ks = sorted(int(k[len("flip@") : -len("_expected")]) for k in entry
                if k.startswith("flip@") and k.endswith("_expected"))  # fmt: skip
    n = entry.get("n_pairs_gated", entry.get("n_pairs"))
    enough = n is None or n >= SATURATION_MIN_PAIRS
    for k in ks:
        hits = [entry.get(kind.side_name(f"hit@{k}", side)) for side in kind.sides] or [entry.get(f"hit@{k}")]
        main = f"{kind.robustness_prefix}@{k}"
        lo, hi = entry.get(f"{main}_ci_lower"), entry.get(f"{main}_ci_upper")
        expected = entry.get(f"flip@{k}_expected")
        narrow = None not in (lo, hi, expected) and expected < hi - lo
        if at_ceiling(hits) or at_floor(hits) or (narrow and enough):
            out["saturated_at"].append(k)
        elif narrow:
            out["too_few_pairs_at"].append(k)
    return out


def saturated_at(entry: Mapping[str, Any], pair_type: str) -> list[int]:
    """The cut-offs K at which a task (or group) cannot measure robustness (:func:`saturation`)."""
    return saturation(entry, pair_type)["saturated_at"]


SATURATION_REASON = (
    f"both sides' Hit@K > {100 * SATURATION_HIT:.0f}% (ceiling) or < {100 * (1 - SATURATION_HIT):.0f}% "
    "(floor: nothing retrieved, so nothing can flip or degrade), or the Flip@K expected from independent misses, "
    f"2p(1−p), is below the CI width (given at least {SATURATION_MIN_PAIRS} pairs)"
)
"""Why a K is in ``saturated_at``, as the footnotes of the summary and the leaderboard tables say it."""

TOO_FEW_PAIRS_REASON = (
    f"fewer than {SATURATION_MIN_PAIRS} pairs: the CI is wider than the expected flip because the sample is small, "
    "so whether the K is saturated cannot be told; evaluate more pairs (a larger --limit, or none)"
)
"""Why a K is in ``too_few_pairs_at``."""


INFO_KEYS = frozenset(
    {*COUNT_KEYS, "bootstrap_unit", "pair_type", "reused_from", "saturated_at", "too_few_pairs_at"}
)
"""Non-metric keys of a flat entry; the file keeps them in ``task_info``, out of lm-eval's metric rows."""


def _split_entry(flat: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, list], dict[str, Any]]:
    """A flat entry as (lm-eval scores: alias, metrics, ``<m>_stderr,``; CIs; non-metric info)."""
    scores: dict[str, Any] = {"alias": flat.get("alias")}
    ci: dict[str, list] = {}
    info: dict[str, Any] = {}
    for key, value in flat.items():
        if key == "alias":
            continue
        if key in INFO_KEYS:
            info[key] = value
        elif key.endswith(CI_SUFFIXES):
            metric, side = key[: -len("_ci_lower")], CI_SUFFIXES.index(key[-len("_ci_lower") :])
            ci.setdefault(metric, [None, None])[side] = value
        elif key.endswith(STDERR_SUFFIX):
            if value is not None and math.isfinite(value):  # make_table formats it as a number
                scores[key[: -len(STDERR_SUFFIX)] + LM_EVAL_STDERR] = value
        else:
            scores[key] = value
    return scores, ci, info


def lm_eval_shape(res: Mapping[str, Any]) -> dict[str, Any]:
    """The file's shape from the flat one :func:`build_results` computes in: ``results`` and ``groups``
    hold metrics and standard errors only (groups appear in ``results`` too, as lm-eval writes them, so
    its tools and the Demo Leaderboard see the domain averages); CIs go to ``confidence_intervals``,
    counts, units, pair types and saturation to ``task_info``. :func:`flat_results` is the inverse."""
    out = dict(res)
    shaped: dict[str, dict[str, dict]] = {"results": {}, "groups": {}}
    out[CI_SECTION], out[INFO_SECTION] = {}, {}
    for section in ("results", "groups"):
        for name, entry in res.get(section, {}).items():
            shaped[section][name], out[CI_SECTION][name], out[INFO_SECTION][name] = _split_entry(entry)
    out["results"] = {**shaped["results"], **shaped["groups"]}
    out["groups"] = shaped["groups"]
    return out


def flat_results(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The flat view every reader (leaderboard, compare, compare-paper, resume, tables) works on: each
    task's and group's metrics, ``<m>_stderr``, ``<m>_ci_lower``/``_ci_upper`` and counts in one
    mapping, and ``results`` holding tasks only. Files older than schema 1.4 are flat already."""
    if CI_SECTION not in obj and INFO_SECTION not in obj:
        return dict(obj)
    cis, infos = obj.get(CI_SECTION) or {}, obj.get(INFO_SECTION) or {}

    def flat(name: str, entry: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in entry.items():
            out[key[: -len(LM_EVAL_STDERR)] + STDERR_SUFFIX if key.endswith(LM_EVAL_STDERR) else key] = value
        for metric, bounds in (cis.get(name) or {}).items():
            out.update(with_ci(metric, bounds))
        out.update(infos.get(name) or {})
        return out

    groups = obj.get("groups") or {}
    view = dict(obj)
    view["results"] = {n: flat(n, e) for n, e in (obj.get("results") or {}).items() if n not in groups}
    view["groups"] = {n: flat(n, e) for n, e in groups.items()}
    return view


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
    original = o.counts["n_pairs"] + o.counts.get("n_short_chain", 0)  # a dosed task's rows too short for it
    res["n-samples"][name] = {"original": original, "effective": effective}
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
                  log_samples: bool = False, stamp: str | None = None,
                  reused_details: Mapping[str, Path] = {}) -> tuple[Path, list[Path]]:  # fmt: skip
    """Write the results JSON (and samples JSONL + TREC runs + qrels when asked, under
    :func:`details_folder`); returns (results file, others). ``reused_details`` maps each reused
    task to the file it was reused from, whose run's detail files are copied under this stamp, so a
    resumed run leaves the same files as an uninterrupted one."""
    stamp = stamp or timestamp()
    path = results_file(output_path, model, stamp)
    folder = details_folder(output_path, model)
    validate_results(results)
    atomic_write_json(path, seal(results))
    path.chmod(0o644)  # mkstemp creates 0600; results are meant to be shared
    extra: list[Path] = []
    if log_samples:
        for name, o in sorted(outcomes.items()):
            extra += write_task_details(folder, name, o, stamp)
        for name, source in sorted(reused_details.items()):
            extra += copy_task_details(folder, name, source, stamp)
    return path, extra


def task_detail_paths(folder: Path, task: str, stamp: str) -> tuple[Path, Path, Path]:
    """The samples JSONL, TREC run and qrels of one task of the run stamped ``stamp``."""
    return (folder / f"samples_{task}_{stamp}.jsonl", folder / f"run_{task}_{stamp}.trec",
            folder / f"qrels_{task}_{stamp}.txt")  # fmt: skip


def write_task_details(folder: Path, task: str, o: TaskOutcome, stamp: str) -> list[Path]:
    """Write one task's samples, run and qrels (also at each checkpoint, so a killed run keeps them)."""
    p, t, q = task_detail_paths(folder, task, stamp)
    atomic_write_text(
        p, "".join(json.dumps(clean_json(s), ensure_ascii=False, sort_keys=True) + "\n" for s in o.samples)
    )
    atomic_write_text(t, "\n".join(o.trec) + ("\n" if o.trec else ""))
    atomic_write_text(q, "\n".join(o.qrels) + ("\n" if o.qrels else ""))
    return [p, t, q]


def stamp_of(path: Path) -> str:
    """The timestamp of a ``results_<stamp>.json`` or a checkpoint file (:data:`CHECKPOINT_GLOB`)."""
    m = re.search(r"(?:results|checkpoint)_(.+?)\.json(?:\.partial)?$", Path(path).name)
    if m is None:
        raise ValueError(f"{path}: not a results or checkpoint file name")
    return m.group(1)


def earlier_task_details(folder: Path, task: str, source: Path) -> tuple[Path, Path, Path] | None:
    """The detail files the run that wrote ``source`` kept for ``task`` (``None`` if any is missing)."""
    paths = task_detail_paths(folder, task, stamp_of(source))
    return paths if all(p.is_file() for p in paths) else None


def copy_task_details(folder: Path, task: str, source: Path, stamp: str) -> list[Path]:
    """A reused task's detail files under this run's stamp, byte for byte those of the run it came from."""
    found = earlier_task_details(folder, task, source)
    if found is None:
        raise ResultsSchemaError(f"{source}: the samples of {task} are gone; rerun with --overwrite always")
    out = list(task_detail_paths(folder, task, stamp))
    for src, dst in zip(found, out, strict=True):
        atomic_write_bytes(dst, src.read_bytes())
    return out


def checkpoint_path(output_path: Path, model: str, stamp: str) -> Path:
    """Where a running run keeps its finished tasks (the one place that names it; :data:`CHECKPOINT_GLOB`
    finds it for the resume, and the final clean-up and :func:`resumed_path` derive from this path)."""
    return details_folder(output_path, model) / CHECKPOINT_GLOB.replace("*", stamp)


def resumed_path(checkpoint: Path) -> Path:
    """Where a checkpoint goes once a resumed run has consumed it: out of the resume glob (its tasks
    are in the new results file), but kept, because the reused tasks' ``reused_from`` names it."""
    return checkpoint.with_name("resumed_" + checkpoint.name)


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
    obj = read_json(path, "; delete it to resume without it")
    reps = obj.pop("replicates", {}) if isinstance(obj, dict) else {}
    validate_results(obj)
    try:
        reps = {str(t): {str(m): np.asarray(v, dtype=np.float64) for m, v in r.items()} for t, r in reps.items()}
    except (AttributeError, TypeError, ValueError) as exc:
        raise ResultsSchemaError(
            f"{path}: damaged bootstrap replicates ({exc}); delete it to resume without it"
        ) from exc
    if any(a.ndim != 1 for r in reps.values() for a in r.values()):
        raise ResultsSchemaError(
            f"{path}: bootstrap replicates are not lists of numbers; delete it to resume without it"
        )
    return flat_results(obj), reps


# -- loading ----------------------------------------------------------------------------------------------


def read_json(path: str | Path, fix: str = "") -> Any:
    """The JSON value in ``path``; bytes that are not UTF-8 JSON (or nest too deep, or hold an integer
    too long to convert) raise :class:`ResultsSchemaError` naming the file, never a decoder traceback."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        why = "nested too deeply" if isinstance(exc, RecursionError) else _one_line(exc)
        raise ResultsSchemaError(f"{path} is not JSON: {why}{fix}") from exc


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


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


def load_results(path: str | Path, *, allow_edited: bool = False) -> dict[str, Any]:
    """Read, validate and verify one results file (raises :class:`ResultsSchemaError` if it is not one,
    :class:`~pqb.harness.errors.EditedResultsError` if its content disagrees with its digest or with
    itself, unless ``allow_edited``: :func:`pqb.harness.evaluation.integrity.verify`)."""
    obj = read_json(path)
    validate_results(obj)
    flat = flat_results(obj)
    verify(obj, flat, path, allow_edited=allow_edited)
    return flat


# -- summary -----------------------------------------------------------------------------------------------

SUMMARY_COLUMNS = ("flip@10", "flip@10_ratio", "rrstd", "deg@10", "mrr_deg", "hit@10", "mrr", "hit@10_clean",
                   "hit@10_error", "rewrite_corrected")  # fmt: skip


def _fmt(entry: Mapping[str, Any], key: str) -> str:
    v = entry.get(key)
    if v is None:
        return "—" if key in entry else ""
    scale = 1 if is_ratio(key) else 100  # a ratio (1.0 = independent sides) is not a percentage
    text = f"{scale * v:.2f}"
    ci = ci_of(entry, key)
    if ci and ci[0] is not None and ci[1] is not None:
        text += f" [{scale * ci[0]:.2f}, {scale * ci[1]:.2f}]"
    return text


def summary_table(results: Mapping[str, Any]) -> str:
    """Markdown table: rows = tasks then groups, columns = main metrics ×100 with 95% CIs (ratios as
    ratios)."""
    results = flat_results(results)
    sections = {"results": results["results"], "groups": results["groups"]}
    cols = [c for c in SUMMARY_COLUMNS if any(c in e for sec in sections.values() for e in sec.values())]
    lines = ["| task | n pairs | " + " | ".join(cols) + " | saturated at K |",
             "|---|---:|" + "---:|" * len(cols) + "---|"]  # fmt: skip
    any_saturated = any_few = False
    for sec, entries in sections.items():
        for name, e in sorted(entries.items()):
            label = f"**{name}**" if sec == "groups" else name
            sat = ",".join(str(k) for k in e.get("saturated_at") or [])
            any_saturated |= bool(sat)
            if few := ",".join(str(k) for k in e.get("too_few_pairs_at") or []):
                any_few = True
                sat = f"{sat}; too few pairs at {few}" if sat else f"too few pairs at {few}"
            lines.append(
                f"| {label} | {e.get('n_pairs', '')} | " + " | ".join(_fmt(e, c) for c in cols) + f" | {sat} |"
            )
    if any_saturated:
        lines.append(
            f"\nsaturated at K: {SATURATION_REASON}: Flip@K and Deg@K there cannot show robustness; at the "
            "ceiling a larger corpus (a whole domain) can, at the floor check the run matches the corpus"
        )
    if any_few:
        lines.append(f"\ntoo few pairs at K: {TOO_FEW_PAIRS_REASON}")
    return "\n".join(lines)  # skipped tasks: one note line at load time, and ``skipped`` in the file
