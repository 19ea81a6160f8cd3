"""Task registry: YAML task configs (lm-eval style) found by a sorted scan of ``tasks/**/*.yaml``.

(``pqb.harness.tasks`` is the package of YAML files itself — the repository's top-level ``tasks/`` —
so the code that reads them lives here.)

A task file names one (domain, pair type) evaluation; shared settings live in a template that task
files ``include`` (lm-eval's ``_default_template_yaml``)::

    include: _default_template_yaml
    task: pqb_syntactic_video_games
    dataset_name: video_games
    pair_type: syntactic

A group file lists tasks or other groups (``group: pqb`` / ``task: [syntactic, error]``); a group's
scores are equal-weight means over the member tasks that ran. ``tag`` values select tasks too.
Unknown keys, bad types and missing includes raise :class:`~pqb.harness.errors.TaskConfigError`.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.resources
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypeVar, cast

import yaml

from pqb.dataset import settings
from pqb.dataset.argtypes import MAX_BOOTSTRAP_ITERS
from pqb.dataset.io import stable_hash, unsafe_name
from pqb.harness.errors import PQBHarnessError, TaskConfigError, UnknownTaskError, UsageError
from pqb.harness.evaluation.metrics import DEFAULT_K_VALUES, DEFAULT_RR_CUTOFF
from pqb.harness.evaluation.pairtypes import PAIR_TYPES, PairType, higher_is_better


@dataclass(frozen=True)
class TaskConfig:
    """One task. Field names follow lm-eval where they fit; the rest are retrieval settings.

    Attributes:
        task: unique task name.
        tag: extra names that select this task (``--tasks release``).
        dataset_path: local folder or Hub id; ``None`` = ``settings.default_dataset_path()``.
        dataset_name: the rows config (a domain, e.g. ``video_games``, or ``video_games-release``).
        dataset_revision: Hub revision (commit) to pin; ignored for local folders.
        test_split: split holding the rows.
        corpus_name: the corpus config; ``None`` = ``<dataset_name>-corpus``.
        pair_type: ``syntactic`` (rows sharing ``pair_id``) or ``error`` (``query`` vs ``error_query``).
        k_values: cut-offs for Hit@K, Flip@K, Deg@K.
        rr_cutoff: RR is 1/rank within the top ``rr_cutoff`` (paper: 200), else 0.
        main_score: the metric the summary and leaderboard sort by.
        metric_list: ``[{metric, aggregation, higher_is_better}]``; defaults to every metric of the pair type.
        bootstrap: ``{n_boot, seed, unit}`` for the clustered bootstrap CIs (``unit``: what is resampled,
            ``pair``, ``target`` (default) or ``user``; ``--bootstrap_unit`` overrides it).
        macro_average: the authors' variant: average per target ASIN first, then over ASINs; RRstd is
            then the std over all queries of an ASIN (docs/design.md §15). Syntactic tasks only.
        similarity_gate: the authors' variant: keep pairs with query cosine ≥ this value (needs
            ``gate_model``, a registered dense model name, or precomputed similarities).
        gate_model: model used to embed queries for the gate (``None``: the gate cannot run).
        run_depth: top-k kept per query for samples logs and TREC run files.
        error_dose: error tasks only: evaluate the first ``error_dose`` edits of each row's stored
            ``error_chain`` instead of ``error_query`` (the user's personal dose); ``3`` is the authors'
            dose (``pqb_error3_<domain>``). Rows whose chain is shorter are skipped and counted.
        description: one line for ``ls tasks``.
        metadata: ``{version: ...}``; a version bump marks results as not comparable.
    """

    task: str
    dataset_name: str
    pair_type: str
    tag: tuple[str, ...] = ()
    dataset_path: str | None = None
    dataset_revision: str | None = None
    test_split: str = "test"
    corpus_name: str | None = None
    k_values: tuple[int, ...] = DEFAULT_K_VALUES
    rr_cutoff: int | None = DEFAULT_RR_CUTOFF
    main_score: str | None = None
    metric_list: tuple[dict[str, Any], ...] = ()
    bootstrap: dict[str, int] = field(default_factory=lambda: {"n_boot": 1000, "seed": 0})
    macro_average: bool = False
    similarity_gate: float | None = None
    gate_model: str | None = None
    run_depth: int = 100
    error_dose: int | None = None
    description: str = ""
    metadata: dict[str, Any] = field(default_factory=lambda: {"version": 1.0})
    source: str = ""
    """File the task was read from (set by the loader, not a YAML key)."""

    @property
    def corpus(self) -> str:
        return self.corpus_name or f"{self.dataset_name}-corpus"

    @property
    def version(self) -> Any:
        return self.metadata.get("version")

    def resolved_dataset_path(self) -> str:
        return self.dataset_path or settings.default_dataset_path()

    @property
    def pairtype(self) -> PairType:
        """The :class:`~pqb.harness.evaluation.pairtypes.PairType` named by ``pair_type``."""
        return PAIR_TYPES[self.pair_type]

    def metric_names(self) -> list[str]:
        """Result keys this task reports, in order (see docs/results.md)."""
        return self.pairtype.metric_names(self.k_values)

    def robustness_metric_names(self) -> list[str]:
        """The per-pair robustness metrics (the paper's tables); every metric gets a CI, not only these."""
        return self.pairtype.robustness_metric_names(self.k_values)

    def higher_is_better(self) -> dict[str, bool]:
        out = {m: higher_is_better(m) for m in self.metric_names()}
        for item in self.metric_list:
            out[item["metric"]] = bool(item.get("higher_is_better", out.get(item["metric"], True)))
        return out

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["tag"], d["k_values"], d["metric_list"] = (
            list(self.tag),
            list(self.k_values),
            list(self.metric_list),
        )
        d.pop("source")
        return d

    def hash(self) -> str:
        return stable_hash(self.to_dict())

    def location(self, key: str) -> str:
        """``file:line`` where ``key`` is set for this task (its file or an included template)."""
        return key_location(self.source, key)


@dataclass(frozen=True)
class GroupConfig:
    """A named set of tasks/groups/tags whose scores are averaged with equal weight."""

    group: str
    task: tuple[str, ...]
    tag: tuple[str, ...] = ()
    description: str = ""
    metadata: dict[str, Any] = field(default_factory=lambda: {"version": 1.0})
    source: str = ""


TASK_KEYS = {f.name for f in dataclasses.fields(TaskConfig)} - {"source"}
GROUP_KEYS = {f.name for f in dataclasses.fields(GroupConfig)} - {"source"}


# -- YAML -> config -----------------------------------------------------------------------------------


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise TaskConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except (ValueError, RecursionError) as exc:  # a 5000-digit integer; brackets nested too deep
        why = "nested too deeply" if isinstance(exc, RecursionError) else " ".join(str(exc).split())[:200]
        raise TaskConfigError(f"{path}: is not a task file ({why})") from exc
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" line {where.line + 1}" if where is not None else ""
        raise TaskConfigError(f"{path}:{line} is not valid YAML ({getattr(exc, 'problem', exc)})") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise TaskConfigError(f"{path}: a task file must be a YAML mapping, got {type(data).__name__}")
    return data


def load_yaml_with_includes(path: Path, _seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """Read a YAML file, merging ``include`` templates (relative to the file) under its own keys."""
    path = Path(path)
    if path in _seen:
        raise TaskConfigError(f"{path}: include cycle {' -> '.join(str(p) for p in (*_seen, path))}")
    data = _read_yaml(path)
    include = data.pop("include", None)
    if include is None:
        return data
    if not isinstance(include, str) or not include:
        raise TaskConfigError(f"{path}: include must name a template file, got {include!r}")
    base_path = (path.parent / include) if not Path(include).is_absolute() else Path(include)
    if not base_path.exists():
        raise TaskConfigError(f"{path}: include {include!r} not found (looked at {base_path})")
    base = load_yaml_with_includes(base_path, (*_seen, path))
    return {**base, **data}


def key_location(source: str, key: str) -> str:
    """``file:line`` of the top-level ``key`` in ``source`` or the templates it includes.

    Computed only when an error is reported (the YAML is composed again, which keeps node marks), so
    messages point at the line to fix; ``source`` alone when the key is not found (a default).
    """
    path, seen = Path(source), set()
    while path.is_file() and path not in seen:
        seen.add(path)
        try:
            node = yaml.compose(path.read_text(encoding="utf-8"))
        except yaml.YAMLError:
            break
        pairs = node.value if isinstance(node, yaml.MappingNode) else []
        for k, _ in pairs:
            if getattr(k, "value", None) == key:
                return f"{path}:{k.start_mark.line + 1}"
        include = next((v.value for k, v in pairs if getattr(k, "value", None) == "include"), None)
        if not isinstance(include, str):
            break
        path = Path(include) if Path(include).is_absolute() else path.parent / include
    return source


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


MAX_DEPTH = 100_000
"""The largest K, ``run_depth`` or ``rr_cutoff`` a task may ask for. Ranking never keeps more documents
per query than the corpus holds, so a value past the corpus ranks it whole; this cap stops a typo
(``k_values: [1, 10, 1000000000]`` once passed the checks and ended in a ``MemoryError`` after loading)
before any data is read. The paper's largest cut-off is 1,000."""
MAX_K_VALUES = 64
"""At most this many cut-offs: each is a column of every metric, replicate and table."""


def check_task_values(data: dict[str, Any], source: str) -> None:
    """Range-check the values of a merged task mapping, naming ``file:line`` and the fix.

    Run when the registry is built, so a bad value stops the run before any data is loaded (not at
    results-schema time after the whole evaluation).
    """

    def fail(key: str, what: str) -> NoReturn:
        raise TaskConfigError(
            f"{key_location(source, key)}: {key} {what} (got {data.get(key)!r}); fix the task YAML"
        )

    ks = data.get("k_values", DEFAULT_K_VALUES)
    ks = [ks] if not isinstance(ks, list | tuple) else ks
    if not ks or not all(_is_int(k) and k > 0 for k in ks) or len(set(ks)) != len(ks):
        fail("k_values", "must be a non-empty list of distinct positive integers, e.g. [1, 5, 10, 20]")
    if len(ks) > MAX_K_VALUES or max(ks) > MAX_DEPTH:
        fail("k_values", f"must hold at most {MAX_K_VALUES} cut-offs of at most {MAX_DEPTH:,}")
    cutoff, depth = data.get("rr_cutoff"), data.get("run_depth", 1)
    if cutoff is not None and not (_is_int(cutoff) and 0 < cutoff <= MAX_DEPTH):
        fail(
            "rr_cutoff",
            f"must be a positive integer of at most {MAX_DEPTH:,} (paper: 200) or null (no cut-off)",
        )
    if not (_is_int(depth) and 0 < depth <= MAX_DEPTH):
        fail("run_depth", f"must be a positive integer of at most {MAX_DEPTH:,}")
    if not isinstance(data.get("test_split", "test"), str) or not data.get("test_split", "test"):
        fail("test_split", "must be a split name such as 'test'")
    gate = data.get("similarity_gate")
    if gate is not None and not (_is_number(gate) and -1 <= gate <= 1):
        fail("similarity_gate", "must be a cosine in [-1, 1] or null")
    if not isinstance(data.get("macro_average", False), bool):
        fail("macro_average", "must be true or false")
    _check_bootstrap(data.get("bootstrap") or {}, fail)


def _check_bootstrap(boot: Any, fail: Callable[[str, str], NoReturn]) -> None:
    from pqb.harness.evaluation.bootstrap import UNITS

    if not isinstance(boot, dict) or set(boot) - {"n_boot", "seed", "unit"}:
        fail("bootstrap", "must be a mapping with keys n_boot, seed and unit")
    if "unit" in boot and boot["unit"] not in UNITS:
        fail("bootstrap", f"unit must be one of {', '.join(UNITS)}")
    if "n_boot" in boot and not (_is_int(boot["n_boot"]) and 0 <= boot["n_boot"] <= MAX_BOOTSTRAP_ITERS):
        fail(
            "bootstrap",
            f"n_boot must be an integer in [0, {MAX_BOOTSTRAP_ITERS:,}] (0 = no confidence intervals)",
        )
    if "seed" in boot and not (_is_int(boot["seed"]) and boot["seed"] >= 0):
        fail("bootstrap", "seed must be an integer >= 0")


def _as_tuple(value: Any) -> tuple:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(value)


_F = TypeVar("_F", bound=Callable[..., Any])


def _typed(from_dict: _F) -> _F:
    """A value of a type the checks do not foresee (``tag: 3``, ``pair_type: [a]``, ``metadata: x``)
    is a :class:`TaskConfigError` naming the file, not a ``TypeError`` traceback."""

    @functools.wraps(from_dict)
    def wrapper(data: dict[str, Any], source: str = "<dict>") -> Any:
        try:
            return from_dict(data, source)
        except PQBHarnessError:
            raise
        except (TypeError, ValueError, AttributeError) as exc:
            raise TaskConfigError(f"{source}: a value has the wrong type ({exc}); fix the task YAML") from exc

    return cast(_F, wrapper)


@_typed
def task_from_dict(data: dict[str, Any], source: str = "<dict>") -> TaskConfig:
    """Validate a merged YAML mapping into a :class:`TaskConfig` (unknown keys are an error)."""
    unknown = sorted(set(data) - TASK_KEYS)
    if unknown:
        raise TaskConfigError(
            f"{source}: unknown task key(s) {', '.join(unknown)}. Valid keys: {', '.join(sorted(TASK_KEYS))}"
        )
    for key in ("task", "dataset_name", "pair_type"):
        if not data.get(key):
            raise TaskConfigError(f"{source}: required key {key!r} is missing")
    if problem := unsafe_name(data["task"]):  # the name becomes samples_<task>_<ts>.jsonl and more
        raise TaskConfigError(f"{key_location(source, 'task')}: task {problem}; fix the task YAML")
    if data["pair_type"] not in PAIR_TYPES:
        raise TaskConfigError(
            f"{source}: pair_type must be one of {tuple(PAIR_TYPES)}, got {data['pair_type']!r}"
        )
    if PAIR_TYPES[data["pair_type"]].sides and (
        data.get("similarity_gate") is not None or data.get("macro_average")
    ):
        # the authors' variants exist for syntactic pairs only (docs/design.md §15); the error
        # breakdown by mechanism and the headline Deg@K must be computed over the same pairs
        raise TaskConfigError(f"{source}: similarity_gate and macro_average apply to syntactic tasks only")
    if data.get("error_dose") is not None and (
        not PAIR_TYPES[data["pair_type"]].edits
        or not _is_int(data["error_dose"])  # not `true`, which isinstance(..., int) takes for 1
        or not 1 <= data["error_dose"] <= 3
    ):
        raise TaskConfigError(
            f"{source}: error_dose must be 1, 2 or 3 on an error task, got {data['error_dose']!r}"
        )
    check_task_values(data, source)
    kw = dict(data)
    kw["tag"] = _as_tuple(kw.get("tag"))
    kw["k_values"] = tuple(_as_tuple(kw.get("k_values", DEFAULT_K_VALUES)))
    kw["metric_list"] = tuple(dict(m) for m in _as_tuple(kw.get("metric_list")))
    kw["bootstrap"] = {"n_boot": 1000, "seed": 0, **(kw.get("bootstrap") or {})}
    if "metadata" in kw:
        kw["metadata"] = dict(kw["metadata"] or {})
    cfg = TaskConfig(**kw, source=source)
    if cfg.main_score is None:
        main = cfg.pairtype.main_score
        cfg = dataclasses.replace(cfg, main_score=main if 10 in cfg.k_values else cfg.metric_names()[0])
    known = set(cfg.metric_names())
    for m in (cfg.main_score, *(item.get("metric") for item in cfg.metric_list)):
        if m not in known:
            raise TaskConfigError(
                f"{source}: metric {m!r} is not reported by a {cfg.pair_type} task. Valid: {', '.join(sorted(known))}"
            )
    return cfg


@_typed
def group_from_dict(data: dict[str, Any], source: str = "<dict>") -> GroupConfig:
    unknown = sorted(set(data) - GROUP_KEYS)
    if unknown:
        raise TaskConfigError(
            f"{source}: unknown group key(s) {', '.join(unknown)}. Valid keys: {', '.join(sorted(GROUP_KEYS))}"
        )
    members = _as_tuple(data.get("task"))
    if not members:
        raise TaskConfigError(f"{source}: group {data['group']!r} lists no tasks")
    return GroupConfig(
        group=str(data["group"]),
        task=tuple(str(m) for m in members),
        tag=_as_tuple(data.get("tag")),
        description=str(data.get("description", "")),
        metadata=dict(data.get("metadata") or {"version": 1.0}),
        source=source,
    )


# -- discovery ----------------------------------------------------------------------------------------


def builtin_task_dir() -> Path:
    """The shipped YAML folder (the checkout's ``tasks/`` in editable installs, package data in wheels)."""
    return Path(str(importlib.resources.files("pqb.harness.tasks")))


def _yaml_files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*.yaml") if not p.name.startswith("_"))


class TaskRegistry:
    """All tasks and groups from the shipped folder plus ``include_paths`` (later paths may not redefine)."""

    def __init__(self, include_paths: Iterable[str | Path] = ()) -> None:
        self.tasks: dict[str, TaskConfig] = {}
        self.groups: dict[str, GroupConfig] = {}
        roots = [builtin_task_dir(), *(Path(p) for p in include_paths)]
        for root in roots:
            if not root.exists():
                raise TaskConfigError(f"--include_path {root} does not exist")
            for path in _yaml_files(root):
                self._add(path)

    def _add(self, path: Path) -> None:
        data = load_yaml_with_includes(path)
        if "group" in data:
            cfg = group_from_dict(data, str(path))
            name = cfg.group
        else:
            cfg = task_from_dict(data, str(path))
            name = cfg.task
        if name in self.tasks or name in self.groups:
            first = (self.tasks.get(name) or self.groups[name]).source
            raise TaskConfigError(f"{path}: name {name!r} is already defined in {first}")
        (self.groups if isinstance(cfg, GroupConfig) else self.tasks)[name] = cfg

    # -- names ---------------------------------------------------------------------------------------
    def tags(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for name, cfg in self.tasks.items():
            for t in cfg.tag:
                out.setdefault(t, []).append(name)
        return {k: sorted(v) for k, v in sorted(out.items())}

    def all_names(self) -> list[str]:
        return sorted(set(self.tasks) | set(self.groups) | set(self.tags()))

    def expand(self, name: str, _stack: tuple[str, ...] = ()) -> list[str]:
        """Leaf task names a task/group/tag name stands for, in sorted order."""
        if name in self.tasks:
            return [name]
        if name in self.groups:
            if name in _stack:
                raise TaskConfigError(f"group cycle: {' -> '.join((*_stack, name))}")
            out: set[str] = set()
            for member in self.groups[name].task:
                out.update(self.expand(member, (*_stack, name)))
            return sorted(out)
        tags = self.tags()
        if name in tags:
            return tags[name]
        raise UnknownTaskError(name, self.all_names())

    def resolve(self, names: Sequence[str]) -> tuple[list[str], list[str]]:
        """(leaf tasks to run, groups to report) for a ``--tasks`` list; groups include nested ones."""
        tasks: set[str] = set()
        groups: list[str] = []
        for name in names:
            tasks.update(self.expand(name))
            self._collect_groups(name, groups)
        return sorted(tasks), groups

    def _collect_groups(self, name: str, out: list[str]) -> None:
        if name in self.groups and name not in out:
            out.append(name)
            for member in self.groups[name].task:
                self._collect_groups(member, out)


def split_task_list(text: str) -> list[str]:
    """``"syntactic, error"`` -> ``["syntactic", "error"]``; an empty list is a usage error (``--tasks ""``
    once ran nothing and failed as data, exit 1, with "skipped: {}")."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise UsageError(
            f"--tasks {text!r} names no task; give task, group or tag names (pqb-harness ls tasks)"
        )
    return names
