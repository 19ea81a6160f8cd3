"""``pqb-build detector-quality``: the slip detector's precision and recall on its labelled sets."""

from __future__ import annotations

import argparse

HELP = "Score the slip detector on the dev, held-out and test labelled sets (the figures the card quotes)."
EPILOG = """examples:
  pqb-build detector-quality                 # all three sets; rewrites detector_quality.json
  pqb-build detector-quality --set test --no-write
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from pqb.builders.cli._common import add_progress_argument
    from pqb.builders.reports.detector_eval import SETS

    parser.add_argument(
        "--amazon-dir", default=None, help="the amazon2023-mini slice (default $PQB_AMAZON_DIR)"
    )
    parser.add_argument(
        "--samples-dir", default=None, help="the test set's review samples (default: amazon2023 beside it)"
    )
    parser.add_argument(
        "--set", action="append", choices=list(SETS), default=None, help="set(s) to score (default: all)"
    )
    parser.add_argument(
        "--no-write", action="store_true", help="print only; do not rewrite detector_quality.json"
    )
    add_progress_argument(parser)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pqb.builders.reports.detector_eval import QUALITY_FILE, SETS, main
    from pqb.dataset import settings

    names = list(dict.fromkeys(args.set or SETS))  # a set named twice is scored once
    write = not args.no_write and set(names) == set(SETS)  # the file always holds every set
    result = main(
        str(args.amazon_dir or settings.PQB_AMAZON_DIR),
        write=write,
        sets=names,
        samples_dir=Path(args.samples_dir) if args.samples_dir else None,
    )
    print(
        "| set | tokens | slips | misspellings | flags | precision | recall (misspellings) | recall (all) "
        "| flags outside the set |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        r = result[name]
        print(
            f"| {name} | {r['labelled_tokens']} | {r['labelled_slips']} | {r['labelled_char_slips']} | "
            f"{r['flags_labelled']} | {100 * r['precision']:.1f}% | {100 * r['recall_char']:.1f}% | "
            f"{100 * r['recall_all']:.1f}% | {r['flags_unlabelled']} |"
        )
    print(f"written: {QUALITY_FILE}" if write else "not written (--no-write or a subset of the sets)")
    return 0
