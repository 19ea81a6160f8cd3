"""What every single-stage ``pqb-build`` subcommand shares: its four arguments, its report, its guard."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pqb.dataset.argtypes import non_negative_int, positive_int, safe_name

if TYPE_CHECKING:
    from pqb.builders.executor import Executor


def add_stage_arguments(parser: argparse.ArgumentParser) -> None:
    """``--domain``, ``--workdir``, ``--seed``, ``--force``: where a stage runs and whether it reruns."""
    parser.add_argument("--domain", default="video_games", type=safe_name,
                        help="config name, e.g. video_games (default)")  # fmt: skip
    parser.add_argument("--workdir", default="work", help="build work directory root (default: ./work)")
    parser.add_argument(
        "--seed", type=non_negative_int, default=0, help="seed for every random choice (default 0)"
    )
    parser.add_argument("--force", action="store_true", help="rerun the stage even if it is up to date")
    add_progress_argument(parser)


def add_progress_argument(parser: argparse.ArgumentParser) -> None:
    """``--no-progress``: :func:`pqb.builders.cli.main` turns every progress bar off with it."""
    parser.add_argument("--no-progress", action="store_true", help="draw no progress bars")


def add_strict_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--strict",
        action="store_true",
        help="fail on the first bad input line (malformed, not UTF-8, required field missing, wrong type, "
        "overlong text) instead of counting it",
    )


def add_link_argument(parser: argparse.ArgumentParser) -> None:
    """``--link``, defaulting to what ``pqb-build all`` uses, so the stages run one by one build what
    ``all`` builds (they once defaulted to ``reviewers``, which on the embedded slice links almost no
    user: its reviewers almost never review products with full metadata)."""
    from pqb.builders.config import EMBEDDED_DEFAULT as D

    parser.add_argument(
        "--link",
        choices=("reviewers", "any"),
        default=D.link,
        help=f"product-user links (default {D.link}, as `pqb-build all`: a seeded subset of qualified users "
        "per target; reviewers: the users who reviewed it)",
    )


def workdir_of(args: argparse.Namespace) -> Any:
    """The ``--workdir``/``--domain`` work directory a single-stage command runs in."""
    from pqb.builders.workdir import WorkDir

    return WorkDir(Path(args.workdir), args.domain)


def add_executor_arguments(parser: argparse.ArgumentParser) -> None:
    """``--executor``, ``--workers``, ``--ray-address``: where the per-chunk maps (parsing, encoding, audits,
    error detection) run, never what they output."""
    parser.add_argument(
        "--executor", choices=("local", "ray"), default="local",
        help="local processes (default) or a Ray cluster (pip install 'pqb-benchmark[ray]')",
    )  # fmt: skip
    parser.add_argument(
        "--workers", type=positive_int, default=1, help="local worker processes (default 1: this process)"
    )
    parser.add_argument(
        "--ray-address", default=None,
        help="with --executor ray: 'auto' (the cluster this node joined), ray://<head>:10001, or none for "
        "a private local Ray",
    )  # fmt: skip


def executor_from_args(args: argparse.Namespace) -> Executor:
    from pqb.builders.executor import make_executor

    return make_executor(args.executor, workers=args.workers, address=args.ray_address)


def report(name: str, stats: dict[str, Any]) -> None:
    """Print a stage's stats (the manifest copy) as indented JSON."""
    print(f"[{name}] " + ("up to date, skipped" if stats.get("skipped") else "done"))
    print(json.dumps(stats, indent=1, sort_keys=True, default=str))


def guarded(fn: Callable[[], int | None]) -> int:
    """Run a command; a :class:`~pqb.builders.errors.BuildError` (bad input, bad invocation, missing
    resource) becomes one line ``error: ...`` on stderr and the error's exit code, not a traceback.

    ``pqb-build`` runs every subcommand through this; other exceptions are bugs and keep their traceback.
    """
    from pqb.builders.errors import BuildError, MissingExtraError
    from pqb.dataset.extras import DISTRIBUTION, module_extra, pip_install_line

    try:
        try:
            return int(fn() or 0)
        except ModuleNotFoundError as exc:  # an extra's module the up-front check did not foresee
            extra = module_extra(exc.name or "")
            if extra is None:
                raise
            raise MissingExtraError(
                f"this command needs the Python package {exc.name!r} from {DISTRIBUTION}[{extra}], not installed here; "
                f"install it with: {pip_install_line([extra])}"
            ) from exc
    except BuildError as exc:
        print("error: " + " ".join(str(exc).split()), file=sys.stderr)
        return exc.exit_code
    except OSError as exc:  # EFBIG, ENOSPC, ...: one line, exit 1; any other OSError is a bug
        from pqb.dataset.io import write_failure

        if (message := write_failure(exc)) is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return 1
