"""Our measured robustness tables beside the paper's published ones, with the gap.

The paper's numbers live in ``harness/reporting/paper_tables.json`` (transcribed from the paper's project
page, source named in the file). A measured row is matched to a paper row only when it is the same
*system*: by the name the model was run under, or — for offline substitutes — by the
``stand_in_for`` its ``model_info`` declares. A stand-in match is printed as such (MiniLM weights
are not GTE-base), so a gap on such a row is never read as a reproduction result.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from pqb.harness.evaluation.pairtypes import PAIR_TYPES
from pqb.harness.evaluation.results import SATURATION_REASON
from pqb.harness.reporting.tables import AVERAGE, LABELS, average_domains, model_table, saturated_cells

PAPER_DOMAINS: tuple[str, ...] = ("baby_products", "musical_instruments", "video_games")
"""The three domains the paper's headline tables average over."""

_PAPER_TABLES = {name: f"{name}_robustness" for name in PAIR_TYPES}
_COLUMN_TO_METRIC = {"mean_rrstd": "rrstd"}


@dataclass(frozen=True)
class PaperSystem:
    """A paper row: names a run may carry, and the checkpoints that make it the same system."""

    name: str
    aliases: tuple[str, ...]
    weights: tuple[str, ...] = ()


PAPER_SYSTEMS: tuple[PaperSystem, ...] = (
    PaperSystem("BM25", ("bm25", "bm25s", "bm25-pyserini", "bm25-lucene")),
    PaperSystem("SPLADE", ("splade",), ("naver/splade-cocondenser-ensembledistil",)),
    PaperSystem("GTE-base", ("gte-base", "gte"), ("thenlper/gte-base",)),
    PaperSystem("BGE-M3 Hybrid", ("bge-m3", "bge-m3-hybrid", "bgem3"), ("BAAI/bge-m3",)),
    PaperSystem("ColBERTv2", ("colbertv2", "colbert"), ("colbert-ir/colbertv2.0",)),
    PaperSystem(
        "Llama-3.1-8B", ("llama-3.1-8b", "llama3.1-8b", "llama"), ("meta-llama/Llama-3.1-8B-Instruct",)
    ),
    PaperSystem("Qwen3-Reranker-8B", ("qwen3-reranker-8b", "qwen3-reranker"), ("Qwen/Qwen3-Reranker-8B",)),
)
"""Model-name mapping (not results): which of our model names denote which paper system."""


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _text(value: Any) -> str | None:
    """Strings stay; ``None``/NaN (a missing cell in a pandas table) become ``None``."""
    return value if isinstance(value, str) and value else None


def load_paper_tables(path: Path | None = None) -> dict[str, Any]:
    """The paper's tables: ``path`` if given, else the copy shipped in the package."""
    if path is not None:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    return json.loads(
        resources.files("pqb.harness.reporting").joinpath("paper_tables.json").read_text(encoding="utf-8")
    )


def _system_named(name: str) -> PaperSystem | None:
    key = _norm(name)
    for system in PAPER_SYSTEMS:
        if key in {_norm(system.name), *map(_norm, system.aliases), *map(_norm, system.weights)}:
            return system
    return None


def _same_weights(weights: str, paper_weights: Sequence[str]) -> bool:
    """Our weights are the paper's checkpoint: its Hub id, or a local path ending in its name."""
    ours = _norm(weights)
    return any(ours == _norm(w) or _norm(Path(w).name) in ours for w in paper_weights)


def match_paper_system(
    model: Any, model_name: Any, weights: Any, stand_in_for: Any, settings: Any = None
) -> tuple[str, str] | None:
    """``(paper system, how it matched)`` or ``None``.

    ``how`` is ``"same system"``, ``"stand-in (<weights>)"`` or ``"other settings (<k=v,...>)"``. A run
    that declares ``stand_in_for`` is always a stand-in. A run named like a paper system but loading other
    weights than the paper's checkpoint is also reported as a stand-in, not as that system; one made with
    ``--model_args`` other than the weights' path (``k1=0.3``, ``rewriter=symspell``) measures another
    configuration of that system, and says so.
    """
    model, model_name, weights, stand_in_for = (_text(v) for v in (model, model_name, weights, stand_in_for))
    extra = ",".join(kv for kv in re.split(r",(?=[A-Za-z_][\w.-]*=)", _text(settings) or "")
                     if kv and not kv.startswith("pretrained="))  # fmt: skip
    if stand_in_for:
        system = _system_named(stand_in_for)
        return (system.name, f"stand-in ({weights or model})") if system else None
    for name in (model, model_name, weights):
        system = _system_named(name) if name else None
        if system is None:
            continue
        if system.weights and weights and not _same_weights(weights, system.weights):
            return system.name, f"stand-in ({weights})"
        return system.name, f"other settings ({extra})" if extra else "same system"
    return None


