"""``--overwrite only-missing``: reuse a finished task only when everything that shapes it matches.

A task's *resume key* (:func:`resume_inputs`) is stored in every results file and checkpoint under
``resume``. It holds the content fingerprints of the evaluated rows and of the corpus, ``--limit``,
the effective bootstrap settings (replicates, seed and the unit resampled), the model and the settings it scores with, the task settings that
shape metrics (k_values, rr_cutoff, variants, ...), a gated task's gate model settings (its weights
identity, not only its name), the pinned tie rule and the harness version. A
task is reused from the newest earlier file (results or checkpoint of a killed run) whose key is
equal; otherwise it is recomputed and :func:`plan_resume` says why (the first differing inputs).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pqb.dataset.rules import TIE_RTOL
from pqb.harness.evaluation.evaluator import TaskData, bootstrap_settings
from pqb.harness.evaluation.pairs import error_side_suffix

SHAPING_TASK_FIELDS = (
    "dataset_name", "test_split", "corpus_name", "pair_type", "k_values", "rr_cutoff", "main_score",
    "metric_list", "macro_average", "similarity_gate", "gate_model", "run_depth", "metadata",
)  # fmt: skip
"""TaskConfig fields that change a task's numbers (description and tags do not)."""


def resume_inputs(data: TaskData, *, model: str, model_settings: Mapping[str, Any], limit: int | None,
                  n_boot: int | None, seed: int | None, unit: str | None = None,
                  gate_settings: Mapping[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """The resume key of one task: JSON-able, compared for equality (see the module docstring).

    ``gate_settings``: the cosine gate model's ``cache_settings()`` (weights identity included). A gated
    task's key holds it, since the task's ``gate_model`` is only a name: a preset whose checkpoint was
    replaced gates other pairs. Ungated tasks' keys leave it out (the gate is no input of theirs).
    """
    from pqb.dataset import __version__
    from pqb.harness.evaluation.results import SCHEMA_VERSION

    boot_n, boot_seed, boot_unit = bootstrap_settings(data.cfg, n_boot, seed, unit)
    cfg = data.cfg.to_dict()
    extra: dict[str, Any] = {}
    if (
        data.cfg.error_dose is not None
    ):  # its stored ranks are keyed <id>_error<d>: older files used <id>_error
        extra = {"error_side_ids": f"<row id>{error_side_suffix(data.cfg.error_dose)}"}
    if data.cfg.similarity_gate is not None:
        extra["gate_settings"] = dict(gate_settings) if gate_settings is not None else None
    return json.loads(json.dumps({
        **extra,
        "dataset_fingerprint": data.fingerprint,
        "corpus_fingerprint": data.corpus.fingerprint,
        "limit": limit,
        "bootstrap": {"n_boot": boot_n, "seed": boot_seed, "unit": boot_unit},
        "model": model,
        "model_settings": dict(model_settings),
        "task": {k: cfg[k] for k in SHAPING_TASK_FIELDS},
        "tie_rule": {"order": "score desc, near-ties by corpus id", "rtol": TIE_RTOL},
        "harness_version": __version__,
        "results_schema": SCHEMA_VERSION,  # an entry of an older layout is recomputed, never copied
    }, sort_keys=True, default=str))  # fmt: skip


def _flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(obj, Mapping) and obj:
        return {k: v for key, val in obj.items() for k, v in _flatten(val, f"{prefix}{key}.").items()}
    return {prefix.rstrip("."): obj}


def mismatch(previous: Mapping[str, Any] | None, now: Mapping[str, Any], limit: int = 3) -> str | None:
    """``None`` if the keys are equal, else the first differing inputs (``limit: 4 -> None``)."""
    if previous is None:
        return "the earlier result has no resume key (written by an older harness)"
    a, b = _flatten(previous), _flatten(now)
    diffs = [f"{k}: {a.get(k)!r} -> {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    if not diffs:
        return None
    more = f" (+{len(diffs) - limit} more)" if len(diffs) > limit else ""
    return "; ".join(diffs[:limit]) + more


@dataclass
class PreviousRun:
    """One earlier results file or checkpoint: its content and, for checkpoints, bootstrap replicates."""

    path: Path
    data: dict[str, Any]
    replicates: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)

    def as_source(self) -> dict[str, Any]:
        """The mapping :func:`pqb.harness.evaluation.results.build_results` copies a reused task from."""
        return {**self.data, "_path": str(self.path), "_replicates": self.replicates}


def load_previous_runs(folder: Path, details: Path | None = None) -> list[PreviousRun]:
    """Results files of a model folder and checkpoints of its details folder, newest first (timestamps
    sort lexically)."""
    from pqb.harness.errors import EditedResultsError
    from pqb.harness.evaluation.results import CHECKPOINT_GLOB, RESULTS_GLOB, load_checkpoint, load_results

    files = [*folder.glob(RESULTS_GLOB), *(details or folder).glob(CHECKPOINT_GLOB)]
    runs = []
    for f in sorted(files, key=lambda f: f.name.split("_", 1)[1], reverse=True):
        if f.name.startswith("checkpoint_"):
            data, reps = load_checkpoint(f)
            runs.append(PreviousRun(f, data, reps))
        else:
            try:
                runs.append(PreviousRun(f, load_results(f)))
            except EditedResultsError as exc:  # its numbers are not the run's: never copied into a new file
                print(f"note: not reusing {f.name}: {str(exc).split(': ', 1)[1]}", file=sys.stderr)
    return runs


def plan_resume(keys: Mapping[str, Mapping[str, Any]], runs: Sequence[PreviousRun]
                ) -> tuple[dict[str, PreviousRun], dict[str, str]]:  # fmt: skip
    """(task -> run to reuse it from, task -> why it is recomputed) for the tasks in ``keys``."""
    reuse: dict[str, PreviousRun] = {}
    why: dict[str, str] = {}
    for task, key in keys.items():
        have = [r for r in runs if task in r.data.get("results", {})]
        match = next((r for r in have if r.data.get("resume", {}).get(task) == key), None)
        if match is not None:
            reuse[task] = match
        elif not have:
            why[task] = "no earlier result"
        else:
            why[task] = f"{mismatch(have[0].data.get('resume', {}).get(task), key)} (vs {have[0].path.name})"
    return reuse, why
