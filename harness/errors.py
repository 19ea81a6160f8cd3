"""Every exception the harness raises, in one module (huggingface_hub ``errors.py`` style).

Each specialises the builtin it refines, so callers may catch either (``except KeyError`` still
catches an unknown task). Messages say what was wrong, where (``file:line`` for a task YAML, the file
path for a damaged parquet), the offending value and the fix. The CLI dispatcher
(:func:`pqb.harness.cli.main`) is the one place that catches them: it prints any ``details`` lines, then
``error: <message>`` as one line, and exits with the error's ``exit_code`` — 2 for usage errors (a bad
argument, option or task YAML: the user must change the command), 1 for data errors (the dataset,
a results file or the network is at fault: the command was right).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from pqb.dataset.extras import pip_install_line


def did_you_mean(name: str, choices: Iterable[str], *, n: int = 3) -> str:
    """``" Did you mean 'bm25'?"`` or ``""``: the close matches difflib finds among ``choices``."""
    matches = difflib.get_close_matches(name, sorted(set(choices)), n=n, cutoff=0.5)
    if not matches:
        return ""
    return " Did you mean " + " or ".join(repr(m) for m in matches) + "?"


def unknown_name_message(kind: str, name: str, choices: Iterable[str]) -> str:
    """``Unknown model 'bm52'. Did you mean 'bm25'? Available: bm25, dense, ...``."""
    choices = sorted(set(choices))
    return f"Unknown {kind} {name!r}.{did_you_mean(name, choices)} Available: {', '.join(choices)}."


class PQBHarnessError(Exception):
    """Base class: the CLI turns any of these into a one-line message and exit code ``exit_code``.

    ``details`` are extra lines printed before the message (e.g. every violation of an invalid
    dataset), so the one-line message can stay short while nothing is hidden.
    """

    exit_code: int = 2

    def __init__(self, *args: object, details: Iterable[str] = ()) -> None:
        super().__init__(*args)
        self.details = tuple(details)


class UsageError(PQBHarnessError, ValueError):
    """A command-line value out of range or contradicting another option (exit code 2)."""


# -- registries -------------------------------------------------------------------------------------


class UnknownTaskError(PQBHarnessError, KeyError, ValueError):
    """A task, group or tag name that no YAML file defines."""

    def __init__(self, name: str, choices: Iterable[str]) -> None:
        self.name = name
        self.message = unknown_name_message("task", name, choices)
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would repr() the message otherwise
        return self.message


class UnknownModelError(PQBHarnessError, KeyError, ValueError):
    """A model name that is neither registered nor a preset."""

    def __init__(self, name: str, choices: Iterable[str]) -> None:
        self.name = name
        self.message = unknown_name_message("model", name, choices)
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


class RegistryError(PQBHarnessError, ValueError):
    """A second, different object registered under an existing name, or a bad ``module:Class`` path."""


# -- configuration ----------------------------------------------------------------------------------


class TaskConfigError(PQBHarnessError, ValueError):
    """A task YAML that cannot be read: bad YAML, unknown keys, a missing include, a wrong type."""


class ModelArgsError(PQBHarnessError, ValueError):
    """A ``--model_args`` item that is malformed, unknown to the model, of the wrong type or out of range."""


class MissingDependencyError(PQBHarnessError, ImportError):
    """An optional dependency a retriever needs is not installed; the message gives the install line."""

    def __init__(self, what: str, module: str, extra: str, install: str | None = None) -> None:
        self.what, self.module, self.extra = what, module, extra
        self.install = install or pip_install_line([extra])
        super().__init__(
            f"{what} needs the Python package {module!r}, which is not installed. "
            f"Install everything it needs with: {self.install}"
        )


# -- data -------------------------------------------------------------------------------------------


class DatasetNotFoundError(PQBHarnessError, FileNotFoundError):
    """A dataset config the task needs is absent (not built locally); the evaluator records a skip."""

    exit_code = 1


class DataError(PQBHarnessError, ValueError):
    """Dataset content the evaluator cannot use (e.g. a damaged parquet file, duplicate ids)."""

    exit_code = 1


class DatasetUnavailableError(DataError):
    """The dataset itself (not one config) is neither a local folder nor reachable on the Hub."""


class DatasetInvalidError(DataError):
    """A dataset that breaks the schema or PQB's invariants; ``details`` lists every violation."""


class ResultsSchemaError(PQBHarnessError, ValueError):
    """A results file that does not match ``harness/evaluation/results_schema.json``."""

    exit_code = 1


class EditedResultsError(ResultsSchemaError):
    """A results file whose content disagrees with its digest or with itself (an estimate outside its CI,
    a one-domain group unlike its task, metrics its stored ranks do not give); ``--allow-edited`` reads it
    with a note instead (:mod:`pqb.harness.evaluation.integrity`)."""


class PublishError(PQBHarnessError, RuntimeError):
    """Pushing results to the Hub failed (network, token, permissions); the local files are kept."""

    exit_code = 1


class NoResultsError(PQBHarnessError, FileNotFoundError):
    """No ``results_*.json`` file was found under the paths given to the leaderboard."""


class HubPublishError(PQBHarnessError, ValueError):
    """A file to publish is missing or lies outside the output folder it should be published from."""


class ModelNotAvailableError(PQBHarnessError, FileNotFoundError):
    """A checkpoint could not be loaded: not a local folder, and not obtainable from the Hub here.

    A ``PQBHarnessError``, so ``pqb-harness run`` prints it as one line (what is missing, how to provide it).
    Exit code 1, as for every network or resource failure (the README's rule): the command was fine.
    """

    exit_code = 1
