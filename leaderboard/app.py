"""PQB leaderboard Space (Gradio): reads the tidy ``leaderboard.parquet`` that ``pqb-harness leaderboard`` writes.

The data functions below need only pandas, so tests import them without gradio; ``build_demo``
imports gradio when the Space starts (``pip install "pqb[space]"``).

Where the parquet comes from, first match wins:
1. ``PQB_LEADERBOARD_PARQUET`` — a local file;
2. ``PQB_RESULTS_REPO`` — a Hub dataset repo that ``pqb-harness leaderboard --push`` filled
   (``leaderboard/leaderboard.parquet`` in it is downloaded);
3. ``leaderboard.parquet`` next to this file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

ROBUSTNESS = {
    "syntactic": ["flip@1", "flip@5", "flip@10", "flip@20", "rrstd"],
    "error": ["deg@1", "deg@5", "deg@10", "deg@20", "mrr_deg"],
}
EFFECTIVENESS = {"syntactic": ["mrr", "hit@10"], "error": ["mrr_clean", "hit@10_clean"]}
AVERAGE = "average"


def parquet_path() -> Path:
    """Resolve the leaderboard parquet (see the module docstring for the order)."""
    local = os.environ.get("PQB_LEADERBOARD_PARQUET")
    if local:
        return Path(local)
    repo = os.environ.get("PQB_RESULTS_REPO")
    if repo:
        from huggingface_hub import hf_hub_download

        return Path(hf_hub_download(repo, "leaderboard/leaderboard.parquet", repo_type="dataset"))
    return Path(__file__).resolve().parent / "leaderboard.parquet"


def load_leaderboard(path: Path | None = None) -> pd.DataFrame:
    """The tidy table, selected runs only (one row per model, task, metric)."""
    frame = pd.read_parquet(path or parquet_path())
    if "selected" in frame:
        frame = frame[frame["selected"].astype(bool)]
    return frame.reset_index(drop=True)


def domains(frame: pd.DataFrame) -> list[str]:
    """``average`` first, then each domain present."""
    typed = frame[frame["pair_type"].notna()]
    return [AVERAGE, *sorted(d for d in typed["domain"].unique() if d != AVERAGE)]


def summary_table(frame: pd.DataFrame, pair_type: str, domain: str = AVERAGE) -> pd.DataFrame:
    """Rows = models; robustness metrics then effectiveness, in % with 2 decimals; most robust first."""
    metrics = ROBUSTNESS[pair_type] + EFFECTIVENESS[pair_type]
    sel = frame[
        (frame["pair_type"] == pair_type) & (frame["domain"] == domain) & frame["metric"].isin(metrics)
    ]
    if sel.empty:
        return pd.DataFrame(columns=["model", *metrics])
    wide = sel.pivot_table(index="model", columns="metric", values="value", aggfunc="first")
    wide = (wide.reindex(columns=[m for m in metrics if m in wide.columns]) * 100).round(2)
    wide.columns.name = None
    stand_in = sel.groupby("model")["stand_in_for"].first()
    wide.insert(0, "stand_in_for", stand_in.reindex(wide.index).fillna(""))
    return wide.sort_values(ROBUSTNESS[pair_type][2]).reset_index()


def build_demo(frame: pd.DataFrame | None = None) -> Any:
    """The Gradio Blocks app: pair type and domain selectors over ``summary_table``."""
    try:
        import gradio as gr
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError('The leaderboard Space needs gradio: pip install "pqb[space]"') from exc
    frame = load_leaderboard() if frame is None else frame
    with gr.Blocks(title="PQB leaderboard") as demo:
        gr.Markdown(
            "# PersonalQuery-Benchmark leaderboard\n"
            "Flip@K / mean RRstd on syntactic pairs, Deg@K / MRRdeg on writing-error pairs (%, lower is more "
            "robust); MRR / Hit@10 beside them (higher is better). `stand_in_for` marks offline substitute weights."
        )
        with gr.Row():
            pair = gr.Radio(["syntactic", "error"], value="syntactic", label="Pairs")
            domain = gr.Dropdown(domains(frame), value=AVERAGE, label="Domain")
        table = gr.Dataframe(summary_table(frame, "syntactic"), interactive=False)

        def update(p: str, d: str) -> pd.DataFrame:
            return summary_table(frame, p, d)

        pair.change(update, [pair, domain], table)
        domain.change(update, [pair, domain], table)
    return demo


if __name__ == "__main__":  # pragma: no cover
    build_demo().launch()
