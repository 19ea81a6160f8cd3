"""``pqb-build generate``: candidate queries for every target product, through the validity filters."""

from __future__ import annotations

import argparse

from pqb.builders.cli._common import add_stage_arguments, report, workdir_of
from pqb.dataset.argtypes import candidates_per_product, positive_int, unit_interval

HELP = "Generate candidate queries per target product (realizer, llm or openai) and filter them."
EPILOG = """examples:
  pqb-build generate --domain video_games                      # offline grammar realizer, 50 per product
  pqb-build generate --domain video_games --n 100 --semantic   # + MiniLM semantic gate
  pqb-build generate --backend llm --generator-model Qwen/Qwen2.5-0.5B-Instruct
  pqb-build generate --backend openai --generator-model my-model --base-url http://localhost:8000/v1
"""


def add_filter_arguments(parser: argparse.ArgumentParser) -> None:
    """Generation and filter options (shared with ``pqb-build all``)."""
    parser.add_argument("--backend", choices=("realizer", "llm", "openai"), default="realizer")
    parser.add_argument(
        "--generator-model", default=None, help="Hub id or local path (llm), model name (openai)"
    )
    parser.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (openai back-end)")
    parser.add_argument(
        "--n", type=candidates_per_product, default=50, help="candidates per product (default 50)"
    )
    parser.add_argument("--min-words", type=positive_int, default=5)
    parser.add_argument("--max-words", type=positive_int, default=40)
    parser.add_argument(
        "--semantic", action=argparse.BooleanOptionalAction, default=None,
        help="semantic gate (default: on for llm/openai when MiniLM loads, off for the realizer)",
    )  # fmt: skip
    parser.add_argument("--semantic-threshold", type=unit_interval, default=0.6)
    parser.add_argument("--semantic-model", default="minilm", help="'minilm' (offline wheel), Hub id or path")


def generator_kwargs(args: argparse.Namespace) -> dict[str, str]:
    kw = {}
    if args.backend in ("llm", "openai"):
        if not args.generator_model:
            raise SystemExit(f"--backend {args.backend} needs --generator-model <hub id, path or model name>")
        kw["model"] = args.generator_model
    if args.backend == "openai" and args.base_url:
        kw["base_url"] = args.base_url
    return kw


def filter_config(args: argparse.Namespace) -> object:
    from pqb.builders.config import FilterConfig
    from pqb.builders.queries.filters import semantic_available

    semantic = args.semantic
    if semantic is None:
        semantic = args.backend != "realizer" and semantic_available(args.semantic_model)
    return FilterConfig(
        min_words=args.min_words, max_words=args.max_words, semantic=semantic,
        semantic_threshold=args.semantic_threshold, semantic_model=args.semantic_model,
    )  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_stage_arguments(parser)
    add_filter_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from pqb.builders.config import BuildConfig
    from pqb.builders.queries.generate import run_generate

    cfg = BuildConfig(
        seed=args.seed, generator=args.backend, n_candidates=args.n, filters=filter_config(args),
        generator_kwargs=generator_kwargs(args),
    )  # fmt: skip
    stats = run_generate(workdir_of(args), cfg, force=args.force)
    report(f"generate {args.domain}", stats)
    return 0
