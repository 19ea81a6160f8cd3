"""Paper scale (issue 46): ``pqb-build all --preset paper --workers 2`` on a LOAD TEST domain of a
published Amazon Reviews 2023 size, measured stage by stage, plus the harness and publishing on that build.

Run it through ``bench/bench_builders.py``::

    python bench/bench_builders.py --preset paper --domain-size video_games [--scale 1.0] [--workers 2]
        [--fit-scale 0.1] [--harness bm25 minilm splade-tiny] [--json bench/paper_scale.json]

What it does, in order (everything in ``--tmp``, default a temporary folder):

1. writes the LOAD TEST domain (:func:`pqb.builders.source.loadtest_domain.generate_domain`; timed);
2. runs ``pqb-build all`` on it in a child process that wraps each stage of ``pipeline.STAGES`` and the
   publish step to record its wall time, the CPU seconds of the whole process tree (the stage process
   and its worker processes, live ones from ``/proc``, ended ones from ``getrusage``), the peak summed RSS
   of that tree (sampled every 0.5 s), the parse caches' lookups and hits, and the stage's own counts;
   ``--preset`` is passed only when this checkout's ``pqb-build all`` has it (the JSON says which ran);
3. on the published LOAD TEST dataset: ``pqb-harness run`` of each ``--harness`` model on the domain's
   syntactic and error tasks over the whole corpus (cold caches), the card's lexical-ceiling report
   (bm25s over every document) alone, and the products step alone (``iter_meta``, the domain's core-term judgement and a row per record, over
   every metadata record), each in its own process: wall, CPU, peak RSS;
4. with ``--fit-scale``, a second, smaller build for per-stage affine fits (seconds = fixed + per-token ×
   tokens), which project the other two domains (labelled *projected*);
5. a projection to 16 cores and to Ray with N such nodes (below), and the tables; ``--json`` records the run.

**Cores.** Each stage's CPU seconds are split into the stage process's own (S: the serial part, one
core) and its worker processes' (P: the executor's maps, which spread over any number of cores). On K
free cores a stage then takes about S + P/K; on Ray with N nodes of K cores, S + P/(N·K). CPU seconds,
not wall seconds, so the projection holds on a shared machine, where the wall time of the same run is
inflated by the other jobs (the JSON records the load average at start and end, and ``noisy`` when it
was above the cores). It assumes the workers scale perfectly, the stage process does not wait on them
beyond its own CPU, and I/O is free: a model, labelled as such (S + P/2 beside the measured wall shows
how close it comes on this machine).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
LABEL = "LOAD TEST"
CLOCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


# --------------------------------------------------------------------------------------------------
# Process-tree measurements (Linux /proc)
# --------------------------------------------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended while we looked
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    return parents


def _descendants(root: int) -> list[int]:
    parents, out = _children(), []
    todo = list(parents.get(root, []))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += parents.get(pid, [])
    return out


def tree_rss_mb(root: int) -> float:
    """Summed RSS of ``root`` and every process below it, from ``/proc`` (Linux): a process's own peak RSS
    leaves out the stage's worker processes, which hold their own models and chunks, and the 4 GB target
    is for all of them. Shared library pages count once per process, so it is an upper bound."""
    total = 0
    for pid in [root, *_descendants(root)]:
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        except OSError:
            continue
    return total * os.sysconf("SC_PAGE_SIZE") / 2**20


def tree_cpu_s() -> float:
    """CPU seconds (user + sys) of this process and everything it started, so far: its own and its
    reaped children's from ``getrusage``, each live descendant's (with the children it reaped) from ``/proc``.
    Each process counts once: live ones are in ``/proc``, reaped ones in their parent's counts."""
    import resource

    own, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
    for pid in _descendants(os.getpid()):
        try:
            f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(x) for x in f[11:15]) / CLOCK  # utime, stime, cutime, cstime
    return total


