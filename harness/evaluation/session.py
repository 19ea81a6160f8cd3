"""The evaluation session: one object between a command (or a notebook call) and a results file.

lm-eval splits this life cycle between ``simple_evaluate`` (resolve tasks, build the model, evaluate,
assemble the results dict) and ``EvaluationTracker`` (where the files go, writing them). PQB keeps both
in one :class:`EvaluationSession`, because resuming, checkpoints and the results file share one output
folder and one set of keys. ``pqb-harness run``, ``pqb-harness score`` and :func:`evaluate` (the
public API, ``pqb.harness.evaluate``) are thin callers of it::

    session = EvaluationSession(SessionSettings(tasks="pqb", output_path="results"))
    out = session.run("bm25", "k1=0.9")          # a registered model or preset, or a Retriever object
    out = session.score(read_runs([path]))       # any system's TREC run
    out.results, out.path, out.extra              # the dict written, its file, samples/run files

Steps, each one method: :meth:`~EvaluationSession.resolve` (task names, groups and tags → tasks),
:meth:`~EvaluationSession.load` (rows and corpora, validated; absent configs are a recorded skip),
resume planning (``overwrite="only-missing"``: reuse a task only when its resume key matches),
evaluation with a checkpoint after each task, results assembly and writing. Notes (a skipped task,
each task's resume decision, a too-small bootstrap) go to ``notify``, stderr by default.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pqb.harness.errors import DataError, TaskConfigError, UsageError
from pqb.harness.evaluation import evaluator as ev
from pqb.harness.evaluation.integrity import MIN_CI_REPLICATES
from pqb.harness.evaluation.task_registry import TaskConfig, TaskRegistry, split_task_list
from pqb.harness.retrievers.base import Retriever

OVERWRITE_MODES = ("always", "never", "only-missing")
"""``always``: recompute every task; ``never``: refuse when a results file holds a requested task;
``only-missing``: reuse each task whose resume key matches an earlier file's."""


def bootstrap_note(n_boot: int | None) -> str | None:
    """The ``note:`` line for a bootstrap of 0 replicates or fewer than :data:`MIN_CI_REPLICATES`.

    Why: ``--bootstrap_iters 1`` printed ``Deg@10 5.24 [4.29, 4.29]``, a "95% CI" that does not hold its
    own estimate, and moved the saturation marks (which compare the expected flip rate with the CI width).
    """
    if n_boot == 0:
        return "note: --bootstrap_iters 0: no confidence intervals are computed (every CI is null, no <metric>_stderr is written)"
    if n_boot is not None and n_boot < MIN_CI_REPLICATES:
        return (f"note: --bootstrap_iters {n_boot}: a 95% percentile interval needs at least {MIN_CI_REPLICATES} "
                "replicates (fewer cannot place its 2.5% tails, and the interval may not even hold the estimate); "
                "read these CIs as placeholders, or give 0 for none")  # fmt: skip
    return None


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


