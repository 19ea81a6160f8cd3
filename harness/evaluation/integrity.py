"""Results files that prove themselves: a content digest, and cross-checks of what a file states twice.

A results file travels (a colleague's folder, a Hub results repo) and is read by ``compare``,
``leaderboard`` and ``compare-paper``, which publish its numbers. An edited file once went through all
three with exit 0: every error-side rank set to 1 made ``compare`` print B's Deg@1 as −1.90 (p = 0.005)
where B's own ``results`` said +1.90, and ``deg@1`` edited to −0.5 was shown bold as the most robust
value, outside its own CI, beside a one-domain average that still said 1.90 (issue 45).

So the writer seals each file (:func:`seal`): ``content_digest`` holds the sha256 of the file's
canonical JSON (every other key, sorted keys, no whitespace: :func:`canonical_bytes`) and a short
digest of each part (a top-level key, or one task's entry of a per-task section), so a mismatch names
the first part that disagrees. Readers (:func:`verify`) check it, then cross-check what is redundant:

* every stored estimate lies inside its stored 95% CI (when the run drew at least
  :data:`MIN_CI_REPLICATES` replicates: fewer give intervals that need not hold the estimate, which
  ``run`` says in a note; ratio metrics are left out: their percentile interval need not hold the
  ratio of the means);
* a group of one domain equals its one task, metric by metric;
* each stored ``ranks`` entry has one rank per query id (``compare`` recomputes the stored metrics from
  them: :func:`pqb.harness.evaluation.compare.compare_results`);
* every name that becomes a file name (task, group and domain names, ``dataset_name``,
  ``model_name_sanitized``) passes :func:`pqb.dataset.io.unsafe_name`, and every displayed name (the
  model) is bounded and one line.

A mismatch of the digest or of a cross-check is a refusal naming the file and the first disagreeing
key; ``--allow-edited`` turns it into a loud ``note:``. Unsafe names and ranks that cannot be paired
are refused either way (they are not a matter of trust: nothing can be done with them).

Files written before the digest existed (results schema < 1.5) are read with one ``note:`` that they
carry none; their redundant fields are cross-checked like any other. A file that claims schema 1.5 or
later without a digest is refused (stripping the digest is an edit).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Iterator, Mapping
from typing import Any

from pqb.dataset.io import MAX_NAME_LENGTH, unsafe_name
from pqb.harness.errors import EditedResultsError, ResultsSchemaError

logger = logging.getLogger(__name__)

DIGEST_KEY = "content_digest"
DIGEST_SINCE = (1, 5)
"""The results schema version from which every file carries :data:`DIGEST_KEY`."""
MIN_CI_REPLICATES = 40
"""ceil(2 / alpha) at alpha = 0.05: below it a percentile CI's bounds are single replicates, not an interval
(and need not hold the estimate)."""
CI_TOLERANCE = 1e-9
PART_HEX = 16
CI_SUFFIXES = ("_ci_lower", "_ci_upper")
"""A metric's CI in the flat view (:func:`pqb.harness.evaluation.results.flat_results`): ``<m>_ci_lower``,
``<m>_ci_upper``."""
Problem = tuple[str, str] | None
"""``(first disagreeing key, why)``, or ``None`` when a check finds nothing."""


def canonical_bytes(value: Any) -> bytes:
    """The bytes a digest is taken of: JSON with sorted keys, no whitespace, UTF-8, no NaN (a written
    file is strict JSON, so reading and re-serialising it gives the same bytes)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8")


def _sha(value: Any) -> str:
    return hashlib.sha256(canonical_bytes(value)).hexdigest()


