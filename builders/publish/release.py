"""Import of the authors' published PQB queries as ``<d>-release`` (and ``<d>-release-corpus``) configs.

The release (``$PQB_RELEASE_DIR/<Category>.json``, as the authors published it) holds per ASIN a list of
``{asin, uid, syntax_query, typo_query}``: no corpus, no core terms, no edit annotations. We map it to
the ROWS schema so the same checks and the harness run on it:

* ``pair_id = <domain>:<asin>`` (all records of an ASIN form one group; the paper pairs them),
* ``id = <domain>:<asin>:<pseudonymised uid>`` (same pseudonym rule as our build),
* ``error_edits`` recovered by Builders II's ``diff_edits(syntax_query, typo_query)``,
* ``core_terms`` empty (unknown), ``syntax`` null, ``attributes`` empty,
* ``protected_terms``: the target's brand/title words *when a meta file covers the ASIN* (what the
  paper promises to preserve), so ``check`` can count edits inside them; otherwise empty.

Given the domain's Amazon meta file, ``<d>-release-corpus`` holds every titled product as a document
built by Builders I's :func:`pqb.builders.source.products.document_body`, so the queries can be evaluated.

The core-term audit (:func:`core_term_audit`) answers "how many of their pairs break the 'same five
core terms, same frequencies' promise" with two proxies, since their core terms are unknown:
``release`` = words shared by every query of the ASIN (Builders II's ``core_term_proxy``), compared by
frequency; ``meta`` = our own 5 core terms (Builders I's ``select_core_terms``) where the meta file
covers the ASIN, compared by presence and frequency.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from pqb.builders.publish.staging import staged
from pqb.builders.publish.tables import pseudonymize, write_config
from pqb.builders.writing_errors.mechanisms import diff_edits, edit_touches
from pqb.dataset import settings
from pqb.dataset.schema import (
    CORPUS_SCHEMA,
    ROWS_SCHEMA,
    category_from_domain,
    config_name,
    count_term,
    words,
)


def release_file(domain: str, release_dir: Path | None = None) -> Path:
    path = Path(release_dir or settings.PQB_RELEASE_DIR) / f"{category_from_domain(domain)}.json"
    if not path.is_file():
        raise FileNotFoundError(f"No release file {path}; set PQB_RELEASE_DIR or pass --release-dir.")
    return path


def read_meta(path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Metadata records by parent_asin (Builders I's reader: malformed lines are counted, not fatal)."""
    from pqb.builders.source.amazon import ReadStats, iter_meta

    stats = ReadStats(path=str(path))
    out = {}
    for rec in iter_meta(path, stats):
        out.setdefault(rec["parent_asin"], rec)
    return out, stats.as_dict()


def release_rows(
    domain: str, release: Mapping[str, Sequence[Mapping[str, Any]]], meta: Mapping[str, Any] | None = None
) -> tuple[list[dict[str, Any]], Counter[str]]:
    """The release's records as ROWS-schema dicts, plus counts (records, typo, malformed, covered by meta)."""
    from pqb.builders.source.products import protected_terms

    rows: list[dict[str, Any]] = []
    counts: Counter[str] = Counter()
    for asin in sorted(release):
        for rec in release[asin]:
            counts["records"] += 1
            q, t, uid = rec.get("syntax_query"), rec.get("typo_query"), rec.get("uid")
            if not isinstance(q, str) or not q.strip() or not isinstance(uid, str):
                counts["malformed_records"] += 1
                continue
            m = (meta or {}).get(asin)
            counts["covered_by_meta"] += int(m is not None)
            counts["with_typo_query"] += int(t is not None)
            counts["typo_equals_query"] += int(t is not None and t == q)
            rows.append(
                {
                    "id": f"{domain}:{asin}:{pseudonymize(uid)}",
                    "domain": domain,
                    "asin": asin,
                    "user_id": pseudonymize(uid),
                    "pair_id": f"{domain}:{asin}",
                    "query": q,
                    "error_query": t,
                    "error_edits": diff_edits(q, t) if isinstance(t, str) and t != q else [],
                    "core_terms": [],
                    "protected_terms": protected_terms(m) if m is not None else [],
                    "attributes": [],
                    "syntax": None,
                }
            )
    return rows, counts


def release_corpus(meta: Mapping[str, Mapping[str, Any]]) -> pa.Table:
    """Documents for every titled product of the meta file (Builders I's cleaning and document text)."""
    from pqb.builders.source.products import clean_text, document_body

    docs = [
        {"id": asin, "title": clean_text(m.get("title")), "text": document_body(m)}
        for asin, m in sorted(meta.items())
        if clean_text(m.get("title"))
    ]
    return pa.Table.from_pylist(docs, schema=CORPUS_SCHEMA)


