"""Builder benchmarks: streaming stages on LOAD-TEST review files, spaCy overhead, pairing, cached rerun.

Usage::

    python bench/bench_builders.py [--sizes 100000 1000000] [--reviews distinct|resampled] [--workers 2]
                                   [--embedded] [--out bench.json]
    python bench/bench_builders.py --preset paper --domain-size video_games [--scale 1.0] [--workers 2]
                                   [--fit-scale 0.1] [--harness bm25 minilm splade-tiny]
                                   [--json bench/paper_scale.json]

The second form is the paper-scale measurement of issue 46 (``bench/paper_scale.py``): ``pqb-build all
--preset paper`` on a LOAD TEST domain of a published Amazon size, stage by stage, with the harness and
publishing on that build and the projections; the first form is what follows.

Everything is measured in one run on this machine and printed as tables:

* **Load test** (never a dataset): for each N, :func:`pqb.builders.source.loadtest.generate_reviews`
  makes N reviews from the real ``Video_Games`` slice (every user id ``LOADTEST-…``); every stage
  of ``pqb-build`` (``pipeline.STAGES``, then publish, with the embedded default's configuration)
  runs on it, each in its own process so its peak RSS is its own (and, sampled from ``/proc``, the
  summed RSS of it and its worker processes), plus ``link``: the users stage's
  ``link="any"`` step timed alone. Each row also gives the stage's CPU seconds (its process and its
  workers) and, per cache, the distinct keys looked up and the share found.

  ``--reviews distinct`` (the default) recombines real sentences with words replaced, so texts and
  sentences do not repeat and the caches answer no more often than on real reviews: this is the
  cost of a real build. Each N gets its own seed, so no file shares texts with another, and there
  is no warm-up. A table puts the shares of distinct texts and sentences beside the real slice's.
  ``--reviews resampled`` copies real reviews, which repeat (the slice has 1,345), so after a
  warm-up build on 20K reviews the parse and correction caches answer nearly every lookup: it times
  what does not depend on the text (reading, cleaning, counting, linking, encoding, fitting,
  auditing, writing). Linearity is the stage's own seconds per 1K reviews at the largest N over
  those at the smallest (process wall, with imports, in brackets). ``--stage-max-n errors=300000``
  skips a stage above N and prints the linear projection.
* **spaCy overhead**: our chunked, cached sentence splitter (cold cache) against plain ``nlp.pipe``
  over the same distinct texts with the same pipeline, in the same run; 1.0 = no overhead.
* **Farthest pair**: the vectorised sym-KL screen against computing every pair, at n users.
* **Embedded build** (``--embedded``): ``pqb-build`` on the real slice, cold (fresh work dir and parse
  cache) and cached (rerun on the same), as a user runs it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import paper_scale  # bench/ is on sys.path: this script's folder

STAGE_SCRIPT = """
import json, resource, sys, time
from dataclasses import replace
from pathlib import Path
from pqb.builders.config import EMBEDDED_DEFAULT
from pqb.builders.executor import make_executor
from pqb.builders.pipeline import STAGES
from pqb.builders.workdir import WorkDir
work, src, stage, workers, cap = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
t = time.perf_counter()
wd = WorkDir(work, "video_games")
ex = make_executor("local", workers) if workers > 1 else None
cfg = replace(EMBEDDED_DEFAULT, source=src, executor=ex, **({"encoder_max_sentences": cap} if cap else {}))
if stage == "publish":
    from pqb.builders.publish.tables import publish
    t0 = time.perf_counter()
    s = publish([wd], work / "dataset-LOADTEST", build_info={"seed": 0, "config": cfg.as_dict(), "source": "LOAD TEST"})
    s = {"rows": sum(v for v in s.values() if isinstance(v, int)), "seconds": time.perf_counter() - t0}
