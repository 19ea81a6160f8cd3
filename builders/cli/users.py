"""``pqb-build users``: sentences, profile/held-out split, qualified users, product links, the linked users' sentences."""

from __future__ import annotations

import argparse

from pqb.builders.cli._common import (
    add_executor_arguments,
    add_link_argument,
    add_stage_arguments,
    executor_from_args,
    report,
    workdir_of,
)
from pqb.dataset.argtypes import at_least, positive_int

HELP = (
    "Count every user's sentences, qualify users, link targets to users, write the linked users' sentences."
)
EPILOG = """examples:
  pqb-build users --domain video_games
  pqb-build users --domain video_games --link any --link-users-per-product 4 --min-sentences 10
  pqb-build users --domain video_games --link reviewers --min-profile 40 --min-heldout 10 --max-sentences 200
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_stage_arguments(parser)
    add_executor_arguments(parser)
    add_link_argument(parser)
    parser.add_argument(
        "--link-users-per-product", type=positive_int, default=4, help="users per target with --link any"
    )
    parser.add_argument(
        "--min-sentences", type=positive_int, default=10, help="qualify: at least this many sentences"
    )
    parser.add_argument(
        "--min-profile", type=at_least(2), default=8, help="qualify: at least this many profile sentences"
    )
    parser.add_argument(
        "--min-heldout", type=positive_int, default=2, help="qualify: at least this many held-out sentences"
    )
    parser.add_argument(
        "--max-sentences", type=positive_int, default=None,
        help="the syntactic profile reads at most this many of a user's sentences, in the split's "
        "proportions and seeded hash order (default: all; the paper preset: 200)",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from pqb.builders.config import BuildConfig, UserConfig
    from pqb.builders.source.stage import run_users

    users = UserConfig(
        min_sentences=args.min_sentences,
        min_profile=args.min_profile,
        min_heldout=args.min_heldout,
        max_sentences=args.max_sentences,
        link=args.link,
        link_users_per_product=args.link_users_per_product,
        seed=args.seed,
    )
    executor = executor_from_args(args)
    try:
        cfg = BuildConfig(seed=args.seed, users=users, executor=executor)
        report("users", run_users(workdir_of(args), cfg, force=args.force))
    finally:
        executor.close()
    return 0
