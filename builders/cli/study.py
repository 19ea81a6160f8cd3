"""``pqb-build study {export,judge,adjudicate,report}``: the paper's §06 validation study.

export: a blinded, stratified pool of PQB queries, the authors' release and real review sentences ->
a sheet folder for annotators (CSV + HTML form + instructions) and a key kept apart.
judge: the pool's items through an OpenAI-compatible chat endpoint (resumable, cached).
adjudicate: the items the primary annotators disagree on -> a sheet for the third annotator.
report: the §06 tables (LLM and Human per source, alpha / kappa) beside the paper's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pqb.builders.study.rubric import HUMAN_RATERS
from pqb.dataset.argtypes import OneLineParser, non_negative_int, positive_int, safe_name

HELP = "The paper's validation study: blinded sheet export, LLM judge, adjudication, and the §06 report."
EPILOG = """examples:
  pqb-build study export --domain video_games --n-items 360 --out study/          # study/sheet/ + study/key.json
  pqb-build study judge --key study/key.json --endpoint http://localhost:8000/v1 --model my-model --out study/judge
  pqb-build study adjudicate --key study/key.json --sheets filled_ann1.csv filled_ann2.csv --out study/adjudication
  pqb-build study report --key study/key.json --sheets filled_*.csv --adjudication filled_ann3.csv --judge study/judge