@dataclass(frozen=True)
class SessionSettings:
    """What every evaluation of a session shares (the options ``run`` and ``score`` have in common).

    ``output_path``: a folder (``<model>/results_<ts>.json`` goes under it), a ``.json`` file (that file),
    or ``None``: nothing is written, and the results dict is only returned (no checkpoint, no resume,
    no samples). ``limit``: ``N`` pairs of each task, or a share in (0, 1) of them (a seeded sample).
    """

    tasks: str | Sequence[str] = "pqb"
    include_path: Sequence[str | os.PathLike[str]] = ()
    dataset_path: str | os.PathLike[str] | None = None
    limit: int | float | None = None
    n_boot: int | None = None
    seed: int | None = None
    unit: str | None = None
    log_samples: bool = False
    output_path: str | Path | None = "results"
    overwrite: str = "always"
    strict: bool = False

    def __post_init__(self) -> None:
        # a pathlib.Path is how Python callers name a folder; the loaders take the string (a Hub id is one)
        if self.dataset_path is not None:
            object.__setattr__(self, "dataset_path", os.fspath(self.dataset_path))
        object.__setattr__(self, "include_path", tuple(os.fspath(p) for p in self.include_path))
        _check_numbers(self)
        if self.overwrite not in OVERWRITE_MODES:
            raise UsageError(f"overwrite={self.overwrite!r}: must be one of {', '.join(OVERWRITE_MODES)}")
        if self.output_path is None and (self.log_samples or self.overwrite != "always"):
            what = "log_samples" if self.log_samples else f"overwrite={self.overwrite!r}"
            raise UsageError(f"{what} needs an output_path (the samples and earlier results live there)")

    @property
    def out(self) -> Path | None:
        return None if self.output_path is None else Path(self.output_path)

    def bootstrap_config(self) -> dict[str, Any]:
        """``config.bootstrap``: the overrides (``None`` = each task's own) and the method."""
        return {"n_boot": self.n_boot, "seed": self.seed, "unit": self.unit,
                "method": "clustered paired percentile"}  # fmt: skip


def _check_numbers(s: SessionSettings) -> None:
    """The command line's range checks (:mod:`pqb.dataset.argtypes`) for a call that did not come through
    argparse (``pqb.harness.evaluate``): one :class:`UsageError` naming the setting."""
    import argparse

    from pqb.dataset.argtypes import bootstrap_iters, non_negative_int, pair_limit
    from pqb.harness.evaluation.bootstrap import UNITS

    for key, check in (("limit", pair_limit), ("n_boot", bootstrap_iters), ("seed", non_negative_int)):
        value = getattr(s, key)
        if value is None:
            continue
        try:
            if isinstance(value, bool) or check(str(value)) != value:
                raise argparse.ArgumentTypeError(f"got {value!r}")
        except argparse.ArgumentTypeError as exc:
            raise UsageError(f"{key}={value!r}: {exc}") from None
    if s.unit is not None and s.unit not in UNITS:
        raise UsageError(f"unit={s.unit!r}: must be one of {', '.join(UNITS)}")


@dataclass
class SessionOutput:
    """What one evaluation gives: the results dict (as written), its file and the samples/run files."""

    results: dict[str, Any]
    path: Path | None = None
    extra: list[Path] = field(default_factory=list)


