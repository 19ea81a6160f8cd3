"""``pqb-build detector-quality``: the slip detector's precision and recall on its labelled sets."""

from __future__ import annotations

import argparse

HELP = (
    "Score the slip detector (or any corrector back-end) on the dev, held-out and test labelled sets "
    "(for the default back-end, the figures the card quotes)."
)
EPILOG = """examples:
  pqb-build detector-quality                 # all three sets; rewrites detector_quality.json
  pqb-build detector-quality --set test --no-write
  pqb-build detector-quality --corrector quire --labelled-sentences --output quire.json
  pqb-build detector-quality --corrector seq2seq:/models/t5-spell --device cuda --labelled-sentences
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
    parser.add_argument(
        "--corrector",
        default="symspell",
        help="back-end to score, as the errors stage names it: symspell (default; the only one whose "
        "figures are written to detector_quality.json), quire, gector:<path>, seq2seq:<path>",
    )
    parser.add_argument(
        "--labelled-sentences",
        action="store_true",
        help="correct only sentences holding a labelled token (slow back-ends; same precision and recall, "
        "flags outside the set counted only there)",
    )
    parser.add_argument("--device", default=None, help="device of a gector/seq2seq model (cpu, cuda)")
    parser.add_argument("--output", default=None, help="also write the result as JSON to this file")
    add_progress_argument(parser)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pqb.builders.reports.detector_eval import QUALITY_FILE, SETS, main
    from pqb.dataset import settings
    from pqb.dataset.io import atomic_write_json

    names = list(dict.fromkeys(args.set or SETS))  # a set named twice is scored once
    # the file always holds every set, and only the default back-end's figures (the card quotes them)
    write = not args.no_write and set(names) == set(SETS) and args.corrector == "symspell"
    if args.device and args.corrector.partition(":")[0] not in ("gector", "seq2seq"):
        print(f"error: --device applies to a gector or seq2seq model, not {args.corrector!r}")
        return 2
    kwargs = {"device": args.device} if args.device else {}
    result = main(
        str(args.amazon_dir or settings.PQB_AMAZON_DIR),
        write=write,
        sets=names,
        samples_dir=Path(args.samples_dir) if args.samples_dir else None,
        corrector=args.corrector,
        labelled_sentences=args.labelled_sentences,
        **kwargs,
    )
    if args.output:
        atomic_write_json(Path(args.output), result)
    print(f"corrector: {args.corrector}")
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
    print(
        f"written: {QUALITY_FILE}"
        if write
        else "not written (--no-write, a subset of the sets, or not the default corrector)"
    )
    return 0