def comparison_frame(tidy: pd.DataFrame, paper: Mapping[str, Any]) -> pd.DataFrame:
    """Long table: one row per (our model, metric) with ours, the paper's value and the gap (pp).

    Ours is the equal-weight domain average (×100). ``domains`` lists the domains behind our
    number; the paper's averages cover ``PAPER_DOMAINS``. ``attrs["source"]`` names the paper.
    """
    rows: list[dict[str, Any]] = []
    models = model_table(tidy) if not tidy.empty else pd.DataFrame()
    saturated = {pt: saturated_cells(tidy, pt, AVERAGE) for pt in _PAPER_TABLES}
    sel = tidy[tidy["selected"] & (tidy["domain"] == AVERAGE)] if not tidy.empty else tidy
    for _, m in models.iterrows():
        found = match_paper_system(m["model"], m["model_name"], m["weights"], m["stand_in_for"], m.get("settings"))
        if found is None:
            continue
        paper_name, how = found
        for pair_type, key in _PAPER_TABLES.items():
            mine = tidy[tidy["selected"] & (tidy["model"] == m["model"])]
            domains = ", ".join(average_domains(mine, pair_type))
            table = paper.get(key) or {}
            columns = table.get("columns") or []
            prow = next((r for r in table.get("rows") or [] if r[0] == paper_name), None)
            if prow is None:
                continue
            for column, published in zip(columns[1:], prow[1:], strict=True):
                metric = _COLUMN_TO_METRIC.get(column, column)
                ours = sel[
                    (sel["model"] == m["model"]) & (sel["pair_type"] == pair_type) & (sel["metric"] == metric)
                ]
                if ours.empty:
                    continue
                value = 100.0 * float(ours["value"].iloc[0])
                rows.append(
                    {
                        "model": m["model"],
                        "paper_model": paper_name,
                        "match": how,
                        "pair_type": pair_type,
                        "metric": metric,
                        "ours": value,
                        "paper": float(published),
                        "gap": value - float(published),
                        "domains": domains,
                        "saturated": (str(m["model"]), metric) in saturated[pair_type],
                    }
                )
    frame = pd.DataFrame(
        rows,
        columns=["model", "paper_model", "match", "pair_type", "metric", "ours", "paper", "gap", "domains",
                 "saturated"],
    )
    frame.attrs["source"] = str(paper.get("source", "unknown"))
    return frame


def compare_markdown(
    tidy: pd.DataFrame, paper: Mapping[str, Any], comparison: pd.DataFrame | None = None
) -> str:
    """The comparison as markdown: per table, one row per our model, cells ``ours / paper (gap)``."""
    frame = comparison_frame(tidy, paper) if comparison is None else comparison
    source = paper.get("source", "unknown")
    lines = [
        "# PQB: our measurements beside the paper's published tables",
        "",
        f"Paper values: {source}",
        "",
        "Cells: **ours** / paper (gap = ours − paper, percentage points). Ours = equal-weight average over the "
        f"domains we ran; the paper averages {', '.join(PAPER_DOMAINS)}. Lower is more robust.",
        "",
    ]
    models = model_table(tidy) if not tidy.empty else pd.DataFrame(columns=["model"])
    for pair_type, key in _PAPER_TABLES.items():
        columns = (paper.get(key) or {}).get("columns") or []
        metrics = [_COLUMN_TO_METRIC.get(c, c) for c in columns[1:]]
        title = PAIR_TYPES[pair_type].title
        lines += [
            f"## {title}",
            "",
            "| Our model | Paper system | Match | "
            + " | ".join(LABELS.get(m, m) for m in metrics)
            + " | Our domains |",
            "|---|---|---|" + "---:|" * len(metrics) + "---|",
        ]
        part = frame[frame["pair_type"] == pair_type]
        for model, rows in part.groupby("model", sort=True):
            by_metric = rows.set_index("metric")
            cells = []
            for metric in metrics:
                if metric in by_metric.index:
                    r = by_metric.loc[metric]
                    mark = "ˢ" if bool(r.get("saturated", False)) else ""
                    cells.append(f"**{r['ours']:.2f}**{mark} / {r['paper']:.2f} ({r['gap']:+.2f})")
                else:
                    cells.append("–")
            first = rows.iloc[0]
            lines.append(
                f"| {model} | {first['paper_model']} | {first['match']} | "
                + " | ".join(cells)
                + f" | {first['domains']} |"
            )
        matched = set(part["model"])
        for model in models["model"]:
            if model not in matched:
                lines.append(
                    f"| {model} | — | no paper counterpart | " + " | ".join("–" for _ in metrics) + " | |"
                )
        shown = set(part["paper_model"])
        missing = [r[0] for r in (paper.get(key) or {}).get("rows") or [] if r[0] not in shown]
        lines += [
            "",
            f"Paper systems without a measured counterpart here: {', '.join(missing) or 'none'}.",
            "",
        ]
    if "saturated" in frame and frame["saturated"].astype(bool).any():
        lines += [
            f"ˢ = our value is saturated at that K ({SATURATION_REASON}): it cannot show robustness there, so its "
            "gap to the paper is not a robustness gap. The paper's whole-domain corpora (137K-217K products) are not "
            "saturated; build one (pqb-build all --source hub) to compare at that K.",
            "",
        ]
    stand_ins = sorted(set(frame.loc[frame["match"].str.startswith("stand-in"), "model"]))
    if stand_ins:
        lines += [
            f"Stand-in rows ({', '.join(stand_ins)}) ran with other weights than the paper's system; their gap "
            "measures the substitute, not a failed reproduction.",
            "",
        ]
    return "\n".join(lines)
