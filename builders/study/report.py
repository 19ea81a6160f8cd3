"""The study's report in the paper's §06 layout: LLM and Human columns per source, alpha / kappa per
dimension, each beside the paper's published value (``paper_06.json``, copied from the paper's §06).

Every number is computed per source (PQB, the authors' release, real sentences), never pooled across
them: the paper's table describes PQB's queries, and the other sources are there to put PQB's numbers
in context (what the same raters give to the authors' queries and to text people wrote). Agreement
(alpha, kappa) is computed over all items of a dimension, whatever their source: it describes the raters.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from pqb.builders.study.agreement import agreement_table, disagreements, final_value, summarise
from pqb.builders.study.pool import SOURCES
from pqb.builders.study.rubric import BY_NAME, HUMAN_RATERS, RATING_COLUMNS
from pqb.builders.study.sheet import Ratings
from pqb.dataset.io import atomic_write_json, atomic_write_text

ROWS = (
    ("naturalness", "Naturalness (1–5)", "mean"),
    ("syntactic_quality", "Syntactic quality (1–5)", "mean"),
    ("attribution", "Syntactic attribution", "rate"),
    ("no_preference", "No-preference rate", "rate"),
    ("error_strict", "Error strict pass", "rate"),
    ("error_acceptable", "Error acceptable", "rate"),
)
AGREEMENT_ROWS = (
    ("naturalness", "Naturalness"),
    ("syntactic_quality", "Syntactic quality"),
    ("attribution", "Attribution"),
    ("error_consistency", "Error consistency"),
)


def paper_values() -> dict[str, Any]:
    """The paper's §06 numbers (a data file beside this module; its ``source`` field names where from)."""
    return json.loads(
        resources.files("pqb.builders.study").joinpath("paper_06.json").read_text(encoding="utf-8")
    )


def _by_source(key: Mapping[str, Any]) -> dict[str, str]:
    return {it["item_id"]: it["source"] for it in key["items"]}


def human_results(
    key: Mapping[str, Any], primaries: Ratings, adjudication: Ratings | None, *, n_boot: int, seed: int
) -> dict[str, Any]:
    """Final values after adjudication, the §06 rows per source, and agreement among the primaries."""
    source = _by_source(key)
    truth = {it["item_id"]: it.get("truth", "") for it in key["items"]}
    finals: dict[str, dict[str, dict[str, Any]]] = {s: {d: {} for d in RATING_COLUMNS} for s in SOURCES}
    counts: dict[str, Counter[str]] = {}
    for dim in RATING_COLUMNS:
        labels = primaries.values[dim]
        adj = adjudication.values[dim] if adjudication is not None else {}
        split = set(disagreements(BY_NAME[dim], labels))
        c = counts[dim] = Counter(items=len(labels), disagreements=len(split))
        for item, by_annotator in labels.items():
            referee = next(iter(adj.get(item, {}).values()), None) if item in split else None
            value = final_value(BY_NAME[dim], list(by_annotator.values()), referee)
            c["adjudicated"] += referee is not None
            if value is None:
                c["unresolved"] += 1
                continue
            finals[source[item]][dim][item] = value
    return {
        "annotators": list(primaries.annotators),
        "adjudicators": list(adjudication.annotators) if adjudication is not None else [],
        "counts": {d: dict(c) for d, c in counts.items()},
        "import": {
            "primaries": dict(primaries.counts),
            "adjudication": dict(adjudication.counts) if adjudication else {},
            "problems": primaries.problems + (adjudication.problems if adjudication else []),
        },
        "by_source": {
            s: summarise(finals[s], truth, n_boot=n_boot, seed=seed, purpose=f"human/{s}")
            for s in SOURCES
            if any(finals[s][d] for d in RATING_COLUMNS)
        },
        "agreement": agreement_table(primaries.values, primaries.annotators),
    }


def llm_results(
    key: Mapping[str, Any], judge: Mapping[str, Any], *, n_boot: int, seed: int
) -> dict[str, Any]:
    """The judge's parsed labels as one rater's final values, the §06 rows per source."""
    source = _by_source(key)
    truth = {it["item_id"]: it.get("truth", "") for it in key["items"]}
    finals: dict[str, dict[str, dict[str, Any]]] = {s: {d: {} for d in RATING_COLUMNS} for s in SOURCES}
    status: Counter[str] = Counter()
    for j in judge["judgments"]:
        if j["item_id"] not in source:
            status["not_in_key"] += 1
            continue
        status[j["status"]] += 1
        for dim, label in (j.get("labels") or {}).items():
            finals[source[j["item_id"]]][dim][j["item_id"]] = (
                float(label) if BY_NAME[dim].level == "ordinal" else label
            )
    return {
        "model": judge["model"],
        "served_models": judge.get("served_models", []),
        "endpoint": judge["endpoint"],
        "status": dict(status),
        "by_source": {
            s: summarise(finals[s], truth, n_boot=n_boot, seed=seed, purpose=f"llm/{s}")
            for s in SOURCES
            if any(finals[s][d] for d in RATING_COLUMNS)
        },
    }


