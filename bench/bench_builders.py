"""Benchmark the first builder stages on the offline slice: spaCy throughput and stage wall times.

Usage: ``python bench/bench_builders.py [--domain video_games] [--source DIR] [--out bench.json]``.
Runs ingest → users → profiles → validate syntax in a temporary work directory with a fresh parse
cache (cold: spaCy really runs), then re-parses the same sentences with a warm cache, and prints JSON.
The reference is plain ``nlp.pipe`` over the same sentences in the same run: the cold ratio shows what
our parse extraction and cache writes cost on top of spaCy itself.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--domain", default="video_games")
    ap.add_argument(
        "--source", default=None, help="local Amazon Reviews 2023 directory (default $PQB_AMAZON_DIR)"
    )
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--out", default=None, help="also write the JSON here")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="pqb-bench-") as tmp:
        os.environ["PQB_CACHE_DIR"] = str(Path(tmp) / "cache")
        from pqb.dataset import settings

        settings.PQB_CACHE_DIR = Path(tmp) / "cache"
        from pqb.builders.config import BuildConfig
        from pqb.builders.nlp import load_spacy, spacy_model_id
        from pqb.builders.parses import ParseCache, parse_texts
        from pqb.builders.reports.attribution import run_validate_syntax
        from pqb.builders.source.stage import run_ingest, run_users
        from pqb.builders.syntax.stage import run_profiles
        from pqb.builders.workdir import WorkDir, read_parquet

        t = time.perf_counter()
        nlp = load_spacy()
        load_s = time.perf_counter() - t
        work = Path(tmp) / "work"
        wd, cfg = WorkDir(work, args.domain), BuildConfig(source=args.source, n_boot=args.n_boot)
        out: dict = {"spacy_model": spacy_model_id(nlp), "spacy_load_seconds": round(load_s, 3), "stages": {}}
        for name, fn in (
            ("ingest", lambda: run_ingest(wd, cfg)),
            ("users", lambda: run_users(wd, cfg)),
            ("profiles", lambda: run_profiles(wd, cfg)),
            ("validate_syntax", lambda: run_validate_syntax(wd, cfg)),
        ):
            t = time.perf_counter()
            stats = fn()
            out["stages"][name] = {"wall_seconds": round(time.perf_counter() - t, 3)}
            for k in ("reviews", "products", "targets", "sentences", "users_qualified", "sentences_per_second",
                      "vocab_size", "gaussians", "parse_seconds", "encoder_seconds"):  # fmt: skip
                if k in stats:
                    out["stages"][name][k] = stats[k]
        texts = read_parquet(work / args.domain / "sentences.parquet").column("text").to_pylist()
        nocache = ParseCache(None)
        sample = sorted(set(texts))[:2000]
        t = time.perf_counter()
        parse_texts(sample, nlp=nlp, cache=nocache)
        cold = time.perf_counter() - t
        t = time.perf_counter()
        parse_texts(texts, nlp=nlp)
        warm = time.perf_counter() - t
        t = time.perf_counter()
        for _ in nlp.pipe(sample, batch_size=256):  # reference: spaCy alone, same pipeline, same run
            pass
        raw = time.perf_counter() - t
        out["spacy_parse_sentences_per_second_cold"] = round(len(sample) / cold, 1)
        out["spacy_pipe_reference_sentences_per_second"] = round(len(sample) / raw, 1)
        out["parse_cold_ratio_vs_reference"] = round(raw / cold, 2)  # 1.0 = no overhead beyond spaCy
        out["parse_cache_sentences_per_second_warm"] = round(len(texts) / warm, 1)
        out["review_sentence_split_sentences_per_second"] = out["stages"]["users"].get("sentences_per_second")
    text = json.dumps(out, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
