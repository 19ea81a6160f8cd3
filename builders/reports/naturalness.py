"""``pqb-build validate naturalness``: do PQB's queries read like language, beside the authors' queries and
real review sentences of the same domain? (issue 43)

Measured, on seeded samples of each source (about 200 texts, the issue's protocol):

* **perplexity** under a small causal LM (:mod:`pqb.builders.reports.lm_score`; median over texts with a
  percentile-bootstrap 95% CI). Fluent text scores low; word salad scores high. A perplexity is only
  comparable with one from the same model and conventions, so the report names the model, its file's
  sha256 and its document-start token, and scores all three sources in the same run.
* the same perplexity with the **attribute values masked**: only the tokens outside attribute-value
  spans are averaged (the values stay in the context, so the realizer's words are scored as they are
  read). PQB's spans are its exact core terms; the authors' release has none, so for both sides a proxy
  is reported too: the words present in every query of the product (its pair), minus stopwords, which
  covers every core-term word (:func:`pqb.builders.reports.release_compare.core_term_proxy`). The
  **pooled perplexity of the tokens inside the spans** says whether the values or their placing drive
  the gap (issue 43: about 1,957 inside, 115 outside).
* texts with **two or more questions** (counted as the card counts them,
  :func:`~pqb.builders.reports.query_checks.count_questions`) and **distinct first-two-word openings**: stacked
  questions and one frame repeated are what a reader notices first.

Real sentences have no attribute values, so their masked columns are empty, not equal to the unmasked
one. Sampling is seeded per source (:func:`pqb.builders.seeds.derive_seed`), so adding a source or
changing one's size leaves the others' samples alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pqb.builders.reports.lm_score import CausalLMScorer, TokenScores
from pqb.builders.reports.query_checks import count_questions, opening
from pqb.builders.reports.text_sources import (
    REAL_MAX_WORDS,
    REAL_MIN_WORDS,
    core_term_spans,
    in_length,
    proxy_vocabularies,
    read_pqb_rows,
    read_release,
    review_sentences,
    word_spans,
)
from pqb.builders.seeds import derive_seed
from pqb.dataset.io import atomic_write_json, atomic_write_text

SOURCES = ("pqb", "authors", "real")
SOURCE_LABELS = {
    "pqb": "PQB `query`",
    "authors": "authors' `syntax_query`",
    "real": f"real review sentences, {REAL_MIN_WORDS}-{REAL_MAX_WORDS} words",
}
Spans = list[tuple[int, int]]


@dataclass
class Sample:
    """One source's texts, with attribute-value spans where they are known (``None``: unknown)."""

    source: str
    texts: list[str]
    exact: list[Spans | None] = field(default_factory=list)
    proxy: list[Spans | None] = field(default_factory=list)
    population: int = 0  # texts the sample was drawn from


def seeded_indices(n_population: int, n: int, seed: int, purpose: str) -> list[int]:
    """``n`` indices of ``range(n_population)`` without replacement (all of them when ``n`` covers it), sorted."""
    if n >= n_population:
        return list(range(n_population))
    rng = np.random.default_rng(derive_seed(seed, "naturalness", purpose))
    return sorted(int(i) for i in rng.choice(n_population, size=n, replace=False))


def pqb_sample(rows: Sequence[Mapping[str, Any]], n: int, seed: int) -> Sample:
    """PQB queries with their exact core-term spans, and the proxy spans of their pair."""
    by_asin: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        by_asin[r["asin"]].append(r["query"])
    vocab = dict(zip(by_asin, proxy_vocabularies(by_asin.values()), strict=True))
    idx = seeded_indices(len(rows), n, seed, "pqb")
    chosen = [rows[i] for i in idx]
    texts = [r["query"] for r in chosen]
    return Sample(
        "pqb",
        texts,
        exact=[core_term_spans(r["query"], r["core_terms"] or []) for r in chosen],
        proxy=[
            word_spans(t, v) if (v := vocab[r["asin"]]) is not None else None
            for t, r in zip(texts, chosen, strict=True)
        ],
        population=len(rows),
    )


