"""Export one domain's MTEB views as a BEIR folder that ``beir``'s ``GenericDataLoader`` reads.

Layout written (BEIR's documented format)::

    <out>/corpus.jsonl      {"_id": <asin>, "title": <title>, "text": <body>}   one document per line
    <out>/queries.jsonl     {"_id": <query id>, "text": <query>}               clean and error queries
    <out>/qrels/test.tsv    query-id<TAB>corpus-id<TAB>score, with that header line

BEIR joins ``title`` and ``text`` with a space, as MTEB and the harness do, so a BEIR evaluation scores
the same documents. Lines are sorted by id and written atomically, so equal datasets export identical
files. Reads the ``<domain>-corpus``/``-queries``/``-qrels`` configs through the harness's loader, so a
local folder and a Hub id both work and fail with the same one-line messages. The views are checked
first (:func:`~pqb.harness.evaluation.dataset_checks.check_retrieval_views`: unique query ids and qrels,
qrels to corpus documents and known queries, a qrel for every query); a violation exports nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

from pqb.dataset.io import atomic_write_text
from pqb.harness.evaluation.dataset_checks import load_checked_views

SPLIT = "test"


def _jsonl(rows: list[dict[str, str]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def export_beir(dataset_path: str, domain: str, out: Path, *, revision: str | None = None) -> dict[str, int]:
    """Write ``out/corpus.jsonl``, ``out/queries.jsonl`` and ``out/qrels/test.tsv``; returns counts."""
    corpus, queries, qrels = load_checked_views(dataset_path, domain, revision)
    docs = sorted(({"_id": r["id"], "title": r["title"] or "", "text": r["text"] or ""} for r in corpus),
                  key=lambda r: r["_id"])  # fmt: skip
    qs = sorted(({"_id": r["id"], "text": r["text"]} for r in queries), key=lambda r: r["_id"])
    rels = sorted((r["query-id"], r["corpus-id"], int(r["score"])) for r in qrels)
    out = Path(out)
    atomic_write_text(out / "corpus.jsonl", _jsonl(docs))
    atomic_write_text(out / "queries.jsonl", _jsonl(qs))
    atomic_write_text(
        out / "qrels" / f"{SPLIT}.tsv",
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in rels),
    )
    return {"documents": len(docs), "queries": len(qs), "qrels": len(rels)}
