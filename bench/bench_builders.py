"""Builder benchmarks: streaming stages on LOAD-TEST review files, spaCy overhead, pairing, cached rerun.

Usage::

    python bench/bench_builders.py [--sizes 100000 1000000] [--embedded] [--out bench.json]

Everything is measured in one run on this machine and printed as tables:

* **Load test** (never a dataset): for each N, :func:`pqb.builders.source.loadtest.generate_reviews`
  resamples the real ``Video_Games`` slice to N reviews (every user id ``LOADTEST-…``); ingest and
  users then run on it, each stage in its own process so its peak RSS is its own. Texts repeat in a
  resampled file, so spaCy parses only the ~1.3K distinct reviews once (the parse cache); what scales
  with N here is reading, cleaning, splitting, counting, linking and writing. A warm-up build fills
  the parse cache first, so every N runs in the same steady state. Linearity is the stage's own
  seconds per 1K reviews at the largest N over those at the smallest (process wall, with imports, in
  brackets).
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
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STAGE_SCRIPT = """
import json, resource, sys, time
from pathlib import Path
from pqb.builders.config import BuildConfig
from pqb.builders.source.stage import run_ingest, run_users
from pqb.builders.workdir import WorkDir
work, src, stage = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
t = time.perf_counter()
wd, cfg = WorkDir(work, "video_games"), BuildConfig(source=src, link="any")
s = (run_ingest if stage == "ingest" else run_users)(wd, cfg, force=True)
s = {k: v for k, v in s.items() if isinstance(v, (int, float))}
s["wall_seconds"] = time.perf_counter() - t
s["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(s))
"""


def _stage(work: Path, src: Path, stage: str, env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, "-c", STAGE_SCRIPT, str(work), str(src), stage], env=env,
                         check=True, capture_output=True, text=True)  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def load_test(sizes: list[int], tmp: Path, env: dict[str, str]) -> list[dict]:
    from pqb.builders.source.loadtest import generate_reviews
    from pqb.dataset import settings

    # warm-up, not a row: parse the slice's distinct reviews into the cache once (the cold parse cost is
    # the spaCy table's), so every row below measures the same steady state
    warm = tmp / "loadtest-warmup"
    generate_reviews(settings.PQB_AMAZON_DIR, "Video_Games", 20_000, warm, seed=0)
    cold = _stage(tmp / "work-warmup", warm, "ingest", env), _stage(tmp / "work-warmup", warm, "users", env)
    rows = [{"warmup": True, "users_stage": cold[1]}]
    for n in sizes:
        src = tmp / f"loadtest-{n}"
        t = time.perf_counter()
        info = generate_reviews(settings.PQB_AMAZON_DIR, "Video_Games", n, src, seed=0)
        gen_s = time.perf_counter() - t
        work = tmp / f"work-{n}"
        ing = _stage(work, src, "ingest", env)
        users = _stage(work, src, "users", env)
        rows.append(
            {"n": n, "users": info["users"], "generate_s": gen_s, "ingest": ing, "users_stage": users}
        )
        print(f"  load test {n:,}: ingest {ing['wall_seconds']:.1f} s, users {users['wall_seconds']:.1f} s",
              file=sys.stderr)  # fmt: skip
    return rows


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


def tables(res: dict) -> str:
    lines = []
    lt = [r for r in res.get("load_test") or [] if not r.get("warmup")]
    if lt:
        lines += ["LOAD TEST (reviews resampled from the real Video_Games slice; see bench/bench_builders.py)", "",
                  "| reviews | synthetic users | generate s | ingest s (process) | ingest peak RSS MB "
                  "| users s (process) | users peak RSS MB | sentences | qualified users | links |",
                  "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
        for r in lt:
            i, u = r["ingest"], r["users_stage"]
            lines.append(f"| {r['n']:,} | {r['users']:,} | {r['generate_s']:.1f} | {i['seconds']:.1f} "
                         f"({i['wall_seconds']:.1f}) | {i['peak_rss_mb']:.0f} | {u['seconds']:.1f} ({u['wall_seconds']:.1f}) | "
                         f"{u['peak_rss_mb']:.0f} | {u['sentences']:,} | {u['users_qualified']:,} | {u['links']:,} |")  # fmt: skip
        cold = next((r["users_stage"] for r in res["load_test"] if r.get("warmup")), None)
        if cold:
            lines.append(f"\nwarm-up (20,000 reviews, cold parse cache, spaCy loaded): users {cold['seconds']:.1f} s, "
                         f"peak RSS {cold['peak_rss_mb']:.0f} MB")  # fmt: skip
        if len(lt) > 1:
            a, b = lt[0], lt[-1]
            for st in ("ingest", "users_stage"):
                per = [r[st]["seconds"] / r["n"] * 1e3 for r in (a, b)]
                lines.append(f"\n{st.removesuffix('_stage')}: {per[0]:.3f} → {per[1]:.3f} s per 1K reviews from "
                             f"{a['n']:,} to {b['n']:,} (ratio {per[1] / per[0]:.2f}; 1.00 = linear)")  # fmt: skip
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
    args = ap.parse_args(argv)
    res: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}",
                 "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": " ".join(sys.argv)}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="pqb-bench-") as d:
        tmp = Path(d)
        env = dict(os.environ, PQB_CACHE_DIR=str(tmp / "cache"))
        if args.sizes:
            res["load_test"] = load_test(sorted(args.sizes), tmp, env)
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