def authors_sample(release: Mapping[str, Sequence[Mapping[str, Any]]], n: int, seed: int) -> Sample:
    """The authors' clean queries (``syntax_query``), with proxy spans for products with >= 2 queries."""
    records = [(asin, r["syntax_query"]) for asin, recs in release.items() for r in recs]
    vocab = dict(
        zip(
            release,
            proxy_vocabularies([[r["syntax_query"] for r in recs] for recs in release.values()]),
            strict=True,
        )
    )
    idx = seeded_indices(len(records), n, seed, "authors")
    texts = [records[i][1] for i in idx]
    return Sample(
        "authors",
        texts,
        exact=[None] * len(texts),
        proxy=[
            word_spans(records[i][1], v) if (v := vocab[records[i][0]]) is not None else None for i in idx
        ],
        population=len(records),
    )


def real_sample(sentences: Sequence[str], n: int, seed: int) -> Sample:
    """Distinct review sentences of 15-35 words (sorted before sampling, so file order does not matter)."""
    pool = sorted({s for s in sentences if in_length(s)})
    idx = seeded_indices(len(pool), n, seed, "real")
    texts = [pool[i] for i in idx]
    return Sample("real", texts, exact=[None] * len(texts), proxy=[None] * len(texts), population=len(pool))


# -- text statistics ---------------------------------------------------------------------------------

def bootstrap_median(values: Sequence[float], n_boot: int, seed: int) -> dict[str, float | None]:
    """Median with a 95% percentile-bootstrap CI (``None`` fields for an empty input)."""
    v = np.asarray([x for x in values if np.isfinite(x)], dtype=float)
    if not len(v):
        return {"median": None, "lo": None, "hi": None, "n": 0}
    rng = np.random.default_rng(derive_seed(seed, "naturalness", "bootstrap"))
    meds = np.median(v[rng.integers(0, len(v), size=(n_boot, len(v)))], axis=1)
    return {
        "median": float(np.median(v)),
        "lo": float(np.percentile(meds, 2.5)),
        "hi": float(np.percentile(meds, 97.5)),
        "n": len(v),
    }


def _pooled(scores: Sequence[TokenScores], spans: Sequence[Spans | None], inside: bool) -> dict[str, Any]:
    vals = [
        s.nll[m if inside else ~m]
        for s, sp in zip(scores, spans, strict=True)
        if sp is not None
        for m in [s.inside(sp)]
    ]
    flat = np.concatenate(vals) if vals else np.zeros(0)
    return {"perplexity": float(np.exp(flat.mean())) if len(flat) else None, "tokens": len(flat)}


def measure(sample: Sample, scores: Sequence[TokenScores], n_boot: int, seed: int) -> dict[str, Any]:
    """Every number of one source's column."""
    out: dict[str, Any] = {
        "n": len(sample.texts),
        "population": sample.population,
        "perplexity": bootstrap_median([s.perplexity() for s in scores], n_boot, seed),
    }
    for kind in ("exact", "proxy"):
        spans = getattr(sample, kind)
        known = [(s, sp) for s, sp in zip(scores, spans, strict=True) if sp is not None]
        out[f"masked_{kind}"] = bootstrap_median(
            [s.perplexity(~s.inside(sp)) for s, sp in known], n_boot, seed
        )
        out[f"inside_{kind}"] = _pooled(scores, spans, inside=True)
        out[f"outside_{kind}"] = _pooled(scores, spans, inside=False)
    questions = [count_questions(t) for t in sample.texts]
    out["two_or_more_questions"] = sum(q >= 2 for q in questions) / len(questions) if questions else None
    out["distinct_openings"] = len({opening(t) for t in sample.texts})
    return out