class EvaluationSession:
    """Resolves, loads, plans the resume, evaluates with checkpoints, assembles and writes results."""

    def __init__(self, settings: SessionSettings, *, notify: Callable[[str], None] = _stderr) -> None:
        self.settings = settings
        self.notify = notify

    # -- tasks and data -----------------------------------------------------------------------------------
    def resolve(self, gate_model: str | None = None) -> tuple[TaskRegistry, list[TaskConfig], list[str]]:
        """(registry, tasks, groups named) for ``settings.tasks``; ``gate_model`` is recorded in each
        gated task's config, so the results name the model that gated."""
        registry = TaskRegistry(self.settings.include_path)
        wanted = self.settings.tasks
        names, groups = registry.resolve(split_task_list(wanted) if isinstance(wanted, str) else list(wanted))
        tasks = [registry.tasks[t] for t in names]
        if gate_model:
            tasks = [replace(t, gate_model=gate_model) if t.similarity_gate is not None else t for t in tasks]
        return registry, tasks, groups

    def load(
        self, tasks: Sequence[TaskConfig], verb: str = "run"
    ) -> tuple[dict[str, ev.TaskData], dict[str, str]]:
        """(loaded tasks, skipped tasks with why): one note for every task without data; an error when none
        is left, or any is skipped under ``strict``."""
        s = self.settings
        loaded, skipped = ev.load_tasks(tasks, s.dataset_path, s.limit)
        if skipped:  # one line for all (a dataset built for some domains lacks the others by design)
            self.notify(ev.skipped_note(skipped))
        if not loaded:
            raise DataError(f"no task could {verb}; skipped: {skipped}")
        if s.strict and skipped:
            raise DataError(f"--strict and {len(skipped)} task(s) skipped: {skipped}")
        return loaded, skipped

    # -- resume ---------------------------------------------------------------------------------------------
    def previous(self, system: str, wanted: Sequence[str]) -> list[Any]:
        """Earlier runs to resume from (``only-missing``); refuses existing results under ``never``."""
        from pqb.harness.evaluation.results import details_folder, model_folder, names_a_file
        from pqb.harness.evaluation.resume import load_previous_runs

        out = self.settings.out
        if self.settings.overwrite == "always" or out is None:
            return []
        if self.settings.overwrite == "never" and names_a_file(out) and out.exists():
            raise UsageError(f"the results file {out} already exists; use --overwrite always (rewrite it)")
        runs = load_previous_runs(model_folder(out, system), details_folder(out, system))
        done = sorted(
            {t for r in runs if r.path.name.startswith("results_") for t in wanted if t in r.data["results"]}
        )
        if self.settings.overwrite == "never" and done:
            raise UsageError(
                f"results for {', '.join(done)} already exist in {out}; "
                "use --overwrite always (recompute) or only-missing (reuse matching tasks)"
            )
        return runs

    def plan(self, keys: Mapping[str, dict], runs: list[Any], details: Path) -> dict[str, Any]:
        """Tasks to reuse; one ``resume:`` note per task saying what happens and why."""
        from pqb.harness.evaluation.results import earlier_task_details
        from pqb.harness.evaluation.resume import plan_resume

        if self.settings.overwrite != "only-missing":
            return {}
        reuse, why = plan_resume(keys, runs)
        if self.settings.log_samples:  # a reused task must leave the samples, run and qrels a full run would
            for task in [t for t, r in reuse.items() if earlier_task_details(details, t, r.path) is None]:
                why[task] = f"--log_samples and {reuse.pop(task).path.name} kept no samples for it"
        for task in sorted(keys):
            line = f"reused from {reuse[task].path}" if task in reuse else f"recomputing: {why[task]}"
            self.notify(f"resume: {task}: {line}")
        return reuse

    # -- a model --------------------------------------------------------------------------------------------
    def run(self, model: str | Retriever, model_args: str | Mapping[str, Any] | None = None, *,
            name: str | None = None, device: str | None = None, batch_size: int | str | None = None,
            gate_model: str | None = None, use_cache: bool = True) -> SessionOutput:  # fmt: skip
        """Evaluate a registered model or preset (``model`` a name, ``model_args`` its arguments) or a
        :class:`~pqb.harness.retrievers.base.Retriever` object (named ``name``, else its ``name``)."""
        from pqb.dataset.environment import numeric_environment
        from pqb.harness.evaluation.results import (
            build_results,
            check_system_name,
            checkpoint_path,
            details_folder,
            lm_eval_model_fields,
            resumed_path,
            timestamp,
            write_checkpoint,
        )
        from pqb.harness.evaluation.resume import resume_inputs
        from pqb.harness.registry import create_retriever, parse_model_args, system_name

        s = self.settings
        started, stamp = time.time(), timestamp()
        self._bootstrap_note()
        registry, tasks, groups = self.resolve(gate_model)
        if isinstance(model, str):
            args = (
                parse_model_args(model_args)
                if model_args is None or isinstance(model_args, str)
                else dict(model_args)
            )
            system = system_name(model, args)
        else:
            args, system = {}, self._object_name(model, model_args, name)
        check_system_name(system)
        runs = self.previous(system, [t.task for t in tasks])
        retriever = (
            create_retriever(model, args, device=device, batch_size=batch_size)
            if isinstance(model, str)
            else model
        )
        loaded, skipped = self.load(tasks)
        gate = gate_retriever([d.cfg for d in loaded.values()], device=device, batch_size=batch_size)
        gate_settings = gate.cache_settings() if gate is not None else None
        keys = {n: resume_inputs(d, model=system, model_settings=retriever.cache_settings(), limit=s.limit,
                                 n_boot=s.n_boot, seed=s.seed, unit=s.unit, gate_settings=gate_settings)
                for n, d in loaded.items()}  # fmt: skip
        planned = self.plan(keys, runs, details_folder(s.out, system)) if s.out is not None else {}
        consumed = {r.path for r in planned.values() if r.path.name.startswith("checkpoint_")}
        reuse = {t: {**r.as_source(), "_path": str(resumed_path(r.path) if r.path in consumed else r.path)}
                 for t, r in planned.items()}  # fmt: skip
        todo = {n: d for n, d in loaded.items() if n not in reuse}
        config = {
            "model": system, "model_kwargs": args,
            "seeds": {"bootstrap": s.seed}, "limit": s.limit, "device": device,
            "batch_size": batch_size, "bootstrap": s.bootstrap_config(),
            "numeric_environment": numeric_environment(),
        }  # fmt: skip

        def results_of(output: ev.EvaluationOutput) -> dict[str, Any]:
            info = retriever.describe()
            stats = {"model_info": info, "stats": {k: int(v) for k, v in output.stats.items()},
                     **lm_eval_model_fields(system, args, info)}  # fmt: skip
            if gate is not None:  # the weights that gated, as model_info names the main model's
                stats["gate_model_info"] = gate.describe()
            return build_results(output, registry=registry, groups=groups, config={**config, **stats},
                                 started=started, finished=time.time(), resume=keys, reused=reuse)  # fmt: skip

        ckpt = checkpoint_path(s.out, system, stamp) if s.out is not None else None
        done = ev.EvaluationOutput(skipped=skipped)

        def on_task(task: str, outcome: ev.TaskOutcome) -> None:  # a killed run keeps every finished task
            done.outcomes[task] = outcome
            if ckpt is None:
                return
            if s.log_samples:  # before the checkpoint names the task, so a resume finds its samples
                from pqb.harness.evaluation.results import write_task_details

                write_task_details(ckpt.parent, task, outcome, stamp)
            write_checkpoint(ckpt, results_of(done), {n: o.replicates for n, o in done.outcomes.items()})

        output = ev.EvaluationOutput(stats={"index_calls": 0, "queries_scored": 0, "run_cache_hits": 0})
        if todo:
            output = ev.evaluate(retriever, todo, n_boot=s.n_boot, seed=s.seed, unit=s.unit,
                                 log_samples=s.log_samples, run_name=system, use_cache=use_cache,
                                 embed=gate.encode_queries if gate is not None else None, on_task=on_task)  # fmt: skip
        output.skipped = skipped
        result = self.write(results_of(output), system, output.outcomes, stamp,
                            reused_details={t: r.path for t, r in planned.items()})  # fmt: skip
        if ckpt is not None:
            ckpt.unlink(missing_ok=True)  # this run's tasks now live in the results file
        for used in consumed:  # kept out of the resume glob; the reused tasks' ``reused_from`` names it
            if used.exists():
                os.replace(used, resumed_path(used))
        return result

    @staticmethod
    def _object_name(model: Any, model_args: Any, name: str | None) -> str:
        """The system name of a Retriever object; refuses anything else, and model_args beside it."""
        if not isinstance(model, Retriever):
            raise UsageError(
                f"model must be a registered model name or a pqb.harness.Retriever, not {type(model).__name__} "
                "(subclass pqb.harness.Retriever: index(corpus) and score(queries), or search(queries, k))"
            )
        if model_args:
            raise UsageError("model_args apply to a model name; pass them to your retriever's constructor")
        return name or model.name

    # -- external runs --------------------------------------------------------------------------------------
    def score(self, runs: Sequence[str | Path], *, name: str | None = None) -> SessionOutput:
        """Every PQB metric from TREC run files of any system (one file, or two: all queries, then the error
        side); ``name`` (else the runs' tag) names it. Notes say what a run lacks; ``strict`` refuses."""
        from pqb.harness.evaluation.external_runs import (
            against_scores_note,
            check_documents,
            missing_note,
            read_runs,
            run_entries,
            same_sides_note,
            shallow_note,
            unknown_docs_note,
        )
        from pqb.harness.evaluation.results import (
            build_results,
            check_system_name,
            lm_eval_model_fields,
            timestamp,
        )
        from pqb.harness.evaluation.resume import resume_inputs

        s = self.settings
        started, stamp = time.time(), timestamp()
        self._bootstrap_note()
        trec = read_runs([Path(p) for p in runs])
        if note := same_sides_note(trec):
            if s.strict:
                raise DataError(f"--strict and {note.removeprefix('note: ')}")
            self.notify(note)
        system = name or trec.tag or "external"
        check_system_name(system)
        registry, tasks, groups = self.resolve()
        loaded, skipped = self.load(tasks, verb="be scored")
        opts = ev.ScoreOptions(s.n_boot, s.seed, s.unit, s.log_samples, system, ties_known=False)
        output = ev.EvaluationOutput(skipped=skipped)
        missing: dict[str, int] = {}
        unknown: dict[str, int] = {}
        for task, data in sorted(loaded.items()):
            match = run_entries(data, trec)
            check_documents(task, data, match, strict=s.strict)
            missing[task], unknown[task] = match.n_missing, match.n_docs_unknown
            output.outcomes[task] = ev.finish_task(data, match.entries, opts, {
                "n_queries_missing_from_run": match.n_missing, "n_run_docs_not_in_corpus": match.n_docs_unknown,
                "n_queries_shallower_than_k": match.n_shallow,
                "n_queries_ranks_against_scores": match.n_against_scores})  # fmt: skip
            if match.n_shallow:
                self.notify(shallow_note(task, data, match))
            if match.n_against_scores:
                self.notify(against_scores_note(task, data, match))
            if match.n_missing:
                self.notify(missing_note(task, data, trec, match.n_missing))
            if match.n_docs_unknown:
                self.notify(unknown_docs_note(task, match))
        settings = {"run_files": [f["sha256"] for f in trec.files]}
        keys = {t: resume_inputs(d, model=system, model_settings=settings, limit=s.limit, n_boot=s.n_boot,
                                 seed=s.seed, unit=s.unit) for t, d in loaded.items()}  # fmt: skip
        config: dict[str, Any] = {
            "model": system, "model_kwargs": {}, "model_info": {"name": system, "external_run": True},
            **lm_eval_model_fields(system, {}, {}),
            "seeds": {"bootstrap": s.seed}, "limit": s.limit, "device": None, "batch_size": None,
            "bootstrap": s.bootstrap_config(),
            "external_run": {"files": trec.files, "missing_query": "counted as a miss: unranked, no hit, RR 0",
                             "named_by": "--name" if name else "run tag" if trec.tag else "default",
                             "n_queries_missing": missing,
                             "unknown_document": "a run line whose document is not in the corpus: never a hit; "
                                                 "counted, refused under --strict",
                             "n_docs_not_in_corpus": unknown},
        }  # fmt: skip
        results = build_results(output, registry=registry, groups=groups, config=config, started=started,
                                finished=time.time(), resume=keys)  # fmt: skip
        return self.write(results, system, output.outcomes, stamp)

    # -- writing --------------------------------------------------------------------------------------------
    def write(self, results: dict[str, Any], system: str, outcomes: Mapping[str, ev.TaskOutcome], stamp: str,
              reused_details: Mapping[str, Path] | None = None) -> SessionOutput:  # fmt: skip
        """Write the results file (and, with ``log_samples``, each task's samples, run and qrels); without
        an output path the results are only checked against the schema and returned."""
        from pqb.harness.evaluation.results import validate_results, write_results

        s = self.settings
        if s.out is None:
            validate_results(results)
            return SessionOutput(results)
        path, extra = write_results(results, s.out, system, outcomes, s.log_samples, stamp=stamp,
                                    reused_details=reused_details or {})  # fmt: skip
        return SessionOutput(results, path, extra)

    def _bootstrap_note(self) -> None:
        if note := bootstrap_note(self.settings.n_boot):
            self.notify(note)