def _cell(d: Mapping[str, Any] | None, kind: str) -> str:
    if not d or d.get("value") is None:
        return "—"
    if kind == "mean":
        return f"{d['value']:.2f} [{d['lo']:.2f}, {d['hi']:.2f}] (n={d['n']})"
    return f"{100 * d['value']:.1f}% [{100 * d['lo']:.1f}, {100 * d['hi']:.1f}] (n={d['n']})"


def _paper(v: float | None, kind: str) -> str:
    return "—" if v is None else (f"{v:.2f}" if kind == "mean" else f"{v:.1f}%")


def _num(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}"


def render_markdown(report: Mapping[str, Any]) -> str:
    paper = paper_values()
    human, llm = report.get("human"), report.get("llm")
    sources = [
        s for s in SOURCES if s in report.get("sources", SOURCES)
    ]  # every source of the pool: "—" when unrated
    raters = (human or {}).get("raters", HUMAN_RATERS)
    panel = "Human" if raters == HUMAN_RATERS else "Panel"  # sheets filled by others are never called human
    cols = [(s, who) for s in sources for who in ("LLM", panel)]
    lines = [f"# Validation study ({', '.join(report.get('domains', []))})", ""]
    who_rated = []
    if llm:
        who_rated.append(
            f"LLM judge `{llm['model']}` at {llm['endpoint']} (served as {', '.join(llm['served_models']) or 'n/a'})"
        )
    if human:
        who_rated.append(f"{raters} {', '.join(human['annotators'])}"
                         + (f"; adjudicator {', '.join(human['adjudicators'])}" if human["adjudicators"] else ""))  # fmt: skip
    lines += ["Rated by: " + ("; ".join(who_rated) or "nobody yet") + ".", ""]
    lines += [
        "| Dimension | " + " | ".join(f"{s} {who}" for s, who in cols) + " | paper LLM | paper Human |",
        "|---" * (len(cols) + 3) + "|",
    ]
    for key, label, kind in ROWS:
        cells = []
        for s, who in cols:
            side = llm if who == "LLM" else human
            cells.append(_cell(side["by_source"].get(s, {}).get(key) if side else None, kind))
        p = paper["ratings"][key]
        lines.append(
            f"| {label} | "
            + " | ".join(cells)
            + f" | {_paper(p['llm'], kind)} | {_paper(p['human'], kind)} |"
        )
    lines += [
        "",
        "Means and rates with percentile-bootstrap 95% CIs over items. Attribution: share of decisive "
        "answers (A or B) naming the true author (chance 50%); no-preference: share of all answers.",
        "",
    ]
    if human:
        lines += [
            "| Dimension | α | κ (mean pairwise) | items with ≥ 2 raters | paper α | paper κ |",
            "|---|---|---|---|---|---|",
        ]
        for key, label in AGREEMENT_ROWS:
            a = human["agreement"].get(key, {})
            p = paper["agreement"][key]
            lines.append(
                f"| {label} | {_num(a.get('alpha'))} | {_num((a.get('kappa') or {}).get('mean'))} | "
                f"{a.get('items_with_two_or_more', 0)} | {p['alpha']:.2f} | {p['kappa']:.2f} |"
            )
        lines += [
            "",
            "α: Krippendorff's alpha (ordinal for the 1–5 scales, nominal otherwise) over the primary "
            "annotators; κ: Cohen's kappa per annotator pair (quadratic weights for the 1–5 scales), averaged "
            "over pairs.",
            "",
            "| Dimension | items | disagreements | adjudicated | unresolved |",
            "|---|---|---|---|---|",
        ]
        for dim, c in human["counts"].items():
            lines.append(
                f"| {dim} | {c.get('items', 0)} | {c.get('disagreements', 0)} | {c.get('adjudicated', 0)} | {c.get('unresolved', 0)} |"
            )
        lines.append("")
    if llm:
        lines += [f"Judge replies: {', '.join(f'{k} {v}' for k, v in sorted(llm['status'].items()))}.", ""]
    lines.append(f"Paper values: {paper['source']}")
    return "\n".join(lines) + "\n"


def write_report(out_dir: str | Path, report: Mapping[str, Any], judge: Mapping[str, Any] | None) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    full = dict(report)
    if judge is not None:  # the judge's full prompts and model id travel with the numbers
        full["judge"] = {k: v for k, v in judge.items() if k != "judgments"}
    atomic_write_json(out / "study_report.json", full)
    atomic_write_text(out / "study_report.md", render_markdown(report))
    return out / "study_report.md"


def domains_of(key: Mapping[str, Any]) -> list[str]:
    return sorted({it["domain"] for it in key["items"]})


def sources_of(key: Mapping[str, Any]) -> list[str]:
    present = {it["source"] for it in key["items"]}
    return [s for s in SOURCES if s in present]


__all__: Sequence[str] = ("human_results", "llm_results", "paper_values", "render_markdown", "write_report")
