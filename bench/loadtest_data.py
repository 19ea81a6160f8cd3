"""LOAD TEST data: a PQB-shaped dataset folder resampled from the real Video_Games product records.

Not a benchmark. It exists to time the harness at paper scale (137K–217K products) on a machine whose
real data holds 1,488 products. Every word comes from the real slice; documents and queries are new
combinations of them, and every id, title and card line says ``LOAD TEST``:

* documents: real-shaped product documents (:func:`documents`): a real record's title with each word
  swapped, with probability 0.3, for a word of another real title, and the fields that record has
  (brand, categories, details, features, description) each taken from another real record, laid out
  by the builders' own document layout (``pqb.builders.source.products.document_body``), so documents
  have real lengths (the bench prints their length distribution beside the real corpus's). The first
  generator (a title plus 0–4 sentences, a third of real length) is gone: BM25 timings on it
  understated tokenization and indexing (issue 32), and no benchmark needs it;
* rows: ``pairs`` syntactic pairs; each takes a target document, five spans of its title as core terms,
  and two real PQB query frames (from ``pqb_dataset/``'s built rows) whose five core terms are replaced
  by those spans; the error query deletes one letter of a frame word (mechanism ``deletion``; a
  one-edit chain, ``backoff`` since no real user's profile stands behind it).

Usage::

    python bench/loadtest_data.py OUT_DIR --docs 200000 --pairs 2500 [--meta FILE] [--rows PARQUET]

writes ``OUT_DIR/README.md`` (card) and configs ``video_games_loadtest`` and
``video_games_loadtest-corpus``, so ``pqb-harness run --model bm25 --tasks <task yaml> --dataset_path
OUT_DIR`` runs end to end (bench/bench_bm25.py writes the task file it needs).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _default_meta() -> Path:
    from pqb.dataset import settings

    return Path(settings.PQB_AMAZON_DIR) / "meta_Video_Games.jsonl"


DEFAULT_META = _default_meta()
"""The real product records: ``$PQB_AMAZON_DIR/meta_Video_Games.jsonl`` (the offline slice by default)."""
DEFAULT_ROWS = next(
    iter(sorted((ROOT / "pqb_dataset" / "data" / "video_games").glob("test-00000-of-00001*.parquet"))),
    ROOT / "pqb_dataset" / "data" / "video_games" / "test-00000-of-00001.parquet",
)
"""The built rows shard (its name carries its content hash, see pqb.builders.publish.layout)."""
ROWS_CONFIG = "video_games_loadtest"
CORPUS_CONFIG = "video_games_loadtest-corpus"
LABEL = "LOAD TEST"
SHAPE = "real"
"""The document generator's shape (:func:`documents`), part of the bench's folder names so a folder of
another generator is never reused."""


def _real_records(meta: Path) -> list[dict]:
    """The real product records of ``meta`` (one JSON object per line)."""
    if not meta.is_file():
        raise SystemExit(f"{meta}: no such file; pass --meta <meta_Video_Games.jsonl> or set PQB_AMAZON_DIR")
    with meta.open(encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    if not any(r.get("title") for r in records):
        raise SystemExit(f"{meta}: no product titles; pass --meta <meta_*.jsonl>")
    return records


def documents(n_docs: int, meta: Path, seed: int = 0) -> tuple[list[str], list[str], list[str]]:
    """(ids, titles, texts) of ``n_docs`` real-shaped LOAD TEST documents resampled from ``meta``.

    Why this shape: BM25's cost is per token, so a load test must have real document lengths (the first
    generator's title + 0–4 sentences were a third of real length, issue 32). The records come from
    :func:`pqb.builders.source.loadtest_domain.resampled_meta_records` (real titles with words swapped,
    each body field from another real record; the builders' LOAD TEST domains use the same generator)
    and go through the builders' own layout (:func:`pqb.builders.source.products.document_body`, the
    corpus ``text``; the title cleaned by ``clean_text``, as in ``product_row``).
    """
    from pqb.builders.source.loadtest_domain import resampled_meta_records
    from pqb.builders.source.products import clean_text, document_body

    records = _real_records(meta)
    titled = [r for r in records if r.get("title")]
    ids, out_titles, texts = [], [], []
    for i, rec in enumerate(resampled_meta_records(titled, records, n_docs, np.random.default_rng(seed))):
        ids.append(f"LOADTEST{i:08d}")
        out_titles.append(clean_text(rec["title"]))
        texts.append(document_body(rec))
    return ids, out_titles, texts


def length_stats(titles: list[str], texts: list[str]) -> dict[str, float]:
    """Characters of each retriever document (``document_string(title, text)``): mean, p10, p50, p90,
    and the mean of those with a body."""
    from pqb.dataset.schema import document_string

    n = np.asarray([len(document_string(a, b)) for a, b in zip(titles, texts, strict=True)], np.float64)
    body = np.asarray([bool(b) for b in texts])
    p10, p50, p90 = np.percentile(n, [10, 50, 90]) if len(n) else (0.0, 0.0, 0.0)
    return {"n": len(n), "mean": float(n.mean()) if len(n) else 0.0, "p10": float(p10), "p50": float(p50),
            "p90": float(p90), "mean_with_body": float(n[body].mean()) if body.any() else 0.0}  # fmt: skip


DEFAULT_CORPUS = next(
    iter(sorted((ROOT / "pqb_dataset" / "data" / "video_games-corpus").glob("test-00000-of-00001*.parquet"))),
    ROOT / "pqb_dataset" / "data" / "video_games-corpus" / "test-00000-of-00001.parquet",
)
"""The real embedded corpus shard, whose document lengths the LOAD TEST ones are reported beside."""


def real_length_stats(corpus: Path = DEFAULT_CORPUS) -> dict[str, float]:
    """:func:`length_stats` of the real embedded corpus (``pqb_dataset/``)."""
    import pyarrow.parquet as pq

    t = pq.read_table(corpus, columns=["title", "text"]).to_pydict()
    return length_stats(t["title"], t["text"])


def folder_length_stats(folder: Path) -> dict[str, float]:
    """:func:`length_stats` of a LOAD TEST folder written by :func:`write`."""
    return real_length_stats(folder / "data" / CORPUS_CONFIG / "test-00000-of-00001.parquet")


def format_lengths(name: str, s: dict[str, float]) -> str:
    return (f"| {name} | {s['n']:,} | {s['mean']:,.0f} | {s['p10']:,.0f} | {s['p50']:,.0f} | {s['p90']:,.0f} "
            f"| {s['mean_with_body']:,.0f} |")  # fmt: skip


LENGTH_HEADER = "| corpus | documents | mean chars | p10 | p50 | p90 | mean, documents with a body |\n|---|---|---|---|---|---|---|"


def _deletion(query: str, protected: list[tuple[int, int]], rng: np.random.Generator) -> dict | None:
    """One ``deletion`` edit of a frame word of >= 4 letters (outside every core-term span), recorded
    as PQB records edits: the whole word, its edited form, its location class and where in the word."""
    from pqb.dataset.schema import edit_position

    words = [m for m in re.finditer(r"[A-Za-z]{4,}", query)
             if not any(a < m.end() and m.start() < b for a, b in protected)]  # fmt: skip
    if not words:
        return None
    w = words[rng.integers(len(words))]
    at = int(rng.integers(1, len(w.group()) - 1))
    edited = w.group()[:at] + w.group()[at + 1 :]
    return {"start": w.start(), "end": w.end(), "original": w.group(), "edited": edited,
            "mechanism": "deletion", "location": "content_word",
            "position": edit_position(w.group(), edited)}  # fmt: skip


def rows(
    doc_ids: list[str], doc_titles: list[str], n_pairs: int, real_rows: Path, seed: int = 1
) -> list[dict]:
    """``2 × n_pairs`` LOAD TEST rows: syntactic pairs with error queries, valid under the PQB schema."""
    import pyarrow.parquet as pq

    from pqb.dataset.schema import count_term, term_spans

    frames = [r for r in pq.read_table(real_rows).to_pylist() if len(r["core_terms"] or []) == 5]
    if not frames:
        raise SystemExit(
            f"{real_rows}: no rows with five core terms; build the dataset first (pqb-build all)"
        )
    rng = np.random.default_rng(seed)
    out: list[dict] = []
    while len(out) < 2 * n_pairs:
        d = int(rng.integers(len(doc_ids)))
        words = [w for w in re.findall(r"[A-Za-z][A-Za-z0-9]{3,}", doc_titles[d])]
        uniq = list(dict.fromkeys(w.lower() for w in words))
        if len(uniq) < 5:
            continue
        core = [uniq[i] for i in sorted(rng.choice(len(uniq), 5, replace=False))]
        pair: list[dict] = []
        for _ in range(20):
            frame = frames[rng.integers(len(frames))]
            q = frame["query"]
            for old, new in zip(frame["core_terms"], core, strict=True):
                q = re.sub(re.escape(old), lambda _m, new=new: new, q, count=1, flags=re.IGNORECASE)
            if all(count_term(q, t) == 1 for t in core) and not any(p["query"] == q for p in pair):
                spans = [s for t in core for s in term_spans(q, t)]
                edit = _deletion(q, spans, rng)
                if edit is not None:
                    pair.append({"frame": frame, "query": q, "edit": edit})
            if len(pair) == 2:
                break
        if len(pair) < 2:
            continue
        pid = f"loadtest:{doc_ids[d]}:{len(out) // 2}"
        for k, p in enumerate(pair):
            e, q = p["edit"], p["query"]
            out.append({
                "id": f"{pid}:u{k}", "domain": "video_games_loadtest", "asin": doc_ids[d],
                "user_id": f"loadtest_user_{len(out)}", "pair_id": pid, "query": q,
                "error_query": q[: e["start"]] + e["edited"] + q[e["end"]:], "error_edits": [e],
                "error_chain": [e], "profile_evidence": 0, "backoff": True, "core_terms": core,
                "protected_terms": sorted(core),
                "attributes": [{"name": f"LOAD TEST term {i + 1}", "value": t} for i, t in enumerate(core)],
                "syntax": p["frame"]["syntax"],
            })  # fmt: skip
    return out


def write(
    out: Path, n_docs: int, n_pairs: int, meta: Path = DEFAULT_META, real_rows: Path = DEFAULT_ROWS
) -> Path:
    """Write the LOAD TEST dataset folder (card + two configs) and return it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pqb.dataset.schema import CORPUS_SCHEMA, ROWS_SCHEMA

    ids, titles, texts = documents(n_docs, meta)
    corpus = pa.table({"id": ids, "title": titles, "text": texts}, schema=CORPUS_SCHEMA)
    table = pa.Table.from_pylist(rows(ids, titles, n_pairs, real_rows), schema=ROWS_SCHEMA)
    card = ["---", f"pretty_name: PQB {LABEL} data (resampled from real Video_Games records; not a benchmark)",
            "configs:"]  # fmt: skip
    for name, t in ((ROWS_CONFIG, table), (CORPUS_CONFIG, corpus)):
        rel = f"data/{name}/test-00000-of-00001.parquet"
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(t, out / rel)
        card += [f"- config_name: {name}", "  data_files:", "  - split: test", f"    path: {rel}"]
    card += ["---", "", f"# {LABEL}", "",
             f"{LABEL} data written by bench/loadtest_data.py: {n_docs} real-shaped documents and {len(table)} rows "
             f"resampled from {meta.name} and the built PQB rows. For timing only; never report metrics on it.", ""]  # fmt: skip
    (out / "README.md").write_text("\n".join(card), encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--docs", type=int, default=200_000)
    p.add_argument("--pairs", type=int, default=2_500)
    p.add_argument("--meta", type=Path, default=DEFAULT_META, help="real meta_Video_Games.jsonl")
    p.add_argument("--rows", type=Path, default=DEFAULT_ROWS, help="built PQB rows parquet (query frames)")
    a = p.parse_args(argv)
    write(a.out, a.docs, a.pairs, a.meta, a.rows)
    print(f"{LABEL} dataset: {a.out} ({a.docs} documents, {2 * a.pairs} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