"""

ACTIONS = ("export", "judge", "adjudicate", "report")
NEEDS = {"export": ["build"], "judge": [], "adjudicate": [], "report": ["study"]}
"""The extras each action needs (export splits review sentences with spaCy; report computes alpha/kappa)."""


def _progress(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-progress",
        "--no_progress",
        dest="no_progress",
        action="store_true",
        help="draw no progress bars",
    )


def _key(p: argparse.ArgumentParser) -> None:
    p.add_argument("--key", required=True, help="the study's key.json (written by `study export`)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="{" + ",".join(ACTIONS) + "}",
                                parser_class=OneLineParser)  # fmt: skip
    ex = sub.add_parser("export", help="blinded, stratified sheet + HTML form, and the key kept apart")
    ex.add_argument("--domain", action="append", type=safe_name, default=None,
                    help="a domain (repeat for several; default video_games)")  # fmt: skip
    ex.add_argument(
        "--n-items", type=positive_int, default=360, help="items in the pool (default 360, the paper's)"
    )
    ex.add_argument("--sources", default=None,
                    help="comma list of pqb, pqb_baseline, authors, real (default pqb,authors,real, blinded in one "
                         "pool; pqb_baseline is added when --baseline-dataset-path is given)")  # fmt: skip
    ex.add_argument(
        "--dataset-path", default="pqb_dataset", help="built dataset folder (default pqb_dataset)"
    )
    ex.add_argument("--baseline-dataset-path", default=None,
                    help="a second PQB build rated in the same pool as source pqb_baseline (a before/after)")  # fmt: skip
    ex.add_argument(
        "--release-dir", default=None, help="the authors' <Category>.json (default $PQB_RELEASE_DIR)"
    )
    ex.add_argument(
        "--source", default=None, help="local Amazon Reviews 2023 folder (default $PQB_AMAZON_DIR)"
    )
    ex.add_argument(
        "--seed", type=non_negative_int, default=0, help="seed of the draw, A/B and order (default 0)"
    )
    ex.add_argument(
        "--out", default="study", help="output folder: <out>/sheet/ for annotators, <out>/key.json"
    )
    _progress(ex)

    ju = sub.add_parser(
        "judge", help="rate the pool's items with an LLM through an OpenAI-compatible endpoint"
    )
    _key(ju)
    ju.add_argument(
        "--endpoint", required=True, help="base URL of the chat API, e.g. http://localhost:8000/v1"
    )
    ju.add_argument("--model", required=True, help="model id sent to the endpoint")
    ju.add_argument("--api-key-env", default="OPENAI_API_KEY",
                    help="environment variable holding the API key (default OPENAI_API_KEY; unset: no key sent)")  # fmt: skip
    ju.add_argument(
        "--limit", type=positive_int, default=None, help="judge only the first N items of the sheet order"
    )
    ju.add_argument("--max-tokens", type=positive_int, default=64, help="reply length cap (default 64)")
    ju.add_argument(
        "--max-retries", type=non_negative_int, default=3, help="retries per item on 429/5xx/timeouts"
    )
    ju.add_argument("--timeout", type=positive_int, default=120, help="seconds per request (default 120)")
    ju.add_argument("--seed", type=non_negative_int, default=0, help="the request's seed field (default 0)")
    ju.add_argument(
        "--out", required=True, help="folder for judgments.jsonl (the resumable cache) and judge.json"
    )
    _progress(ju)

    ad = sub.add_parser("adjudicate", help="sheet of the items the primary annotators disagree on")
    _key(ad)
    ad.add_argument("--sheets", nargs="+", required=True, help="the primary annotators' filled sheets")
    ad.add_argument(
        "--strict", action="store_true", help="refuse a sheet with a bad row instead of counting it"
    )
    ad.add_argument("--out", required=True, help="folder for the adjudicator's sheet (CSV + HTML form)")
    _progress(ad)

    rp = sub.add_parser("report", help="the §06 tables beside the paper's")
    _key(rp)
    rp.add_argument("--sheets", nargs="*", default=[], help="the primary annotators' filled sheets")
    rp.add_argument("--adjudication", nargs="*", default=[], help="the third annotator's filled sheet(s)")
    rp.add_argument(
        "--raters", default=HUMAN_RATERS,
        help=f"who filled the sheets, as the report names them (default {HUMAN_RATERS!r}); anything else, "
        "e.g. 'AI helper agents', heads their columns 'Panel', never 'Human'",
    )  # fmt: skip
    rp.add_argument("--judge", default=None, help="a `study judge --out` folder")
    rp.add_argument("--n-boot", type=positive_int, default=1000, help="bootstrap resamples (default 1000)")
    rp.add_argument("--seed", type=non_negative_int, default=0, help="bootstrap seed (default 0)")
    rp.add_argument(
        "--strict", action="store_true", help="refuse a sheet with a bad row instead of counting it"
    )
    rp.add_argument("--out", default=None, help="output folder (default: the key's folder)")
    _progress(rp)


def _export(args: argparse.Namespace) -> int:
    from pqb.builders.errors import UsageError
    from pqb.builders.study.pool import SOURCES, domain_candidates, stratified
    from pqb.builders.study.sheet import export_sheet

    default = "pqb,pqb_baseline,authors,real" if args.baseline_dataset_path else "pqb,authors,real"
    sources = [s.strip() for s in (args.sources or default).split(",") if s.strip()]
    if bad := [s for s in sources if s not in SOURCES]:
        raise UsageError(f"--sources: unknown {', '.join(bad)} (choose from {', '.join(SOURCES)})")
    domains = args.domain or ["video_games"]
    cands, read = {}, {}
    for d in domains:
        cands[d], read[d] = domain_candidates(d, sources=sources, dataset_dir=args.dataset_path,
                                              baseline_dir=args.baseline_dataset_path, release_dir=args.release_dir, amazon_dir=args.source, seed=args.seed)  # fmt: skip
    items, allocation = stratified(cands, args.n_items, args.seed)
    out = Path(args.out)
    info = {"seed": args.seed, "n": args.n_items, "sources": sources, "domains": domains, "allocation": allocation,
            "inputs": {"dataset": args.dataset_path, "baseline_dataset": args.baseline_dataset_path, "release_dir": args.release_dir, "amazon": args.source, "read": read}}  # fmt: skip
    export_sheet(items, out / "sheet", out / "key.json", info)
    print(json.dumps({"items": len(items), "allocation": allocation}, indent=1))
    short = {k: v for k, v in allocation.items() if v["drawn"] < v["target"]}
    if short:
        print(f"note: {len(short)} stratum(s) short of their share: "
              + "; ".join(f"{k} {v['drawn']} of {v['target']}" for k, v in short.items()), file=sys.stderr)  # fmt: skip
    print(
        f"sheet for annotators: {out / 'sheet'}/ (sheet.csv, form.html, instructions.md); key kept apart: {out / 'key.json'}"
    )
    return 0


def _judge(args: argparse.Namespace) -> int:
    from pqb.builders.study.judge import ChatClient, api_key_from_env, judge_items
    from pqb.builders.study.sheet import key_items, load_key
    from pqb.dataset.io import atomic_write_json

    key = load_key(args.key)
    client = ChatClient(args.endpoint, args.model, api_key=api_key_from_env(args.api_key_env), max_tokens=args.max_tokens,
                        seed=args.seed, timeout=args.timeout, max_retries=args.max_retries)  # fmt: skip
    report = judge_items(key_items(key), client, args.out, limit=args.limit)
    atomic_write_json(Path(args.out) / "judge.json", report)
    print(
        json.dumps(
            {k: report[k] for k in ("model", "served_models", "counts", "retries", "seconds_per_asked_item")},
            indent=1,
        )
    )
    return 0


def _adjudicate(args: argparse.Namespace) -> int:
    from pqb.builders.study.agreement import disagreements
    from pqb.builders.study.rubric import BY_NAME, RATING_COLUMNS
    from pqb.builders.study.sheet import adjudication_items, export_sheet, load_key, read_filled

    key = load_key(args.key)
    ratings = read_filled(args.sheets, key, strict=args.strict)
    split = sorted({i for d in RATING_COLUMNS for i in disagreements(BY_NAME[d], ratings.values[d])})
    items = adjudication_items(key, split)
    out = Path(args.out)
    export_sheet(
        items,
        out,
        out.parent / f"{out.name}_key.json",
        {"adjudication_of": args.sheets, "source_key": str(args.key)},
    )
    print(f"{len(items)} item(s) with a disagreement; sheet for the third annotator: {out}/")
    return 0


def _report(args: argparse.Namespace) -> int:
    from pqb.builders.errors import UsageError
    from pqb.builders.study.report import domains_of, human_results, llm_results, sources_of, write_report
    from pqb.builders.study.sheet import load_key, read_filled

    key = load_key(args.key)
    if not args.sheets and not args.judge:
        raise UsageError("nothing to report: pass --sheets (filled sheets) and/or --judge (a judge folder)")
    report: dict = {
        "domains": domains_of(key),
        "sources": sources_of(key),
        "key": str(args.key),
        "n_items": len(key["items"]),
    }
    if args.sheets:
        primaries = read_filled(args.sheets, key, strict=args.strict)
        adjudication = read_filled(args.adjudication, key, strict=args.strict) if args.adjudication else None
        report["human"] = human_results(key, primaries, adjudication, n_boot=args.n_boot, seed=args.seed)
        report["human"]["raters"] = args.raters
    judge = None
    if args.judge:
        path = Path(args.judge) / "judge.json"
        if not path.is_file():
            raise UsageError(
                f"no judge.json in {args.judge}; run `pqb-build study judge --out {args.judge}` first"
            )
        judge = json.loads(path.read_text(encoding="utf-8"))
        report["llm"] = llm_results(key, judge, n_boot=args.n_boot, seed=args.seed)
    md = write_report(args.out or Path(args.key).parent, report, judge)
    print(md.read_text(encoding="utf-8"))
    print(f"table: {md}")
    return 0


def run(args: argparse.Namespace) -> int:
    return {"export": _export, "judge": _judge, "adjudicate": _adjudicate, "report": _report}[args.action](
        args
    )