def measure(cmd: Sequence[str], env: Mapping[str, str], log: Path) -> dict[str, Any]:
    """Run ``cmd``; its wall seconds, CPU seconds (it and the descendants it reaped) and peak summed RSS
    of its process tree (sampled every 0.5 s). Output goes to ``log``; a failure raises with its tail."""
    t0 = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(list(cmd), env=dict(env), stdout=out, stderr=subprocess.STDOUT)
        peak, status, usage = 0.0, 0, None
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            peak = max(peak, tree_rss_mb(proc.pid))
            time.sleep(0.5)
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd[:4])}… failed ({proc.returncode}): {log.read_text()[-3000:]}")
    return {"wall_s": time.perf_counter() - t0, "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_rss_mb": max(peak, usage.ru_maxrss / 1024)}  # fmt: skip


def numbers(stats: Any) -> dict[str, float]:
    """The top-level numeric entries of a stage's stats."""
    if not isinstance(stats, Mapping):
        return {}
    return {k: v for k, v in stats.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


# --------------------------------------------------------------------------------------------------
# The build, stage by stage (a child process wrapping pipeline.STAGES)
# --------------------------------------------------------------------------------------------------

CHILD = r"""
import json, os, resource, sys, threading, time
from dataclasses import replace
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import paper_scale as ps
out, argv = Path(sys.argv[2]), sys.argv[3:]
from pqb.builders import pipeline
from pqb.builders.parses import CACHE_COUNTS
import pqb.builders.publish.tables as tables
from pqb.dataset.io import atomic_write_json
pid, t_start = os.getpid(), time.perf_counter()
state = {"stage": "setup", "peak": {"setup": ps.tree_rss_mb(pid)}}
records = []

def sample():
    while True:
        stage, rss = state["stage"], ps.tree_rss_mb(pid)
        state["peak"][stage] = max(state["peak"].get(stage, 0.0), rss)
        time.sleep(0.5)

def save(code=None):
    atomic_write_json(out, {"stages": records, "wall_s": time.perf_counter() - t_start, "cpu_s": ps.tree_cpu_s(),
                            "peak_rss_mb": max(state["peak"].values()), "exit": code})

def own_cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

def timed(name, fn):
    def run(*args, **kwargs):
        t0, c0, o0, cache0 = time.perf_counter(), ps.tree_cpu_s(), own_cpu(), dict(CACHE_COUNTS)
        state["peak"][name] = ps.tree_rss_mb(pid)
        state["stage"] = name
        stats = fn(*args, **kwargs)
        state["stage"] = "between"
        cache = {k: v - cache0.get(k, 0) for k, v in CACHE_COUNTS.items() if v - cache0.get(k, 0)}
        records.append({"stage": name, "wall_s": time.perf_counter() - t0, "cpu_s": ps.tree_cpu_s() - c0,
                        "own_cpu_s": own_cpu() - o0,
                        "peak_rss_mb": max(state["peak"][name], ps.tree_rss_mb(pid)), "cache": cache,
                        "stats": ps.numbers(stats)})
        save()
        return stats
    return run

threading.Thread(target=sample, daemon=True).start()
pipeline.STAGES = tuple(replace(s, run=timed(s.name, s.run)) for s in pipeline.STAGES)
tables.publish = timed("publish", tables.publish)
from pqb.builders.cli import main
code = main(["all", *argv])
save(code)
sys.exit(code)
"""
"""``pqb-build all <argv>`` (the CLI's own ``main``) with each stage and the publish step timed."""


def supports_preset(env: Mapping[str, str]) -> bool:
    """Whether this checkout's ``pqb-build all`` has ``--preset`` (issue 46's other half)."""
    cmd = [
        sys.executable,
        "-c",
        "import sys; from pqb.builders.cli import main; sys.exit(main(sys.argv[1:]))",
    ]
    out = subprocess.run([*cmd, "all", "--help"], env=dict(env), capture_output=True, text=True)
    return "--preset" in out.stdout


def build(src: Path, domain: str, work: Path, dataset: Path, env: Mapping[str, str], *, preset: str | None,
          workers: int) -> dict[str, Any]:  # fmt: skip
    """``pqb-build all`` on ``src``: per-stage records, totals and the linked users, from the child's JSON."""
    import pyarrow.parquet as pq

    from pqb.builders.workdir import LINKS

    argv = ["--domain", domain, "--source", str(src), "--workdir", str(work), "--dataset", str(dataset),
            "--workers", str(workers), "--no-progress"]  # fmt: skip
    ran = preset if preset and supports_preset(env) else None
    if ran:
        argv = ["--preset", ran, *argv]
    out = work.parent / f"{work.name}-stages.json"
    log = work.parent / f"{work.name}.log"
    measured = measure([sys.executable, "-c", CHILD, str(BENCH), str(out), *argv], env, log)
    res = json.loads(out.read_text())
    res |= {"process_wall_s": measured["wall_s"], "argv": ["pqb-build", "all", *argv],
            "preset_asked": preset, "preset_ran": ran or "embedded default (this checkout has no --preset)"}  # fmt: skip
    links = work / domain / LINKS
    res["linked_users"] = (
        len(set(pq.read_table(links, columns=["user_id"]).column(0).to_pylist())) if links.is_file() else 0
    )
    return res


# --------------------------------------------------------------------------------------------------
# Publishing and the harness on the build
# --------------------------------------------------------------------------------------------------

PRODUCTS_SCRIPT = r"""
import json, sys, time
from pqb.builders.source.amazon import ReadStats, iter_meta
from pqb.builders.source.products import attribute_candidates, clean_text, descriptor_model, finish_row, product_base
t = time.perf_counter()
# as ingest does it: one judgement learned over the domain's records (here their own text only, not the
# reviews, which the ingest row times), then each record's row
metas = list(iter_meta(sys.argv[1], ReadStats(), usable=lambda m: None if clean_text(m.get("title")) else "no title"))
cands = [attribute_candidates(m) for m in metas]
model = descriptor_model(metas, candidates=cands)
rows = [finish_row(product_base(m), cs, model) for m, cs in zip(metas, cands)]
print(json.dumps({"records": len(rows), "targets": sum(r["is_target"] for r in rows), "seconds": time.perf_counter() - t}))
"""

CEILING_SCRIPT = r"""
import json, sys, time
import pyarrow.parquet as pq
from pathlib import Path
from pqb.builders.reports.lexical_ceiling import lexical_ceiling
data = Path(sys.argv[1]) / "data"
corpus = pq.read_table(sorted((data / f"{sys.argv[2]}-corpus").glob("*.parquet"))[0]).to_pylist()
rows = pq.read_table(sorted((data / sys.argv[2]).glob("*.parquet"))[0]).to_pylist()
t = time.perf_counter()
c = lexical_ceiling(corpus, rows)
print(json.dumps({"documents": c["documents"], "queries": sum(h["n"] for h in c["hits"].values()), "seconds": time.perf_counter() - t}))
"""


def _script_row(
    name: str, what: str, script: str, args: Sequence[str], env: Mapping[str, str], tmp: Path
) -> dict[str, Any]:
    """Run ``script`` in its own process (log ``<tmp>/<name>.log``, whose last line is its JSON counts)."""
    log = tmp / f"{name}.log"
    row = measure([sys.executable, "-c", script, *args], env, log)
    return {"what": what, **row, **json.loads(log.read_text().strip().splitlines()[-1])}


def publishing_rows(src: Path, category: str, domain: str, dataset: Path, env: Mapping[str, str],
                    tmp: Path) -> list[dict[str, Any]]:  # fmt: skip
    """The products step over every metadata record, and the card's lexical-ceiling report, each alone."""
    return [_script_row("products", "products step (iter_meta, the domain's core-term judgement, each row)", PRODUCTS_SCRIPT,
                        [str(src / f"meta_{category}.jsonl")], env, tmp),
            _script_row("lexical_ceiling", "lexical-ceiling report (bm25s, every document)", CEILING_SCRIPT,
                        [str(dataset), domain], env, tmp)]  # fmt: skip


def harness_rows(models: Sequence[str], domain: str, dataset: Path, env: Mapping[str, str],
                 tmp: Path) -> list[dict[str, Any]]:  # fmt: skip
    """``pqb-harness run --model <m>`` on the domain's syntactic and error tasks, cold caches, one process each."""
    rows = []
    for model in models:
        cache = tmp / f"harness-cache-{model}"
        cmd = [sys.executable, "-c", "import sys; from pqb.harness.cli import main; sys.exit(main(sys.argv[1:]))",
               "run", "--model", model, "--tasks", f"pqb_syntactic_{domain},pqb_error_{domain}",
               "--dataset_path", str(dataset), "--output_path", str(tmp / "results" / model), "--no_run_cache",
               "--no-progress"]  # fmt: skip
        rows.append(
            {
                "model": model,
                **measure(cmd, {**env, "PQB_CACHE_DIR": str(cache)}, tmp / f"harness-{model}.log"),
            }
        )
    return rows


# --------------------------------------------------------------------------------------------------
# Projections
# --------------------------------------------------------------------------------------------------


def serial_parallel(stage: Mapping[str, Any]) -> tuple[float, float]:
    """(serial S, parallel P) CPU seconds of a stage record: its own process's and its workers' (see the
    module docstring)."""
    own = float(stage.get("own_cpu_s", stage["cpu_s"]))
    return own, max(0.0, float(stage["cpu_s"]) - own)


def on_cores(serial: float, parallel: float, cores: int) -> float:
    return serial + parallel / max(1, cores)


def affine(x0: float, y0: float, x1: float, y1: float) -> tuple[float, float]:
    """(fixed, per-unit) through two points; a negative slope (only noise gives one) counts as 0."""
    slope = max(0.0, (y1 - y0) / (x1 - x0)) if x1 != x0 else 0.0
    return y1 - slope * x1, slope


def _encoder_model(profiles: Mapping[str, Any] | None, tokens: float) -> dict[str, Any] | None:
    """The encoder's training time as a function of a domain's tokens: seconds per training sentence
    (measured in ``profiles``, a run of ``tokens``) times the sentences it would train on, its eligible
    sentences scaled with the tokens up to ``encoder_max_sentences``. Training is a fixed cost once past
    the cap, so an affine fit through two runs below the cap would charge it per token (the 2% run's
    fit printed 40 h for Video_Games). ``None`` when the run does not report the encoder."""
    stats = (profiles or {}).get("stats") or {}
    need = ("encoder_seconds", "train_sentences", "encoder_eligible_sentences", "encoder_max_sentences")
    if not all(stats.get(k) for k in need):
        return None
    rate = float(stats["encoder_seconds"]) / int(stats["train_sentences"])
    eligible, cap = int(stats["encoder_eligible_sentences"]), int(stats["encoder_max_sentences"])

    def at(t: float) -> float:
        return rate * min(cap, eligible * t / tokens)

    return {"seconds_per_sentence": rate, "cap": cap, "measured_train_sentences": int(stats["train_sentences"]),
            "at": at}  # fmt: skip


def projections(main: Mapping[str, Any], fit: Mapping[str, Any] | None, workers: int, cores: int,
                nodes: Sequence[int]) -> dict[str, Any]:  # fmt: skip
    """Per stage of ``main``: measured wall, its serial/parallel split, the wall on ``cores`` cores and on
    Ray with each of ``nodes`` nodes of ``cores`` cores; with a ``fit`` run, the affine per-token fits and
    the other domains' projected walls (2 cores and ``cores`` cores)."""
    from pqb.builders.source.loadtest_domain import DOMAIN_SIZES

    out: dict[str, Any] = {"model": "S = the stage process's CPU s, P = its workers' CPU s; K free cores: "
                           "S + P/K; Ray with N nodes: S + P/(N·K)", "cores": cores, "nodes": list(nodes),
                           "stages": [], "notes": []}  # fmt: skip
    for st in main["build"]["stages"]:
        s, p = serial_parallel(st)
        out["stages"].append({"stage": st["stage"], "measured_wall_s": st["wall_s"], "serial_s": s, "parallel_cpu_s": p,
                              f"{workers}_cores_s": on_cores(s, p, workers), f"{cores}_cores_s": on_cores(s, p, cores),
                              **{f"ray_{n}x{cores}_s": on_cores(s, p, n * cores) for n in nodes}})  # fmt: skip
    if fit is None:
        return out
    x1, x0 = main["tokens"], fit["tokens"]
    by_stage = {st["stage"]: st for st in fit["build"]["stages"]}
    fits = {}
    enc = _encoder_model(next((st for st in main["build"]["stages"] if st["stage"] == "profiles"), None), x1)
    for st in main["build"]["stages"]:
        small = by_stage.get(st["stage"])
        if small is None:
            continue
        s1, p1 = serial_parallel(st)
        s0, p0 = serial_parallel(small)
        if st["stage"] == "profiles" and enc is not None:  # the encoder is projected on its own, below
            s1 -= float(st["stats"]["encoder_seconds"])
            s0 -= float(small["stats"].get("encoder_seconds", 0.0))
        fits[st["stage"]] = {"serial": affine(x0, s0, x1, s1), "parallel": affine(x0, p0, x1, p1)}
    out["fits"] = {k: {part: {"fixed_s": a, "per_million_tokens_s": b * 1e6} for part, (a, b) in v.items()}
                   for k, v in fits.items()}  # fmt: skip
    if enc is not None:
        out["encoder"] = {k: v for k, v in enc.items() if k != "at"}
        out["notes"].append(
            f"the encoder's training is projected apart from the profiles stage's fit: "
            f"{enc['seconds_per_sentence'] * 1e3:.1f} ms per training sentence (measured) times "
            f"min(its cap {enc['cap']:,}, the eligible sentences scaled with the tokens)"
        )
    out["domains"] = {}
    for name, size in DOMAIN_SIZES.items():
        tokens = size.reviews * size.tokens_per_review
        per = {k: (v["serial"][0] + v["serial"][1] * tokens, v["parallel"][0] + v["parallel"][1] * tokens)
               for k, v in fits.items()}  # fmt: skip
        if enc is not None:
            per["encoder"] = (enc["at"](tokens), 0.0)
        out["domains"][name] = {
            "tokens": tokens, "kind": "measured" if name == main["domain"] and main["scale"] == 1 else "projected",
            f"{workers}_workers_s": sum(on_cores(s, p, workers) for s, p in per.values()),
            f"{cores}_cores_s": sum(on_cores(s, p, cores) for s, p in per.values()),
            **{f"ray_{n}x{cores}_s": sum(on_cores(s, p, n * cores) for s, p in per.values()) for n in nodes},
        }  # fmt: skip
    return out


# --------------------------------------------------------------------------------------------------
# One run, its tables and its JSON
# --------------------------------------------------------------------------------------------------


def _commit() -> str:
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()  # fmt: skip
    except OSError:
        return "unknown"
    return sha + ("+uncommitted changes" if dirty else "")


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").is_file() else ""  # fmt: skip
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{platform.machine()}, {os.cpu_count()} cores ({cpu}), {mem:.0f} GiB, Python {platform.python_version()}"


def one_domain(domain: str, scale: float, tmp: Path, env: Mapping[str, str], *, preset: str | None, workers: int,
               seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """Generate the LOAD TEST domain at ``scale`` and build it."""
    from pqb.builders.source.loadtest_domain import generate_domain

    src = tmp / f"loadtest-{domain}-{scale:g}"
    t0 = time.perf_counter()
    info = generate_domain(settings_amazon_dir(), domain, src, scale=scale, seed=seed, progress=False)
    generated = time.perf_counter() - t0
    tag = f"{domain}-{scale:g}"
    res = build(src, domain, tmp / f"work-{tag}", tmp / f"dataset-{tag}", env, preset=preset, workers=workers)
    w = info["written"]
    return {"domain": domain, "category": info["category"], "scale": scale, "source": src, "generate_s": generated,
            "reviews": w["reviews"], "users": w["users"], "products": w["products"],
            "tokens": w["reviews"] * info["means"]["tokens_per_review"], "generator": info, "build": res,
            "dataset": tmp / f"dataset-{tag}"}  # fmt: skip


def settings_amazon_dir() -> Path:
    from pqb.dataset import settings

    return Path(settings.PQB_AMAZON_DIR)


def run(domain: str, *, scale: float, preset: str | None, workers: int, harness: Sequence[str],
        fit_scale: float | None, cores: int, nodes: Sequence[int], tmp: Path | None = None) -> dict[str, Any]:  # fmt: skip
    """The whole measurement (see the module docstring); returns what ``paper_scale.json`` records."""
    load0, commit = os.getloadavg(), _commit()  # the code that runs is the code at the start
    # a folder given with --tmp is kept (the LOAD TEST data, the builds and each step's log), so a step
    # that fails after an hour's build loses nothing; without one, a temporary folder is removed
    place = (
        nullcontext(tempfile.mkdtemp(prefix="pqb-paper-", dir=tmp))
        if tmp
        else tempfile.TemporaryDirectory(prefix="pqb-paper-")
    )
    with place as d:
        work = Path(d)
        env = {**os.environ, "PQB_CACHE_DIR": str(work / "cache"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "TRANSFORMERS_OFFLINE": "1"}  # fmt: skip
        main = one_domain(domain, scale, work, env, preset=preset, workers=workers)
        rows = main["build"]["stages"]
        built = any(r["stage"] == "publish" for r in rows)
        pub = (
            publishing_rows(main["source"], main["category"], domain, main["dataset"], env, work)
            if built
            else []
        )
        har = harness_rows(harness, domain, main["dataset"], env, work) if built and harness else []
        fit = one_domain(domain, fit_scale, work, env, preset=preset, workers=workers) if fit_scale else None
        proj = projections(main, fit, workers, cores, nodes)
    load1 = os.getloadavg()
    gen = main["generator"]
    return {
        "label": LABEL, "what": f"pqb-build all on a {LABEL} domain of the published {main['category']} size"
        + (f" x {scale:g}" if scale != 1 else ""),
        "domain": domain, "scale": scale, "preset": main["build"]["preset_ran"], "workers": workers,
        "reviews": main["reviews"], "users": main["users"], "products": main["products"],
        "wall_s": main["build"]["wall_s"], "cpu_s": main["build"]["cpu_s"], "peak_rss_mb": main["build"]["peak_rss_mb"],
        "exit": main["build"]["exit"], "linked_users": main["build"]["linked_users"], "generate_s": main["generate_s"],
        "stages": main["build"]["stages"], "generator": {k: gen[k] for k in ("means", "law", "realised", "distinct",
                                                                            "resampled_from")},
        "publishing": pub, "harness": har,
        "fit_run": None if fit is None else {"scale": fit_scale, "reviews": fit["reviews"], "wall_s": fit["build"]["wall_s"],
                                             "peak_rss_mb": fit["build"]["peak_rss_mb"], "stages": fit["build"]["stages"]},
        "projection": proj, "commit": commit, "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": " ".join(["python", *sys.argv]),
        "load_average": {"start": load0[0], "end": load1[0]},
        "noisy": max(load0[0], load1[0]) > (os.cpu_count() or 1),
        "argv": main["build"]["argv"],
    }  # fmt: skip


COUNT_KEYS = ("reviews", "products", "targets", "users", "users_qualified", "users_capped", "sentences",
              "sentences_written", "links", "linked_users", "linked_targets", "gaussians", "profile_sentences",
              "parsed_sentences", "train_sentences", "edits", "candidates", "rows")  # fmt: skip
"""Stage counts the table shows when a stage reports them (qualified users, sentences, links, rows...)."""


def _cache(cache: Mapping[str, int]) -> str:
    kinds = sorted({k.rsplit(" ", 1)[0] for k in cache})
    return "; ".join(f"{k} {cache.get(f'{k} hits', 0):,}/{cache[f'{k} lookups']:,} "
                     f"({cache.get(f'{k} hits', 0) / max(1, cache[f'{k} lookups']):.1%})"
                     for k in kinds if cache.get(f"{k} lookups"))  # fmt: skip


def tables(res: Mapping[str, Any]) -> str:
    """The printed report: the per-stage table, the publishing and harness tables, the projections."""
    noisy = " — NOISY: the machine was shared (load average above the cores)" if res["noisy"] else ""
    lines = [f"{res['what']} ({res['reviews']:,} reviews, {res['users']:,} users, {res['products']:,} products), "
             f"preset {res['preset']}, {res['workers']} workers, commit {res['commit']}",
             f"{res['machine']}; {res['date']}; load average {res['load_average']['start']:.1f} → "
             f"{res['load_average']['end']:.1f}{noisy}", "",
             f"generate {LABEL} data: {res['generate_s']:.1f} s; reviews a user {res['generator']['means']['reviews_per_user']:.3f}, "
             f"tokens a review {res['generator']['means']['tokens_per_review']:.1f}; users with >= 50 sentences "
             f"{res['generator']['realised']['users_ge50_sentences']:,} ({res['generator']['realised']['ge50_sentences']:.2%})", "",
             "| stage | wall s | CPU s, all processes | peak RSS MB, all processes | counts | cache hits / distinct keys |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for st in res["stages"]:
        counts = ", ".join(f"{k} {st['stats'][k]:,}" for k in COUNT_KEYS if k in st["stats"])
        lines.append(f"| {st['stage']} | {st['wall_s']:.1f} | {st['cpu_s']:.1f} | {st['peak_rss_mb']:,.0f} | {counts} "
                     f"| {_cache(st['cache'])} |")  # fmt: skip
    lines.append(f"| **all** (`pqb-build all`, exit {res['exit']}) | **{res['wall_s']:.1f}** | {res['cpu_s']:.1f} "
                 f"| **{res['peak_rss_mb']:,.0f}** | linked users {res['linked_users']:,} | |")  # fmt: skip
    if res["publishing"] or res["harness"]:
        lines += ["", "| on the build | wall s | CPU s | peak RSS MB | what |", "|---|---|---|---|---|"]
        for r in res["publishing"]:
            what = ", ".join(
                f"{k} {r[k]:,}" for k in ("records", "targets", "documents", "queries") if k in r
            )
            lines.append(
                f"| {r['what']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['peak_rss_mb']:,.0f} | {what} |"
            )
        for r in res["harness"]:
            lines.append(f"| `pqb-harness run --model {r['model']}` (syntactic + error, whole corpus, cold) "
                         f"| {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['peak_rss_mb']:,.0f} | {res['products']:,} documents |")  # fmt: skip
    proj = res["projection"]
    k, nodes = proj["cores"], proj["nodes"]
    w = res["workers"]
    lines += ["", f"Projection (model: {proj['model']}; projected, not measured)", "",
              f"| stage | measured wall s ({w} workers) | serial CPU s | parallel CPU s | {w} free cores s | {k} cores s | "
              + " | ".join(f"Ray {n}×{k} cores s" for n in nodes) + " |", "|---|---|---|---|---|---|" + "---|" * len(nodes)]  # fmt: skip
    for st in proj["stages"]:
        lines.append(f"| {st['stage']} | {st['measured_wall_s']:.1f} | {st['serial_s']:.1f} | {st['parallel_cpu_s']:.1f} "
                     f"| {st[f'{w}_cores_s']:.1f} | {st[f'{k}_cores_s']:.1f} | "
                     + " | ".join(f"{st[f'ray_{n}x{k}_s']:.1f}" for n in nodes) + " |")  # fmt: skip
    if "domains" in proj:
        lines += ["", f"| domain (full published size) | measured or projected | tokens | {w} workers min | {k} cores min | "
                  + " | ".join(f"Ray {n}×{k} min" for n in nodes) + " |", "|---|---|---|---|---|" + "---|" * len(nodes)]  # fmt: skip
        for name, d in proj["domains"].items():
            lines.append(f"| {name} | {d['kind']} (affine per-token fit, {res['fit_run']['scale']:g} and {res['scale']:g}) "
                         f"| {d['tokens'] / 1e6:,.0f}M | {d[f'{w}_workers_s'] / 60:.1f} | {d[f'{k}_cores_s'] / 60:.1f} | "
                         + " | ".join(f"{d[f'ray_{n}x{k}_s'] / 60:.1f}" for n in nodes) + " |")  # fmt: skip
    lines += [f"\nnote: {n}" for n in proj.get("notes", [])]
    return "\n".join(lines)


def write_json(path: Path, res: Mapping[str, Any]) -> None:
    from pqb.dataset.io import atomic_write_json

    atomic_write_json(path, {k: v for k, v in res.items()}, indent=1)
