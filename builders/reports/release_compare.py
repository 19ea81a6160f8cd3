"""Compare the authors' published typo queries with ours: mechanisms, edits per query, core-term hits.

The release (``PQB_RELEASE_DIR/<Domain>.json``, ``{asin: [{asin, uid, syntax_query, typo_query}]}``)
has no edit annotations, so edits are recovered by :func:`pqb.builders.writing_errors.mechanisms.diff_edits`. The paper
promises the 5 core terms are preserved; the release has no core terms either, so an edit is checked
against

* the **exact** core terms where our ``products.parquet`` has them for that ASIN, else
* a **proxy**: the non-stopword words present in every query of the ASIN (:func:`core_term_proxy`).
  Every query of an ASIN contains its 5 core terms, so the proxy contains every core-term word (it is
  a superset, so the proxy share is an upper bound). With a single query the proxy is that whole
  query minus stopwords, so it is reported separately for ASINs with >= 2 queries.

Beside theirs we put our injector's distribution: the mechanism distribution our profiles sample from,
and a realized sample: our injector applied (seeded) to the release's own clean queries with random
profiled users, protecting the proxy words, so both sides are measured on the same texts.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rapidfuzz.distance import Levenshtein

from pqb.builders.workdir import PRODUCTS
from pqb.builders.writing_errors.mechanisms import OTHER, diff_edits, edit_touches
from pqb.dataset import settings
from pqb.dataset.io import atomic_write_json, atomic_write_text
from pqb.dataset.progress import bar
from pqb.dataset.schema import (
    CHAR_MECHANISMS,
    MECHANISMS,
    POSITIONS,
    domain_from_category,
    edit_position,
    words,
)

ALL_LABELS = (*MECHANISMS, OTHER)


def _stopwords() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def core_term_proxy(queries: Sequence[str]) -> set[str]:
    """Lower-case words in every one of ``queries`` (the queries of one ASIN), minus stopwords.

    Each query of an ASIN contains the ASIN's 5 core terms, so the result contains every core-term word.
    """
    if not queries:
        return set()
    common = set(words(queries[0]))
    for q in queries[1:]:
        common &= set(words(q))
    return common - _stopwords()


def load_release(release_dir: Path | str | None = None) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """``{domain: {asin: records}}`` for every ``<Domain>.json`` in the release folder."""
    d = Path(release_dir or settings.PQB_RELEASE_DIR)
    files = sorted(d.glob("*.json"))
    if not files:
        raise FileNotFoundError(f"No release files (*.json) in {d}; set PQB_RELEASE_DIR or --release-dir.")
    return {domain_from_category(f.stem): json.loads(f.read_text(encoding="utf-8")) for f in files}


def edit_stats(pairs: Iterable[tuple[str, list[dict[str, Any]], set[str], bool]]) -> dict[str, Any]:
    """Statistics over (clean query, edits, core-word set, core set exact?) tuples."""
    from spacy.lang.en.stop_words import STOP_WORDS

    mech: Counter[str] = Counter()
    where: Counter[str] = Counter()
    place: Counter[str] = Counter()
    per_query: Counter[int] = Counter()
    n_edits = inside = inside_exact = n_exact = far = 0
    for query, edits, core, exact in pairs:
        per_query[min(len(edits), 4)] += 1
        for e in edits:
            n_edits += 1
            mech[e["mechanism"]] += 1
            if e["mechanism"] in CHAR_MECHANISMS:  # one word on each side: where in the word it falls
                place[edit_position(str(e["original"]), str(e["edited"]))] += 1
            hit = edit_touches(e, query, core)
            inside += hit
            # one rule for both sides (the release has no parse): core proxy / spaCy stop word / other
            where[
                "core_term" if hit else "stopword" if str(e["original"]).lower() in STOP_WORDS else "other"
            ] += 1
            if exact:
                n_exact += 1
                inside_exact += hit
            far += Levenshtein.distance(str(e["original"]).lower(), str(e["edited"]).lower()) > 2
    n_q = sum(per_query.values())
    return {
        "queries": n_q,
        "edits": n_edits,
        "edits_per_query_mean": n_edits / n_q if n_q else 0.0,
        "edits_per_query_hist": {("4+" if k == 4 else str(k)): v for k, v in sorted(per_query.items())},
        "mechanism_counts": {m: mech.get(m, 0) for m in ALL_LABELS},
        "mechanism_share": {m: mech.get(m, 0) / n_edits if n_edits else 0.0 for m in ALL_LABELS},
        "location_share": {k: v / n_edits for k, v in sorted(where.items())} if n_edits else {},
        "position_share": {k: place.get(k, 0) / max(sum(place.values()), 1) for k in POSITIONS},
        "edits_touching_core": inside,
        "core_share": inside / n_edits if n_edits else 0.0,
        "edits_with_exact_core_terms": n_exact,
        "core_share_exact": inside_exact / n_exact if n_exact else None,
        "edits_beyond_levenshtein_2": far,
    }


def _our_core_terms(workdir: Path | None, domain: str) -> dict[str, list[str]]:
    p = workdir / domain / PRODUCTS if workdir else None
    if not p or not p.is_file():
        return {}
    import pyarrow.parquet as pq

    t = pq.read_table(p, columns=["parent_asin", "core_terms"]).to_pylist()
    return {r["parent_asin"]: list(r["core_terms"] or []) for r in t if r["core_terms"]}


def release_domain_stats(
    release: Mapping[str, list[dict[str, Any]]], core_terms: Mapping[str, list[str]] | None = None
) -> dict[str, Any]:
    """One domain of the release: recovered edits and their statistics (all ASINs; ASINs with >= 2 queries)."""
    core_terms = core_terms or {}
    records = [r for recs in release.values() for r in recs]
    with_typo = [r for r in records if r.get("typo_query") is not None]
    rows_all, rows_multi = [], []
    for asin, recs in sorted(release.items()):
        exact = asin in core_terms
        core = (
            {w for t in core_terms[asin] for w in words(t)}
            if exact
            else core_term_proxy([r["syntax_query"] for r in recs])
        )
        for r in recs:
            if r.get("typo_query") is None:
                continue
            row = (r["syntax_query"], diff_edits(r["syntax_query"], r["typo_query"]), core, exact)
            rows_all.append(row)
            if len(recs) >= 2 or exact:
                rows_multi.append(row)
    return {
        "asins": len(release),
        "records": len(records),
        "records_with_typo": len(with_typo),
        "typo_equal_to_clean": sum(1 for r in with_typo if r["typo_query"] == r["syntax_query"]),
        "all_asins": edit_stats(rows_all),
        "asins_with_2plus_queries": edit_stats(rows_multi),
    }


def our_injector_stats(
    workdir: Path, domain: str, release: Mapping[str, list[dict[str, Any]]], *, n: int = 500, seed: int = 0
) -> dict[str, Any] | None:
    """Our profile's mechanism distribution and our injector run on ``n`` of the release's clean queries."""
    from pqb.builders.errors import MissingInputError
    from pqb.builders.seeds import derive_seed
    from pqb.builders.writing_errors.injection import ErrorInjector
    from pqb.builders.writing_errors.profiles import ErrorProfiles

    try:
        profiles = ErrorProfiles.load(workdir / domain)
    except MissingInputError:
        return None
    inj = ErrorInjector.load(workdir / domain)
    users = sorted(profiles.users)
    items = [(a, r) for a, recs in sorted(release.items()) for r in recs if len(recs) >= 2]
    rng = np.random.default_rng(derive_seed(seed, "release-sample", domain))
    pick = sorted(rng.choice(len(items), size=min(n, len(items)), replace=False).tolist()) if items else []
    proxies = {a: core_term_proxy([r["syntax_query"] for r in recs]) for a, recs in release.items()}
    rows, chains, failed = [], [], Counter()
    for k in bar(pick, desc=f"inject ({domain})", leave=False):
        asin, rec = items[k]
        user = users[int(rng.integers(len(users)))] if users else "unknown"
        res = inj.inject(
            rec["syntax_query"], user, (), derive_seed(seed, k), core_terms=sorted(proxies[asin])
        )
        if res.error_query is None:
            failed[res.reason] += 1
            continue
        rows.append((rec["syntax_query"], res.edits, proxies[asin], False))
        chains.append((rec["syntax_query"], res.chain, proxies[asin], False))
    gp = profiles.global_mechanism_probs()
    return {
        "profiles_backend": profiles.meta.get("backend"),
        "profile_mechanism_probs": {m: gp.get(m, 0.0) for m in CHAR_MECHANISMS},
        "profile_position_probs": profiles.global_position_probs(),
        "profile_char_edits": int(profiles.glob["n_char"]),
        "sampled_queries": len(pick),
        "failed": dict(failed),
        "injected": edit_stats(rows),
        "injected_chain": edit_stats(chains),
    }


def compare_release(
    *,
    release_dir: Path | str | None = None,
    workdir: Path | str | None = None,
    domain: str | None = None,
    out_dir: Path | str | None = None,
    n_inject: int = 500,
    seed: int = 0,
) -> dict[str, Any]:
    """Compare every release domain (or ``domain``) and write ``release_compare.{json,md}`` to ``out_dir``."""
    release = load_release(release_dir)
    if domain is not None:
        if domain not in release:
            raise ValueError(f"Domain {domain!r} is not in the release; found {', '.join(sorted(release))}.")
        release = {domain: release[domain]}
    wd = Path(workdir) if workdir else None
    out: dict[str, Any] = {
        "release_dir": str(Path(release_dir or settings.PQB_RELEASE_DIR)),
        "seed": seed,
        "domains": {},
    }
    for dom, data in release.items():
        entry = {"release": release_domain_stats(data, _our_core_terms(wd, dom))}
        if wd is not None:
            entry["ours"] = our_injector_stats(wd, dom, data, n=n_inject, seed=seed)
        out["domains"][dom] = entry
    if out_dir is None:
        out_dir = (wd / domain / "validation") if (wd and domain) else Path("release_compare")
    out_dir = Path(out_dir)
    atomic_write_json(out_dir / "release_compare.json", out)
    atomic_write_text(out_dir / "release_compare.md", render_markdown(out))
    return out


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def render_markdown(report: Mapping[str, Any]) -> str:
    """Per domain: their edit statistics, and ours beside them when a work dir was given."""
    lines = [
        "# Authors' released typo queries vs our injector",
        "",
        f"Release: `{report['release_dir']}`.",
        "",
    ]
    for dom, entry in report["domains"].items():
        rel = entry["release"]
        ours = entry.get("ours")
        cols = [
            ("theirs (all ASINs)", rel["all_asins"]),
            ("theirs (ASINs ≥2 queries)", rel["asins_with_2plus_queries"]),
        ]
        if ours:
            cols.append(("ours (injected on their queries, personal dose)", ours["injected"]))
            if "injected_chain" in ours:
                cols.append(("ours (same queries, 3-edit chain)", ours["injected_chain"]))
        lines += [
            f"## {dom}",
            "",
            f"{rel['records']} records, {rel['asins']} ASINs, {rel['records_with_typo']} with a typo query "
            f"({rel['typo_equal_to_clean']} identical to the clean query).",
            "",
            "| statistic | "
            + " | ".join(c for c, _ in cols)
            + (" | ours: profile P(mechanism), P(position) |" if ours else " |"),
            "|---" * (len(cols) + 1 + bool(ours)) + "|",
        ]
        rows = [
            ("queries with typos", [str(s["queries"]) for _, s in cols], ""),
            ("edits", [str(s["edits"]) for _, s in cols], str(ours["profile_char_edits"]) if ours else ""),
            ("edits / query", [f"{s['edits_per_query_mean']:.2f}" for _, s in cols], ""),
            (
                "query share with 1 / 2 / 3 / 4+ edits %",
                [
                    " / ".join(
                        _pct(s["edits_per_query_hist"].get(k, 0) / max(s["queries"], 1))
                        for k in ("1", "2", "3", "4+")
                    )
                    for _, s in cols
                ],
                "",
            ),
            ("edits touching a core term % (proxy ⊇ core)", [_pct(s["core_share"]) for _, s in cols], ""),
            (
                "… exact core terms (our products) % (edits)",
                [f"{_pct(s['core_share_exact'])} ({s['edits_with_exact_core_terms']})" for _, s in cols],
                "",
            ),
            ("edits with Levenshtein > 2", [str(s["edits_beyond_levenshtein_2"]) for _, s in cols], ""),
        ]
        for loc in sorted({k for _, st in cols for k in st.get("location_share", {})}):
            rows.append(
                (
                    f"location: {loc} %",
                    [_pct(st.get("location_share", {}).get(loc, 0.0)) for _, st in cols],
                    "",
                )
            )
        for k in POSITIONS:
            prof = _pct(ours["profile_position_probs"].get(k)) if ours else ""
            rows.append(
                (
                    f"position in the word: {k} % (char-level edits)",
                    [_pct(s["position_share"][k]) for _, s in cols],
                    prof,
                )
            )
        for m in ALL_LABELS:
            prof = (
                _pct(ours["profile_mechanism_probs"].get(m))
                if ours and m in CHAR_MECHANISMS
                else ("–" if ours else "")
            )
            rows.append((f"mechanism: {m} %", [_pct(s["mechanism_share"][m]) for _, s in cols], prof))
        for name, vals, extra in rows:
            lines.append(f"| {name} | " + " | ".join(vals) + (f" | {extra} |" if ours else " |"))
        if ours:
            lines += ["", f"Our sample: {ours['sampled_queries']} clean queries, failures {ours['failed']}, "
                      f"profiles `{ours['profiles_backend']}`."]  # fmt: skip
        lines.append("")
    return "\n".join(lines)