def gate_retriever(tasks: Sequence[TaskConfig], *, device: str | None = None,
                   batch_size: int | str | None = None) -> Any:  # fmt: skip
    """Query embedder (a dense retriever) for tasks using the authors' cosine pair gate, or ``None`` if
    no task gates.

    The gate model is ``--gate_model`` or the tasks' ``gate_model`` (a registered dense model or
    preset, e.g. ``gte-base`` as the authors used, or ``minilm`` offline); one model serves every
    task of the run, so all gated pairs are judged by the same embedding. It is built (weights
    identity, no weights loaded) before the resume plan: gated tasks' resume keys hold its
    ``cache_settings()``, since its name alone does not say which checkpoint gated.
    """
    from pqb.harness.registry import create_retriever

    gated = [t for t in tasks if t.similarity_gate is not None]
    if not gated:
        return None
    names = {t.gate_model for t in gated}
    if len(names) != 1 or None in names:
        raise TaskConfigError(
            f"tasks {[t.task for t in gated]} use the cosine pair gate but name gate models {sorted(map(str, names))}; "
            "pass one with --gate_model (e.g. gte-base, or minilm offline)"
        )
    model = create_retriever(names.pop(), None, device=device, batch_size=batch_size)
    if not hasattr(model, "encode_queries"):
        raise TaskConfigError(f"gate model {model.name!r} cannot embed queries; use a dense model or preset")
    return model