def _words_of(terms: Iterable[str]) -> set[str]:
    return {w for t in terms for w in words(t)}


def core_term_audit(
    rows: Sequence[Mapping[str, Any]], meta: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Pairs breaking the core-term promise and error edits touching core-term words, under both proxies."""
    from pqb.builders.reports.release_compare import core_term_proxy
    from pqb.builders.source.products import descriptor_model, select_core_terms

    model = descriptor_model(meta.values()) if meta else None  # the meta file's own evidence, once

    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault(r["pair_id"], []).append(r)
    out: Counter[str] = Counter()
    for members in groups.values():
        queries = [m["query"] for m in members]
        proxy = sorted(core_term_proxy(queries))
        m = (meta or {}).get(members[0]["asin"])
        ours = [a.value for a in select_core_terms(m, model=model)] if m is not None else []
        if len(members) >= 2:
            out["pairs"] += 1
            if any(len({count_term(q, w) for q in queries}) > 1 for w in proxy):
                out["pairs_violating_release_proxy"] += 1
            if ours:
                out["pairs_with_meta_core_terms"] += 1
                if any(len({count_term(q, t) for q in queries}) > 1 for t in ours):
                    out["pairs_violating_meta_core_terms"] += 1
                if any(count_term(q, t) == 0 for q in queries for t in ours):
                    out["pairs_missing_a_meta_core_term"] += 1
        for r in members:
            edits = list(r.get("error_edits") or [])
            if not edits:
                continue
            out["error_rows"] += 1
            out["edits"] += len(edits)
            touch_proxy = [e for e in edits if edit_touches(e, r["query"], _words_of(proxy), list(proxy))]
            out["edits_touching_release_proxy"] += len(touch_proxy)
            out["error_rows_touching_release_proxy"] += int(bool(touch_proxy))
            if ours:
                out["error_rows_with_meta_core_terms"] += 1
                touch = [e for e in edits if edit_touches(e, r["query"], _words_of(ours), list(ours))]
                out["edits_touching_meta_core_terms"] += len(touch)
                out["error_rows_touching_meta_core_terms"] += int(bool(touch))
            out["error_rows_over_3_edits"] += int(len(edits) > 3)
    return dict(sorted(out.items()))


def run_release(
    domain: str,
    *,
    release_dir: Path | None = None,
    meta_path: Path | None = None,
    dataset_dir: Path | None = None,
) -> dict[str, Any]:
    """Write ``<d>-release`` (and ``<d>-release-corpus`` given ``meta_path``); returns counts and the audit."""
    dataset_dir = Path(dataset_dir or settings.default_dataset_dir())
    release = json.loads(release_file(domain, release_dir).read_text(encoding="utf-8"))
    meta, meta_stats = read_meta(meta_path) if meta_path else ({}, None)
    rows, counts = release_rows(domain, release, meta)
    with staged(dataset_dir) as stage:  # one writer; readers see the old or the new folder, never half
        out = _write_release(domain, rows, counts, meta, meta_stats, stage, with_corpus=meta_path is not None)
    return out


def _write_release(domain: str, rows: list[dict[str, Any]], counts: Mapping[str, int],
                   meta: Mapping[str, Mapping[str, Any]], meta_stats: Any, dataset_dir: Path,
                   with_corpus: bool) -> dict[str, Any]:  # fmt: skip
    """:func:`run_release`'s writes into a staged dataset folder (``with_corpus``: a meta file was read)."""
    write_config(pa.Table.from_pylist(rows, schema=ROWS_SCHEMA), dataset_dir, config_name(domain, "release"))
    out: dict[str, Any] = {"counts": dict(sorted(counts.items())), "rows": len(rows)}
    if with_corpus:
        corpus = release_corpus(meta)
        write_config(corpus, dataset_dir, config_name(domain, "release-corpus"))
        asins = set(corpus.column("id").to_pylist())
        out["corpus_documents"] = corpus.num_rows
        out["targets_in_corpus"] = len({r["asin"] for r in rows} & asins)
        out["targets"] = len({r["asin"] for r in rows})
        out["meta_read"] = meta_stats
    out["core_term_audit"] = core_term_audit(rows, meta)
    if (dataset_dir / "README.md").is_file():
        from pqb.builders.publish.card import declare_local_configs

        declare_local_configs(dataset_dir)  # local-only configs load by name; publish restores the card
    return out
