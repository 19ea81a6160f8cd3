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


class ResourceUnavailableError(BuildError):
    """A model or a remote file the build needs cannot be loaded here (offline, not installed)."""
