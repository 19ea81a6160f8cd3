"""BM25 at paper scale against bm25s and pyserini measured in the same run, on LOAD TEST corpora.

Usage::

    python bench/bench_bm25.py [--docs 10000,50000,200000] [--pairs 2500] [--work /tmp/pqb-bench-bm25]
                               [--no-pyserini] [--e2e]

For each corpus size a LOAD TEST dataset is written with :mod:`bench.loadtest_data` (real-shaped documents:
fields resampled from the real Video_Games product records through the builders' document layout, at
real length; 2 × ``pairs`` queries) and each system runs in its own process, so its peak RSS is its own.
The documents' length distribution is printed beside the real embedded corpus's:

* ``ours`` — ``bm25`` (bm25s variant, the paper's setting k1=1.5, b=0.75, method lucene, no stemmer):
  index from raw text, then score + rank (cutoff 200) + top-200 of every query;
  with the compiled kernel when numba is installed (``kernel=auto``; its one-query warm-up, which loads
  or compiles the kernel, is timed apart);
* ``ours-numpy`` — the same with ``kernel=numpy``: its lists and ranks must equal ``ours``'s;
* ``bm25s`` — ``bm25s.tokenize`` + ``BM25.index``, then ``retrieve(k=200, n_threads=2)`` (top-200 only:
  no target rank, less work than ours);
* ``pyserini`` — Lucene indexing (2 threads) and ``batch_search(k=200, threads=2)``;
* ``ours-lucene`` — ``bm25 variant=lucene`` with pyserini's settings (k1=0.9, b=0.4, Porter, Lucene
  stopwords), and the number of queries whose target rank equals pyserini's (misses beyond 200 equal).

Ratios are ours' q/s over the reference's. ``--e2e`` also times ``pqb-harness run --model bm25`` on the
LOAD TEST tasks (syntactic + error, 1,000 bootstrap replicates) with a cold cache, beside the ``bm25s``
process of the same run end to end (load + tokenize + index + tokenize queries + top-200: its
``load_s + index_s + query_s``), and gives their ratio (issue 32's target: ≤ 0.5). The machine's load
average is printed beside the table: on a shared machine, timings move with other work.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))


def _load(folder: Path) -> tuple[object, list[str], list[int]]:
    """(Corpus, 2 × pairs queries, target corpus index) of a LOAD TEST folder, through the harness loader."""
    import loadtest_data as lt

    from pqb.harness.evaluation.data import load_config, load_corpus

    corpus = load_corpus(str(folder), lt.CORPUS_CONFIG)
    rows = load_config(str(folder), lt.ROWS_CONFIG).to_list()
    return corpus, [r["query"] for r in rows], [corpus.index_of[r["asin"]] for r in rows]


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(system: str, folder: Path, out: Path) -> None:
    """Run one system on one folder and write its timings (JSON) to ``out``."""
    import numpy as np

    t = time.perf_counter()
    corpus, queries, targets = _load(folder)
    res: dict = {
        "system": system,
        "load_s": time.perf_counter() - t,
        "n_docs": len(corpus),
        "n_queries": len(queries),
    }
    tg = np.asarray(targets, np.int64)
    if system in ("ours", "ours-numpy", "ours-lucene"):
        from pqb.harness.retrievers.lexical.bm25 import BM25Retriever

        args = {"variant": "lucene", "k1": 0.9, "b": 0.4} if system == "ours-lucene" else {}
        r = BM25Retriever(**args, kernel="numpy" if system == "ours-numpy" else "auto")
        t = time.perf_counter()
        r.index(corpus)
        res["index_s"] = time.perf_counter() - t
        t = time.perf_counter()
        r.rank(
            queries[:1], np.zeros(1, np.int64), tg[:1], k=200, cutoff=200
        )  # numba loads/compiles its kernel
        res["warmup_s"], res["kernel"] = time.perf_counter() - t, "numba" if r._scorer.compiled else "numpy"
        t, c = time.perf_counter(), time.process_time()
        ranked = r.rank(queries, np.arange(len(queries)), tg, k=200, cutoff=200)
        res["query_s"], res["query_cpu_s"] = time.perf_counter() - t, time.process_time() - c
        res["ranks"] = [None if not np.isfinite(x) else int(x) for x in ranked.ranks]
        res["top_sha"] = hashlib.sha256(
            ranked.top.indices.tobytes() + ranked.top.scores.tobytes()
        ).hexdigest()
        res["band"] = r._scorer.stats if r._scorer is not None else {}
    elif system == "bm25s":
        import bm25s

        t = time.perf_counter()
        model = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
        model.index(
            bm25s.tokenize(list(corpus.texts), stopwords="en", show_progress=False), show_progress=False
        )
        res["index_s"] = time.perf_counter() - t
        t, c = time.perf_counter(), time.process_time()
        q = bm25s.tokenize(queries, stopwords="en", show_progress=False)
        model.retrieve(q, k=200, n_threads=2, show_progress=False)
        res["query_s"], res["query_cpu_s"] = time.perf_counter() - t, time.process_time() - c
    elif system == "pyserini":
        import shutil
        import tempfile

        from pqb.harness.retrievers.lexical.pyserini_bm25 import _prepare_jvm

        _prepare_jvm()
        from pyserini.index.lucene import LuceneIndexer
        from pyserini.search.lucene import LuceneSearcher

        where = Path(tempfile.mkdtemp(prefix="pqb-bench-lucene-"))
        try:
            t = time.perf_counter()
            indexer = LuceneIndexer(args=["-index", str(where), "-stemmer", "porter"], threads=2)
            for doc_id, text in zip(corpus.ids, corpus.documents(), strict=True):
                indexer.add_doc_dict({"id": doc_id, "contents": text})
            indexer.close()
            res["index_s"] = time.perf_counter() - t
            searcher = LuceneSearcher(str(where))
            searcher.set_bm25(0.9, 0.4)
            qids = [str(i) for i in range(len(queries))]
            t, c = time.perf_counter(), time.process_time()
            hits = searcher.batch_search(queries, qids, k=200, threads=2)
            res["query_s"], res["query_cpu_s"] = time.perf_counter() - t, time.process_time() - c
            pos = corpus.index_of
            ranks = []
            for i, qid in enumerate(qids):
                found = [j + 1 for j, h in enumerate(hits.get(qid, [])) if pos[h.docid] == targets[i]]
                ranks.append(found[0] if found else None)
            res["ranks"] = ranks
        finally:
            shutil.rmtree(where, ignore_errors=True)
    res["peak_rss_mb"] = _peak_mb()
    out.write_text(json.dumps(res))


def _run_child(system: str, folder: Path, work: Path) -> dict:
    out = work / f"{folder.name}-{system}.json"
    cmd = [sys.executable, __file__, "--child", system, "--folder", str(folder), "--out", str(out)]
    subprocess.run(cmd, check=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    return json.loads(out.read_text())


def _e2e(folder: Path, work: Path) -> dict:
    import loadtest_data as lt

    tasks = work / "tasks"
    tasks.mkdir(parents=True, exist_ok=True)
    for pt, main in (("syntactic", "flip@10"), ("error", "deg@10")):
        (tasks / f"loadtest_{pt}.yaml").write_text(
            f"task: loadtest_{pt}\ndataset_name: {lt.ROWS_CONFIG}\npair_type: {pt}\ntest_split: test\n"
            f"k_values: [1, 5, 10, 20]\nrr_cutoff: 200\nbootstrap: {{n_boot: 1000, seed: 0}}\nrun_depth: 100\n"
            f'main_score: {main}\ndescription: "{lt.LABEL} ({pt}): timing only, not a benchmark."\n'
        )
    cache = work / f"cache-{folder.name}"
    subprocess.run(["rm", "-rf", str(cache)], check=True)
    out = work / f"{folder.name}-e2e.json"
    argv = ["run", "--model", "bm25", "--tasks", "loadtest_syntactic,loadtest_error", "--include_path", str(tasks),
            "--dataset_path", str(folder), "--output_path", str(work / "results"), "--no_run_cache"]  # fmt: skip
    cmd = [
        sys.executable,
        __file__,
        "--child",
        "e2e",
        "--folder",
        str(folder),
        "--out",
        str(out),
        "--",
        *argv,
    ]
    subprocess.run(
        cmd, check=True, env={**os.environ, "PQB_CACHE_DIR": str(cache)}, stdout=subprocess.DEVNULL
    )
    return json.loads(out.read_text())


def child_e2e(argv: list[str], out: Path) -> None:
    """``pqb-harness <argv>`` in this process: its wall time, CPU time and peak RSS alone."""
    from pqb.harness.cli import main

    t, cpu = time.perf_counter(), time.process_time()
    code = main(argv)
    if code:
        raise SystemExit(code)
    out.write_text(json.dumps({"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - cpu,
                               "peak_rss_mb": _peak_mb()}))  # fmt: skip


E2E_HEADER = (
    "| docs | ours: wall | ours: CPU (user+sys) | ours: peak RSS | bm25s: load + index + query "
    "| bm25s: peak RSS | ours ÷ bm25s (wall) |\n|---|---|---|---|---|---|---|"
)


def _e2e_line(n: int, e: dict, b: dict) -> str:
    """One row of the end-to-end table: ours (``pqb-harness run``) beside the bm25s process ``b``."""
    ref = b["load_s"] + b["index_s"] + b["query_s"]
    return (f"| {n:,} | {e['wall_s']:.1f} s | {e['cpu_s']:.1f} s | {e['peak_rss_mb']:.0f} MB "
            f"| {b['load_s']:.1f} + {b['index_s']:.1f} + {b['query_s']:.1f} = {ref:.1f} s "
            f"| {b['peak_rss_mb']:.0f} MB | {e['wall_s'] / ref:.2f} |")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--docs", default="10000,50000,200000")
    p.add_argument("--pairs", type=int, default=2500)
    p.add_argument("--work", type=Path, default=Path("/tmp/pqb-bench-bm25"))
    p.add_argument("--no-pyserini", action="store_true")
    p.add_argument("--e2e", action="store_true")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--only-e2e", action="store_true", help="skip the retrieval table")
    p.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child == "e2e":
        child_e2e(a.rest, a.out)
        return 0
    if a.child:
        child(a.child, a.folder, a.out)
        return 0
    import loadtest_data as lt

    a.work.mkdir(parents=True, exist_ok=True)
    systems = ["ours", "ours-numpy", "bm25s"] + ([] if a.no_pyserini else ["pyserini", "ours-lucene"])
    lines = [f"{lt.LABEL} corpora; load average {os.getloadavg()[0]:.1f} at start on {os.cpu_count()} CPUs", "",
             "| docs | ours: index / q/s (score + ranks + top-200) / peak MB | bm25s: index / q/s (top-200, 2 thr) / peak MB "
             "| pyserini: index / q/s (top-200, 2 thr) | ours ÷ bm25s | ours ÷ pyserini | lucene variant: q/s, ranks = pyserini "
             "| ours, kernel=numpy: q/s, ranks and lists = ours |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    e2e_lines: list[str] = []
    length_lines: list[str] = []
    cpu_lines = ["| docs | " + " | ".join(systems) + " | ours ÷ bm25s |", "|---" * (len(systems) + 2) + "|"]
    for n in [int(x) for x in a.docs.split(",")]:
        folder = a.work / f"loadtest-{lt.SHAPE}-{n}"  # the shape in the name: no stale short-document folder
        if not (folder / "README.md").exists():
            lt.write(folder, n, a.pairs)
        length_lines.append(lt.format_lengths(f"{lt.LABEL}, {n:,} documents", lt.folder_length_stats(folder)))
        if a.only_e2e:
            e2e_lines.append(_e2e_line(n, _e2e(folder, a.work), _run_child("bm25s", folder, a.work)))
            print(e2e_lines[-1], flush=True)
            continue
        res = {s: _run_child(s, folder, a.work) for s in systems}
        qps = {s: r["n_queries"] / r["query_s"] for s, r in res.items()}
        o, b, onp = res["ours"], res["bm25s"], res["ours-numpy"]
        cells = [f"{n:,}", f"{o['index_s']:.1f} s / {qps['ours']:,.0f} / {o['peak_rss_mb']:.0f} ({o['kernel']}, "
                           f"warm-up {o['warmup_s']:.1f} s)",
                 f"{b['index_s']:.1f} s / {qps['bm25s']:,.0f} / {b['peak_rss_mb']:.0f}"]  # fmt: skip
        if "pyserini" in res:
            ps, ol = res["pyserini"], res["ours-lucene"]
            same = sum(x == y for x, y in zip(ps["ranks"], ol["ranks"], strict=True))
            cells += [f"{ps['index_s']:.1f} s / {qps['pyserini']:,.0f}", f"{qps['ours'] / qps['bm25s']:.2f}×",
                      f"{qps['ours'] / qps['pyserini']:.1f}×",
                      f"{qps['ours-lucene']:,.0f}, {same:,}/{len(ps['ranks']):,} identical"]  # fmt: skip
        else:
            cells += ["–", f"{qps['ours'] / qps['bm25s']:.2f}×", "–", "–"]
        same = o["ranks"] == onp["ranks"] and o["top_sha"] == onp["top_sha"]
        cells.append(f"{qps['ours-numpy']:,.0f}, {'identical' if same else 'DIFFERENT'}")
        lines.append("| " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
        cpu = {s_: r["n_queries"] / r["query_cpu_s"] for s_, r in res.items() if r.get("query_cpu_s")}
        cpu_lines.append(f"| {n:,} | " + " | ".join(f"{cpu[s_]:,.0f}" if s_ in cpu else "–" for s_ in systems)
                         + f" | {cpu['ours'] / cpu['bm25s']:.2f}× |")  # fmt: skip
        if a.e2e:
            e2e_lines.append(_e2e_line(n, _e2e(folder, a.work), b))
            print(e2e_lines[-1], flush=True)
    print(f'\nDocument length (characters of title + " " + text)\n\n{lt.LENGTH_HEADER}')
    print(
        "\n".join(
            [lt.format_lengths("real embedded corpus (pqb_dataset/)", lt.real_length_stats()), *length_lines]
        )
    )
    print()
    if not a.only_e2e:
        print("\n".join(lines))
    if len(cpu_lines) > 2:
        print("\nQueries per CPU-second (user + sys of the process, all its threads; robust to other load)\n")
        print("\n".join(cpu_lines))
    if e2e_lines:
        print(
            f"\n`pqb-harness run --model bm25` (2 {lt.LABEL} tasks, cold cache) against bm25s end to end "
            "(load + tokenize + index + top-200, same run)\n"
        )
        print(E2E_HEADER + "\n" + "\n".join(e2e_lines))
    print(f"\nload average at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