def naturalness_report(
    *,
    domain: str,
    dataset_dir: str | Path,
    release_dir: str | Path | None,
    amazon_dir: str | Path | None,
    scorer: CausalLMScorer,
    n: int = 200,
    seed: int = 0,
    n_boot: int = 1000,
) -> dict[str, Any]:
    """Sample the three sources, score them in one run, and measure each."""
    sentences, read = review_sentences(amazon_dir, domain)
    samples = [
        pqb_sample(read_pqb_rows(dataset_dir, domain), n, seed),
        authors_sample(read_release(release_dir, domain), n, seed),
        real_sample([s.text for s in sentences], n, seed),
    ]
    columns = {}
    for sample in samples:
        scores = scorer.score(sample.texts, desc=f"perplexity ({sample.source})")
        columns[sample.source] = measure(sample, scores, n_boot, seed)
    return {
        "domain": domain,
        "seed": seed,
        "n_sample": n,
        "n_boot": n_boot,
        "model": scorer.info,
        "inputs": {
            "dataset": str(dataset_dir),
            "release_dir": str(release_dir) if release_dir else None,
            "reviews": read,
        },
        "sources": columns,
    }


# -- rendering ---------------------------------------------------------------------------------------


def _ci(d: Mapping[str, Any] | None) -> str:
    if not d or d.get("median") is None:
        return "—"
    return f"{d['median']:,.0f} [{d['lo']:,.0f}, {d['hi']:,.0f}]"


def _pool(d: Mapping[str, Any] | None) -> str:
    if not d or d.get("perplexity") is None:
        return "—"
    return f"{d['perplexity']:,.0f} ({d['tokens']:,} tokens)"


def render_markdown(report: Mapping[str, Any]) -> str:
    cols = [report["sources"][s] for s in SOURCES]
    m = report["model"]
    head = "| measure | " + " | ".join(SOURCE_LABELS[s] for s in SOURCES) + " |"
    rows = [
        ("texts (drawn from)", [f"{c['n']} ({c['population']:,})" for c in cols]),
        ("perplexity, median [95% CI]", [_ci(c["perplexity"]) for c in cols]),
        ("… attribute values masked (exact core terms)", [_ci(c["masked_exact"]) for c in cols]),
        (
            "… attribute values masked (proxy: words in every query of the product)",
            [_ci(c["masked_proxy"]) for c in cols],
        ),
        ("tokens inside core-term spans, pooled perplexity", [_pool(c["inside_exact"]) for c in cols]),
        ("tokens outside core-term spans, pooled perplexity", [_pool(c["outside_exact"]) for c in cols]),
        ("tokens inside proxy spans, pooled perplexity", [_pool(c["inside_proxy"]) for c in cols]),
        ("tokens outside proxy spans, pooled perplexity", [_pool(c["outside_proxy"]) for c in cols]),
        ("texts with two or more questions", [f"{100 * c['two_or_more_questions']:.0f}%" for c in cols]),
        ("distinct first-two-word openings", [f"{c['distinct_openings']} of {c['n']}" for c in cols]),
    ]
    lines = [
        f"# Naturalness: {report['domain']}",
        "",
        f"Seeded samples (seed {report['seed']}, up to {report['n_sample']} texts a source); medians with "
        f"{report['n_boot']}-replicate percentile-bootstrap 95% CIs. Perplexity under `{m['model']}` "
        f"({m.get('package') or m.get('path') or ''}; sha256 `{m.get('sha256') or 'n/a'}`; {m['architecture']}, "
        f"{m['parameters']:,} parameters; transformers {m['transformers']}), every token scored after "
        f"`{m['document_start_token']}`. A small model: it ranks texts by fluency; its numbers compare only "
        "with numbers from the same model and conventions.",
        "",
        head,
        "|" + "---|" * (len(SOURCES) + 1),
        *(f"| {name} | " + " | ".join(vals) + " |" for name, vals in rows),
        "",
        "Masked: only the tokens outside attribute-value spans are averaged (the values stay in the "
        "context). The authors' release has no core terms, so its spans are the proxy; real sentences have "
        "none (—).",
        "",
    ]
    return "\n".join(lines)


def run_naturalness(out_dir: str | Path, **kwargs: Any) -> dict[str, Any]:
    """Measure, and write ``naturalness.json`` and ``naturalness.md`` into ``out_dir``."""
    report = naturalness_report(**kwargs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "naturalness.json", report)
    atomic_write_text(out / "naturalness.md", render_markdown(report))
    return report