elif stage == "link":
    import pyarrow.parquet as pq
    from pqb.builders.source.users import link_rows
    from pqb.builders.workdir import LINKS, PRODUCTS, REVIEWS, USERS
    targets = [r["parent_asin"] for r in pq.read_table(wd.path / PRODUCTS).to_pylist() if r["is_target"]]
    ts = set(targets)
    reviewers = {}
    for r in pq.read_table(wd.path / REVIEWS, columns=["parent_asin", "user_id"]).to_pylist():
        if r["parent_asin"] in ts:
            reviewers.setdefault(r["parent_asin"], set()).add(r["user_id"])
    qualified = [u["user_id"] for u in pq.read_table(wd.path / USERS).to_pylist() if u["qualified"]]
    t0 = time.perf_counter()
    links = link_rows(targets, reviewers, qualified, cfg.user_config(), executor=ex)
    s = {"seconds": time.perf_counter() - t0, "targets": len(ts), "qualified": len(qualified), "links": len(links),
         "same_as_stage": links == pq.read_table(wd.path / LINKS).to_pylist()}
else:
    s = {st.name: st for st in STAGES}[stage].run(wd, cfg, force=True)
if ex is not None:
    ex.close()
s = {k: v for k, v in s.items() if isinstance(v, (int, float))}
from pqb.builders.parses import CACHE_COUNTS
s["cache"] = dict(CACHE_COUNTS)
own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
s["cpu_seconds"] = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
s["wall_seconds"] = time.perf_counter() - t
s["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
s["children_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps(s))
"""
STAGE_NAMES = ("ingest", "users", "link", "profiles", "errors", "generate", "pair", "publish")
"""Every stage of ``pqb-build`` (pipeline.STAGES, then publish), plus ``link``: the users stage's
``link="any"`` step re-timed alone on its outputs."""


def _stage(work: Path, src: Path, stage: str, env: dict[str, str], workers: int = 1, cap: int = 0) -> dict:
    """Run one stage in its own process; its JSON plus the all-processes peak RSS (sampled each 0.5 s)."""
    cmd = [sys.executable, "-c", STAGE_SCRIPT, str(work), str(src), stage, str(workers), str(cap)]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, text=True)
        peak = 0.0
        while proc.poll() is None:
            peak = max(peak, paper_scale.tree_rss_mb(proc.pid))
            time.sleep(0.5)
        out.seek(0)
        err.seek(0)
        if proc.returncode:
            raise RuntimeError(f"stage {stage} failed: {err.read()[-2000:]}")
        res = json.loads(out.read().strip().splitlines()[-1])
    res["all_processes_peak_rss_mb"] = max(peak, res["peak_rss_mb"])
    return res


def load_test(
    sizes: list[int],
    tmp: Path,
    env: dict[str, str],
    stages: list[str],
    max_n: dict[str, int],
    workers: int,
    warm_n: int,
    texts: str,
) -> list[dict]:
    from pqb.builders.source.loadtest import generate_reviews
    from pqb.dataset import settings

    rows: list[dict] = []
    if warm_n:
        # warm-up, not a row: every stage once (cold caches; a small encoder cap), so the texts the rows
        # share with it are parsed and corrected once and every row below is the same steady state
        warm = tmp / "loadtest-warmup"
        generate_reviews(settings.PQB_AMAZON_DIR, "Video_Games", warm_n, warm, seed=0, texts=texts)
        cold = {st: _stage(tmp / "work-warmup", warm, st, env, workers, cap=5000) for st in stages}
        done = ", ".join(f"{k} {v['wall_seconds']:.0f} s" for k, v in cold.items())
        print(f"  warm-up: {done}", file=sys.stderr)
        rows.append({"warmup": True, "n": warm_n, "stages": cold})
    for n in sizes:
        src = tmp / f"loadtest-{n}"
        t = time.perf_counter()
        # a seed per file under distinct texts (no file repeats another's), the warm-up's otherwise
        seed = n if texts == "distinct" else 0
        info = generate_reviews(settings.PQB_AMAZON_DIR, "Video_Games", n, src, seed=seed, texts=texts)
        row = {"n": n, "users": info["users"], "generate_s": time.perf_counter() - t, "stages": {},
               "texts": texts, "shares": info["shares"], "real_shares": info["real_shares"]}  # fmt: skip
        work = tmp / f"work-{n}"
        done_rows = [r for r in rows if not r.get("warmup")]
        ran = {m for r in done_rows for m in r["stages"]}
        for st in stages:
            if n > max_n.get(st, n):
                if st == "errors" and "errors" in ran:  # later stages read its outputs: reuse the last ones
                    last = next(r for r in reversed(done_rows) if "errors" in r["stages"])
                    shutil.copytree(
                        tmp / f"work-{last['n']}" / "video_games" / "errors", work / "video_games" / "errors"
                    )
                    row["errors_from"] = last["n"]
                continue
            row["stages"][st] = r = _stage(work, src, st, env, workers)
            print(
                f"  load test {n:,}: {st} {r['wall_seconds']:.1f} s, {r['peak_rss_mb']:.0f} MB",
                file=sys.stderr,
            )
        rows.append(row)
        shutil.rmtree(work / "dataset-LOADTEST", ignore_errors=True)
    return rows


def _hits(cache: dict[str, int]) -> str:
    """``kind hits/lookups (share)`` for each cache a stage looked up."""
    kinds = sorted({k.rsplit(" ", 1)[0] for k in cache})
    return "; ".join(f"{k} {cache.get(f'{k} hits', 0):,}/{cache[f'{k} lookups']:,} "
                     f"({cache.get(f'{k} hits', 0) / max(1, cache[f'{k} lookups']):.1%})"
                     for k in kinds if cache.get(f"{k} lookups"))  # fmt: skip


def spacy_overhead(n_texts: int) -> dict:
    from pqb.builders.nlp import load_spacy
    from pqb.builders.parses import ParseCache, split_sentences
    from pqb.builders.source.amazon import ReadStats, iter_reviews
    from pqb.builders.source.users import clean_review_text
    from pqb.dataset import settings

    texts = sorted({clean_review_text(r["text"]) for r in iter_reviews(settings.PQB_AMAZON_DIR / "Video_Games.jsonl",
                                                                        ReadStats())})[:n_texts]  # fmt: skip
    nlp = load_spacy()
    list(nlp.pipe(texts[:50]))  # warm up both paths equally
    t = time.perf_counter()
    for _ in nlp.pipe(texts, batch_size=256):
        pass
    plain = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        split_sentences(texts, nlp=nlp, cache=ParseCache(Path(d) / "p.sqlite"))
        ours = time.perf_counter() - t
    return {"texts": len(texts), "plain_s": plain, "ours_s": ours}


def farthest_pair(n_users: int, n_exact: int) -> dict:
    import numpy as np

    from pqb.builders.pairing.pairs import ranked_pairs
    from pqb.builders.syntax.gaussian import RankOneDiagGaussian, sym_kl

    rng = np.random.default_rng(0)
    gs = {f"u{i:05d}": RankOneDiagGaussian.fit_many([rng.normal(size=(30, 16)) * rng.uniform(0.3, 3)])[0]
          for i in range(n_users)}  # fmt: skip
    t = time.perf_counter()
    ranked_pairs(list(gs), gs, sym_kl, 1)
    ours = time.perf_counter() - t
    sub = sorted(gs)[:n_exact]
    t = time.perf_counter()
    for a, b in itertools.combinations(sub, 2):
        sym_kl(gs[a], gs[b])
    per_pair = (time.perf_counter() - t) / (n_exact * (n_exact - 1) / 2)
    return {"users": n_users, "ours_s": ours, "all_pairs_s_estimated": per_pair * n_users * (n_users - 1) / 2,
            "per_pair_ms": per_pair * 1e3}  # fmt: skip


def embedded(tmp: Path, env: dict[str, str]) -> dict:
    env = dict(env, PQB_CACHE_DIR=str(tmp / "embedded-cache"))
    cmd = [
        "pqb-build",
        "--no-progress",
        "--workdir",
        str(tmp / "embedded-work"),
        "--dataset",
        str(tmp / "ds"),
    ]
    times = {}
    for kind in ("cold", "cached"):
        t = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        times[kind] = time.perf_counter() - t
    return times


COUNTS = {"users": ("sentences", "users_qualified", "links"), "profiles": ("train_sentences", "gaussians"),
          "errors": ("profile_sentences", "edits"), "generate": ("candidates",), "pair": ("rows",),
          "link": ("targets", "qualified"), "ingest": ("reviews", "products"), "publish": ("rows",)}  # fmt: skip


def _seconds(m: dict) -> float:
    return m.get("seconds", m["wall_seconds"])


def _projection(rows: list[dict]) -> list[str]:
    """Hours per 1M reviews, ``link`` left out (it re-times part of users).

    Linear from the largest N: each stage's own seconds per review × 1M. That charges every fixed cost
    (model loads, the encoder's training, which ``encoder_max_sentences`` caps, the products' queries of
    generate and pair) once per review, so it is an upper bound. With two sizes or more, also affine
    from the two largest: seconds = fixed + per-review × N per stage (a negative per-review slope, which
    only noise can give, counts as 0), which is the honest projection when both sizes are past the
    encoder's cap."""
    last = rows[-1]
    per = {st: _seconds(m) / last["n"] * 1e6 / 3600 for st, m in last["stages"].items() if st != "link"}
    if not per:
        return []

    def line(what: str, hours: dict[str, float]) -> str:
        return (
            f"Projection, {what} on this machine: {sum(hours.values()):.1f} h per 1M reviews ("
            + ", ".join(f"{st} {h:.1f} h" for st, h in sorted(hours.items(), key=lambda kv: -kv[1]))
            + ")"
        )

    out = [line(f"linear from {last['n']:,} reviews", per)]
    if len(rows) > 1:
        a, b = rows[-2], rows[-1]
        hours, fixed = {}, 0.0
        for st in per:
            if st not in a["stages"]:
                continue
            slope = max(0.0, (_seconds(b["stages"][st]) - _seconds(a["stages"][st])) / (b["n"] - a["n"]))
            base = _seconds(b["stages"][st]) - slope * b["n"]
            fixed += base
            hours[st] = (base + slope * 1e6) / 3600
        out.append(line(f"affine from {a['n']:,} and {b['n']:,} reviews (fixed {fixed / 60:.0f} min)", hours))
    return out


def tables(res: dict) -> str:
    lines = []
    lt = [r for r in res.get("load_test") or [] if not r.get("warmup")]
    if lt:
        kind = lt[0].get("texts", "resampled")
        lines += [f"LOAD TEST (reviews made from the real Video_Games slice, texts {kind}; see "
                  "bench/bench_builders.py)", "",
                  "| LOAD TEST reviews | stage | stage s (process wall) | CPU s, all processes "
                  "| peak RSS MB, stage process | peak RSS MB, all processes | counts | cache hits / distinct keys |",
                  "|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for r in lt:
            lines.append(
                f"| {r['n']:,} | generate load test ({r['users']:,} synthetic users) | {r['generate_s']:.1f} "
                "| | | | | |"
            )
            if "errors_from" in r:
                lines.append(f"| {r['n']:,} | errors: not run (see the projection below); pair and publish read the "
                             f"errors outputs of the {r['errors_from']:,} run | | | | | | |")  # fmt: skip
            for st, m in r["stages"].items():
                counts = ", ".join(f"{k} {m[k]:,}" for k in COUNTS.get(st, ()) if k in m)
                lines.append(f"| {r['n']:,} | {st} | {m.get('seconds', m['wall_seconds']):.1f} ({m['wall_seconds']:.1f}) "
                             f"| {m.get('cpu_seconds', 0):.1f} | {m['peak_rss_mb']:,.0f} "
                             f"| {m['all_processes_peak_rss_mb']:,.0f} | {counts} | {_hits(m.get('cache', {}))} |")  # fmt: skip
        real = lt[0].get("real_shares")
        if real:
            lines += ["", "| reviews | texts | distinct texts | sentences | distinct sentences |", "|---|---|---|---|---|",
                      f"| the real slice | {real['reviews']:,} | {real['distinct_texts']:.1%} | {real['sentences']:,} "
                      f"| {real['distinct_sentences']:.1%} |"]  # fmt: skip
            for r in lt:
                sh = r["shares"]
                lines.append(f"| LOAD TEST {r['n']:,} ({r['texts']}) | {sh['reviews']:,} | {sh['distinct_texts']:.1%} "
                             f"| {sh['sentences']:,} | {sh['distinct_sentences']:.1%} |")  # fmt: skip
        warm = next((r for r in res["load_test"] if r.get("warmup")), None)
        if warm:
            lines.append(f"\nwarm-up ({warm['n']:,} reviews, cold caches, encoder cap 5,000): "
                         + ", ".join(f"{k} {v['wall_seconds']:.0f} s / {v['peak_rss_mb']:,.0f} MB" for k, v in warm["stages"].items()))  # fmt: skip
        if len(lt) > 1:
            a, b = lt[0], lt[-1]
            lines += ["", f"| stage | s per 1K reviews at {a['n']:,} | s per 1K reviews at {b['n']:,} | ratio (1.00 = linear) |",
                      "|---|---|---|---|"]  # fmt: skip
            for st in a["stages"]:
                per_a = a["stages"][st].get("seconds", a["stages"][st]["wall_seconds"]) / a["n"] * 1e3
                if st not in b["stages"]:
                    lines.append(f"| {st} | {per_a:.4f} | not run at {b['n']:,} (projected linear: "
                                 f"{per_a * b['n'] / 1e3:.0f} s) | |")  # fmt: skip
                    continue
                per_b = b["stages"][st].get("seconds", b["stages"][st]["wall_seconds"]) / b["n"] * 1e3
                lines.append(f"| {st} | {per_a:.4f} | {per_b:.4f} | {per_b / per_a:.2f} |")
        lines += ["", *_projection(lt)]
    if "spacy" in res:
        s = res["spacy"]
        lines += ["", "| distinct review texts | plain nlp.pipe s | ours (chunked, cached, cold) s | ours ÷ plain |",
                  "|---|---|---|---|",
                  f"| {s['texts']:,} | {s['plain_s']:.1f} | {s['ours_s']:.1f} | {s['ours_s'] / s['plain_s']:.2f}× |"]  # fmt: skip
    if "pair" in res:
        p = res["pair"]
        lines += ["", "| users | farthest pair, vectorised screen s | every pair (old), estimated s | speed-up |",
                  "|---|---|---|---|",
                  f"| {p['users']:,} | {p['ours_s']:.2f} | {p['all_pairs_s_estimated']:.0f} "
                  f"({p['per_pair_ms']:.3f} ms/pair) | {p['all_pairs_s_estimated'] / p['ours_s']:.0f}× |"]  # fmt: skip
    if "embedded" in res:
        e = res["embedded"]
        lines += ["", "| embedded build (`pqb-build`) | cold s | cached rerun s | cold ÷ cached |", "|---|---|---|---|",
                  f"| amazon2023-mini, 24 domains | {e['cold']:.1f} | {e['cached']:.1f} | {e['cold'] / e['cached']:.1f}× |"]  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--sizes", type=int, nargs="*", default=[100_000, 1_000_000], help="load-test review counts"
    )
    ap.add_argument("--spacy-texts", type=int, default=1000, help="distinct texts for the spaCy ratio")
    ap.add_argument("--pair-users", type=int, default=3000)
    ap.add_argument("--embedded", action="store_true", help="also time pqb-build cold and cached (minutes)")
    ap.add_argument("--out", default=None, help="also write the JSON here")
    ap.add_argument("--stages", nargs="*", default=list(STAGE_NAMES), choices=STAGE_NAMES)
    ap.add_argument(
        "--stage-max-n",
        nargs="*",
        default=[],
        metavar="STAGE=N",
        help="run STAGE only for load tests of at most N reviews (the table projects the rest)",
    )
    ap.add_argument(
        "--reviews",
        choices=("distinct", "resampled"),
        default="distinct",
        help="load-test texts: distinct (recombined, as costly as real ones) or resampled (repeating)",
    )
    ap.add_argument(
        "--warmup",
        type=int,
        default=None,
        help="reviews of the warm-up build (default: 20,000 for resampled texts, none for distinct)",
    )
    ap.add_argument(
        "--workers",
        type=int,
        default=None,
        help="local executor processes per stage (default 1: in process; with --domain-size, 2)",
    )
    paper = ap.add_argument_group("paper scale (issue 46; bench/paper_scale.py)")
    paper.add_argument(
        "--domain-size",
        choices=("video_games", "musical_instruments", "baby_products"),
        help="build a LOAD TEST domain of this published size instead of the --sizes load tests",
    )
    paper.add_argument("--scale", type=float, default=1.0, help="share of the published size (default 1)")
    paper.add_argument("--preset", default="paper", help="pqb-build all --preset (when the checkout has it)")
    paper.add_argument(
        "--fit-scale",
        type=float,
        default=None,
        help="a second, smaller build for the per-stage affine fits (default: scale / 10)",
    )
    paper.add_argument(
        "--harness",
        nargs="*",
        default=["bm25", "minilm", "splade-tiny"],
        help="pqb-harness run models on the build (none: skip)",
    )
    paper.add_argument("--json", default=None, help="write the run here (e.g. bench/paper_scale.json)")
    paper.add_argument("--cores", type=int, default=16, help="projection: cores of one machine (default 16)")
    paper.add_argument("--nodes", type=int, nargs="*", default=[2, 4, 8], help="projection: Ray nodes")
    paper.add_argument(
        "--tmp", default=None, help="folder for the LOAD TEST data, work dirs and logs, kept after the run (default: a temporary folder, removed)"
    )
    args = ap.parse_args(argv)
    if args.domain_size:
        res = paper_scale.run(args.domain_size, scale=args.scale, preset=args.preset or None,
                              workers=args.workers or 2, harness=args.harness,
                              fit_scale=args.fit_scale if args.fit_scale is not None else args.scale / 10,
                              cores=args.cores, nodes=args.nodes, tmp=Path(args.tmp) if args.tmp else None)  # fmt: skip
        print(paper_scale.tables(res))
        if args.json:
            paper_scale.write_json(Path(args.json), res)
        return 0 if res["exit"] == 0 else 1
    args.workers = args.workers or 1
    res: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}",
                 "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": " ".join(sys.argv)}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="pqb-bench-") as d:
        tmp = Path(d)
        env = dict(os.environ, PQB_CACHE_DIR=str(tmp / "cache"))
        if args.sizes:
            max_n = {k: int(v) for k, v in (x.split("=") for x in args.stage_max_n)}
            warm = args.warmup if args.warmup is not None else (20_000 if args.reviews == "resampled" else 0)
            res["load_test"] = load_test(
                sorted(args.sizes), tmp, env, args.stages, max_n, args.workers, warm, args.reviews
            )
        res["spacy"] = spacy_overhead(args.spacy_texts)
        res["pair"] = farthest_pair(args.pair_users, 120)
        if args.embedded:
            res["embedded"] = embedded(tmp, env)
    res["self_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(tables(res))
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