def evaluate(
    model: str | Retriever,
    tasks: str | Sequence[str] = "pqb",
    *,
    model_args: str | Mapping[str, Any] | None = None,
    name: str | None = None,
    limit: int | float | None = None,
    bootstrap_iters: int | None = None,
    seed: int | None = None,
    bootstrap_unit: str | None = None,
    dataset_path: str | os.PathLike[str] | None = None,
    include_path: Sequence[str | os.PathLike[str]] = (),
    output_path: str | Path | None = None,
    log_samples: bool = False,
    overwrite: str = "always",
    strict: bool = False,
    device: str | None = None,
    batch_size: int | str | None = None,
    gate_model: str | None = None,
    use_run_cache: bool = True,
    progress: bool = True,
    notify: Callable[[str], None] = _stderr,
) -> dict[str, Any]:
    """Evaluate a retriever on PQB tasks and return the results dict ``pqb-harness run`` writes.

    ``model`` is a registered model or preset (``"bm25"``, ``"minilm"``; ``model_args`` as on the command
    line, a ``"k=v,..."`` string or a dict) or a :class:`~pqb.harness.retrievers.base.Retriever` object
    (``name`` names it in the results; default its ``name``). ``tasks``: task, group or tag names, a
    list or a comma string. The other arguments are ``run``'s options (``bootstrap_iters`` is
    ``--bootstrap_iters``, ``use_run_cache=False`` is ``--no_run_cache``). With ``output_path`` the file
    is written too (and ``overwrite``, ``log_samples`` work as on the command line); without it nothing
    is written. Errors are :class:`pqb.harness.errors.PQBHarnessError` (``UsageError``, ``DataError``, ...).
    """
    from pqb.dataset.progress import progress_bars

    settings = SessionSettings(
        tasks=tasks, include_path=tuple(include_path), dataset_path=dataset_path, limit=limit,
        n_boot=bootstrap_iters, seed=seed, unit=bootstrap_unit, log_samples=log_samples,
        output_path=output_path, overwrite=overwrite, strict=strict,
    )  # fmt: skip
    with progress_bars(progress):
        out = EvaluationSession(settings, notify=notify).run(
            model, model_args, name=name, device=device, batch_size=batch_size, gate_model=gate_model,
            use_cache=use_run_cache,
        )  # fmt: skip
    return out.results