def _parts(obj: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """``(name, value)`` of each part a mismatch can name: a per-task section's entries one by one
    (``results/pqb_error_video_games``), every other top-level key whole (``config``)."""
    for key in sorted(obj):
        if key == DIGEST_KEY:
            continue
        value = obj[key]
        if isinstance(value, Mapping) and value and all(isinstance(v, Mapping) for v in value.values()):
            for name in sorted(value):
                yield f"{key}/{name}", value[name]
            yield f"{key}/", sorted(value)  # the section's names: a removed or added entry
        else:
            yield key, value


def content_digest(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The digest :func:`seal` stores: the whole file's sha256 and a short one per part."""
    body = {k: v for k, v in obj.items() if k != DIGEST_KEY}
    return {
        "algorithm": "sha256 of the canonical JSON of every other key (sorted keys, no whitespace, UTF-8)",
        "sha256": _sha(body),
        "parts": {name: _sha(value)[:PART_HEX] for name, value in _parts(body)},
    }


def seal(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` with its :data:`DIGEST_KEY` (replacing any earlier one)."""
    body = {k: v for k, v in obj.items() if k != DIGEST_KEY}
    return {**body, DIGEST_KEY: content_digest(body)}


def _version(obj: Mapping[str, Any]) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in str(obj.get("schema_version", "0")).split("."))
    except ValueError:
        return (0,)


def digest_problem(obj: Mapping[str, Any]) -> Problem:
    """``(first disagreeing key, why)`` when the file's content is not what its digest says, ``None``
    when it is (or when an older file has none: :func:`verify` notes that)."""
    stored = obj.get(DIGEST_KEY)
    if stored is None:
        if _version(obj) >= DIGEST_SINCE:
            why = f"it has no {DIGEST_KEY} although its schema_version {obj.get('schema_version')} has one"
            return DIGEST_KEY, why
        return None
    if not isinstance(stored, Mapping) or not isinstance(stored.get("parts"), Mapping):
        return DIGEST_KEY, f"its {DIGEST_KEY} is not a digest"
    now = content_digest(obj)
    if now["sha256"] == stored.get("sha256"):
        return None
    have, had = now["parts"], stored["parts"]
    for name in sorted(set(have) | set(had)):
        if have.get(name) != had.get(name):
            key = name.rstrip("/")
            state = "is new" if name not in had else "is gone" if name not in have else "changed"
            return key, f"{key} {state} since the run wrote it (the content digest disagrees)"
    return DIGEST_KEY, "its content digest disagrees with its content"


# -- cross-checks -------------------------------------------------------------------------------------------


def _replicates(flat: Mapping[str, Any], task: str) -> int | None:
    """Bootstrap replicates behind a task's CIs: its resume key's (a task YAML may set its own), else the run's."""
    resume = ((flat.get("resume") or {}).get(task) or {}).get("bootstrap") or {}
    n = resume.get("n_boot", ((flat.get("config") or {}).get("bootstrap") or {}).get("n_boot"))
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def is_ratio(metric: str) -> bool:
    """``flip@K_ratio``: tables print it as a ratio, every other metric (a fraction) ×100; its percentile
    interval need not hold the ratio of the means, so :func:`ci_problem` leaves it out."""
    return metric.endswith("_ratio")


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def ci_problem(flat: Mapping[str, Any]) -> Problem:
    """The first stored estimate outside its stored CI (``results/<task>/<metric>``), in a run of at least
    :data:`MIN_CI_REPLICATES` replicates (a group: every member's)."""
    for section in ("results", "groups"):
        for name, entry in sorted((flat.get(section) or {}).items()):
            members = (flat.get("group_subtasks") or {}).get(name, []) if section == "groups" else [name]
            reps = [_replicates(flat, m) for m in members] or [None]
            if any(n is None or n < MIN_CI_REPLICATES for n in reps):
                continue
            for key in sorted(entry):
                if not key.endswith(CI_SUFFIXES[0]) or is_ratio(metric := key[: -len(CI_SUFFIXES[0])]):
                    continue
                lo, hi, v = entry.get(key), entry.get(metric + CI_SUFFIXES[1]), entry.get(metric)
                if not (_number(lo) and _number(hi) and _number(v)):
                    continue
                if not lo - CI_TOLERANCE <= v <= hi + CI_TOLERANCE:
                    return (f"{section}/{name}/{metric}",
                            f"{section}/{name}/{metric} = {v!r} lies outside its own 95% CI [{lo!r}, {hi!r}]")  # fmt: skip
    return None


def group_problem(flat: Mapping[str, Any]) -> Problem:
    """The first metric of a one-task group that differs from its task's (the mean of one value is that value)."""
    groups, tasks = flat.get("groups") or {}, flat.get("results") or {}
    for name, members in sorted((flat.get("group_subtasks") or {}).items()):
        if len(members) != 1 or name not in groups or members[0] not in tasks:
            continue
        group, task = groups[name], tasks[members[0]]
        for key, value in sorted(group.items()):
            if key not in task or not _number(value):  # a reused member without replicates: no group CI
                continue
            other = task[key]
            if not (_number(other) and math.isclose(value, other, rel_tol=1e-12, abs_tol=1e-15)):
                return (f"groups/{name}/{key}",
                        f"groups/{name}/{key} = {value!r} but its one task {members[0]} says {other!r}")  # fmt: skip
    return None


def ranks_problem(obj: Mapping[str, Any]) -> Problem:
    """A ``ranks`` entry whose lists cannot be paired (one rank per query id, ids distinct)."""
    for task, entry in sorted((obj.get("ranks") or {}).items()):
        ids, ranks = entry.get("query_id") or [], entry.get("rank") or []
        if len(ids) != len(ranks):
            return f"ranks/{task}", f"ranks/{task} holds {len(ranks)} ranks for {len(ids)} query ids"
        if len(set(ids)) != len(ids):
            return f"ranks/{task}", f"ranks/{task} names a query id twice"
    return None


TASK_SECTIONS = (
    "results",
    "configs",
    "ranks",
    "dataset",
    "task_hashes",
    "versions",
    "n-samples",
    "breakdowns",
)
"""Top-level keys whose keys are task names (``results`` and ``versions`` hold groups too)."""


def _names(obj: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """``(where, name)`` of every name in a file that readers turn into a file name."""
    for section in TASK_SECTIONS:
        for task in obj.get(section) or {}:
            if task not in (obj.get("groups") or {}):
                yield f"{section}/{task}", task
    for group in obj.get("groups") or {}:
        for i, part in enumerate(str(group).split("/")):  # `pqb/syntactic`: a group of both pair types
            yield f"groups/{group}" + (f" (part {i + 1})" if "/" in str(group) else ""), part
    for task, cfg in sorted((obj.get("configs") or {}).items()):
        if isinstance(cfg, Mapping):
            for key in ("task", "dataset_name"):
                if key in cfg:
                    yield f"configs/{task}/{key}", cfg[key]
    for task, data in sorted((obj.get("dataset") or {}).items()):
        if isinstance(data, Mapping) and "name" in data:
            yield f"dataset/{task}/name", data["name"]
    config = obj.get("config") or {}
    for where, value in (("model_name_sanitized", obj.get("model_name_sanitized")),
                         ("config/model_name_sanitized", config.get("model_name_sanitized"))):  # fmt: skip
        if value is not None:
            yield where, value


def _display_names(obj: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """Names shown (the model, a run tag) but never made a file name: free text, bounded and one line."""
    config = obj.get("config") or {}
    info = config.get("model_info") if isinstance(config.get("model_info"), Mapping) else {}
    yield from (("model_name", obj.get("model_name")), ("config/model", config.get("model")),
                ("config/model_name", config.get("model_name")), ("config/model_info/name", info.get("name")))  # fmt: skip


def name_problem(obj: Mapping[str, Any]) -> Problem:
    """The first name that could escape a folder or break a table (see the module docstring)."""
    for where, name in _names(obj):
        if problem := unsafe_name(name):
            return where, f"{where}: {problem}"
    for where, name in _display_names(obj):
        if name is None:
            continue
        if not isinstance(name, str) or len(name) > MAX_NAME_LENGTH or not name.isprintable():
            shown = repr(name)[:60] + ("..." if len(repr(name)) > 60 else "")
            return where, f"{where} {shown} is not a one-line name of at most {MAX_NAME_LENGTH} characters"
    return None


def recomputed_problem(flat: Mapping[str, Any], task: str, values: Mapping[str, float]) -> Problem:
    """The first stored metric of ``task`` that its stored ranks do not give (``values``: the metrics
    ``compare`` recomputed from them); NaN on either side is not compared."""
    entry = (flat.get("results") or {}).get(task) or {}
    for key, value in sorted(values.items()):
        stored = entry.get(key)
        if not (_number(stored) and _number(value)):
            continue
        if not math.isclose(stored, value, rel_tol=1e-9, abs_tol=1e-12):
            return (f"results/{task}/{key}",
                    f"results/{task}/{key} = {stored!r}, but its stored ranks give {value!r}")  # fmt: skip
    return None


def refuse_or_note(found: Problem, path: Any, *, allow_edited: bool = False) -> None:
    """Raise :class:`EditedResultsError` for a disagreement ``(key, why)``, or note it under ``allow_edited``."""
    if found is None:
        return
    key, why = found
    if not allow_edited:
        raise EditedResultsError(
            f"{path}: refusing an edited results file: {why} (first disagreeing key: {key}); rerun the "
            "system, or pass --allow-edited to read it anyway"
        )
    logger.warning("note: %s: read with --allow-edited although %s (key %s): its numbers are not the ones "
                   "its run wrote", path, why, key)  # fmt: skip


def verify(obj: Mapping[str, Any], flat: Mapping[str, Any], path: Any, *, allow_edited: bool = False) -> None:
    """Check a results file read from ``path`` (``obj`` as stored, ``flat`` its flat view): raise
    :class:`ResultsSchemaError` for unusable names or ranks, :class:`EditedResultsError` for content that
    disagrees with its digest or with itself (a ``note:`` instead under ``allow_edited``); note a file
    without a digest."""
    for check in (name_problem, ranks_problem):
        if found := check(obj):
            raise ResultsSchemaError(f"{path}: {found[1]}; this results file cannot be read safely")
    found = digest_problem(obj) or ci_problem(flat) or group_problem(flat)
    refuse_or_note(found, path, allow_edited=allow_edited)
    if found is None and obj.get(DIGEST_KEY) is None:
        logger.warning("note: %s carries no content digest (results schema %s, before %s): read unverified; "
                       "its redundant fields were cross-checked", path, obj.get("schema_version"),
                       ".".join(map(str, DIGEST_SINCE)))  # fmt: skip
