"""The builders' exception base: a failure the user can fix, reported by ``pqb-build`` as one line.

Every builder exception that stands for bad input, a bad invocation or a missing resource derives from
:class:`BuildError`; the CLI (:func:`pqb.builders.cli._common.guarded`) prints ``error: <message>`` and
exits with the class's :attr:`~BuildError.exit_code` instead of showing a traceback. Anything else
escaping a stage is a bug and keeps its traceback. The module is called ``faults`` because
"errors" already means the users' writing errors in this package (``pqb.builders.writing_errors.profiles``).

Messages follow one rule: what is wrong, where (``file:line`` when it is input), and the fix.
"""

from __future__ import annotations

EXIT_DATA = 1
"""Exit status for bad input data or an unavailable resource (the command line itself was fine)."""
EXIT_USAGE = 2
"""Exit status for a bad invocation (argparse uses 2 as well)."""


class BuildError(Exception):
    """A build cannot go on for a reason the user can fix; ``str(exc)`` is the whole one-line report."""

    exit_code: int = EXIT_DATA


class DataError(BuildError):
    """The input data is unusable (message names the file, and the line when there is one)."""


class UsageError(BuildError):
    """The command line asks for something that cannot be done (wrong source, domain or stage order)."""

    exit_code = EXIT_USAGE


class MissingExtraError(UsageError, ImportError):
    """A command needs an optional extra that is not installed; the message is the one ``pip install`` line."""


class ResourceUnavailableError(BuildError):
    """A model or a remote file the build needs cannot be loaded here (offline, not installed)."""


class InsufficientDataError(DataError, ValueError):
    """A stage cannot produce its artifacts from this domain's data (too few users or sentences)."""


class EmptyInputError(DataError):
    """A source file yields no usable record (empty, or every line counted bad)."""


class MalformedLineError(DataError, ValueError):
    """A line that would be counted (malformed, not UTF-8, ...) under ``strict=True``: ``file:line: what``."""


class CorruptFileError(DataError):
    """An input file cannot be read to its end (a truncated or corrupt ``.gz``)."""


class SourceFileNotFoundError(UsageError, FileNotFoundError):
    """The requested category file is not in the source."""


class HubPushError(ResourceUnavailableError, RuntimeError):
    """The Hub push cannot run here (offline, unreachable, refused): the local dataset is unchanged."""


class FolderBusyError(ResourceUnavailableError):
    """Another process holds the folder's writer lock (:func:`pqb.builders.workdir.writer_lock`): the message
    names its pid and command."""


class SourceUnavailableError(ResourceUnavailableError):
    """A Hub file cannot be fetched (offline, unknown repo or revision) and is not in the local cache."""


class SchemaViolationError(DataError, ValueError):
    """A table about to be published does not match :mod:`pqb.dataset.schema`."""


class SpacyModelNotFoundError(ResourceUnavailableError, OSError):
    """No spaCy pipeline of the configured names is installed."""


class GecModelNotFoundError(ResourceUnavailableError, OSError):
    """The weights of a grammar-correction back-end are not installed / not reachable."""


class UnknownBackendError(UsageError, ValueError):
    """A corrector name that :func:`get_corrector` does not know."""


class MissingInputError(UsageError, FileNotFoundError):
    """A stage input artifact (e.g. ``sentences.parquet``) has not been built yet."""


class TextTooLongError(DataError):
    """A text is over spaCy's ``max_length``: spaCy would abort with E088 after minutes of work."""
