"""PQB leaderboard Space (Gradio): reads the tidy ``leaderboard.parquet`` that ``pqb-harness leaderboard`` writes.

The data functions below need pandas and the ``pqb-benchmark`` package (the K values and the saturation
rule are PQB's own, from :mod:`pqb.dataset.rules` and the harness's tables), so tests import them without
gradio; ``build_demo`` imports gradio when the Space starts (``requirements.txt`` beside this file:
``pip install -r leaderboard/requirements.txt``).

Where the parquet comes from, first match wins:
1. ``PQB_LEADERBOARD_PARQUET`` — a local file;
2. ``PQB_RESULTS_REPO`` — a Hub dataset repo that ``pqb-harness leaderboard --push`` filled
   (``leaderboard/leaderboard.parquet`` in it is downloaded);
3. ``leaderboard.parquet`` next to this file.

None of them: :class:`LeaderboardNotFoundError`, one line naming the variables and the command that
writes the file (the Space prints it and exits 1).

The parquet must be the one ``pqb-harness leaderboard`` wrote: its sha256 must equal the one its
``manifest.json`` (beside it, or ``leaderboard/manifest.json`` in the results repo) records, else
:class:`EditedLeaderboardError` (one line; ``PQB_ALLOW_EDITED=1`` reads it with a note). A parquet without
a manifest, or a manifest written before it recorded digests, is read with a note.

The table shows each metric as one text cell, ``12.34 [10.00, 15.00]`` (%, two decimals, its 95%
clustered-bootstrap CI in brackets), ``ˢ`` after a value measured where the task is saturated at that K
(the value cannot show robustness there, and the row is never ranked most robust for it), and the number
of pairs ``n`` the robustness metrics average over.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from pqb.dataset.rules import K_VALUES
from pqb.harness.evaluation.results import SATURATION_REASON
from pqb.harness.reporting.tables import saturated_cells

ROBUSTNESS = {
    "syntactic": [*(f"flip@{k}" for k in K_VALUES), "rrstd"],
    "error": [*(f"deg@{k}" for k in K_VALUES), "mrr_deg"],
}
EFFECTIVENESS = {"syntactic": ["mrr", "hit@10"], "error": ["mrr_clean", "hit@10_clean"]}
AVERAGE = "average"


class LeaderboardNotFoundError(FileNotFoundError):
    """No leaderboard parquet could be found; the message says which variables to set."""


class EditedLeaderboardError(ValueError):
    """The parquet is not the one its manifest records (edited after ``pqb-harness leaderboard`` wrote it)."""


MANIFEST = "manifest.json"


def manifest_path(parquet: Path) -> Path | None:
    """The manifest that describes ``parquet``: beside it, else (``PQB_RESULTS_REPO``) the repo's copy."""
    beside = Path(parquet).with_name(MANIFEST)
    if beside.is_file():
        return beside
    repo = os.environ.get("PQB_RESULTS_REPO")
    if repo and not os.environ.get("PQB_LEADERBOARD_PARQUET"):
        from huggingface_hub import hf_hub_download

        try:
            return Path(hf_hub_download(repo, f"leaderboard/{MANIFEST}", repo_type="dataset"))
        except (OSError, ValueError):  # an older repo without one: read unverified, with a note
            return None
    return None


def verify_parquet(path: Path) -> None:
    """Check ``path`` against the sha256 its manifest records (see the module docstring)."""
    manifest = manifest_path(path)
    recorded = None
    if manifest is not None:
        try:
            digests = json.loads(manifest.read_text(encoding="utf-8")).get("sha256") or {}
            recorded = digests.get(Path(path).name)
        except (OSError, ValueError, AttributeError):
            recorded = None
    if recorded is None:
        print(f"note: {path}: no manifest records its sha256 (written before digests were recorded, or copied "
              "alone): read unverified", file=sys.stderr)  # fmt: skip
        return
    actual = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    if actual == recorded:
        return
    why = f"{path}: its sha256 {actual[:16]}... is not the {recorded[:16]}... its manifest {manifest} records"
    if os.environ.get("PQB_ALLOW_EDITED") == "1":
        print(f"note: {why}; read anyway (PQB_ALLOW_EDITED=1): its numbers are not the ones the leaderboard wrote",
              file=sys.stderr)  # fmt: skip
        return
    raise EditedLeaderboardError(
        f"{why}: it was edited after `pqb-harness leaderboard` wrote it; write it again, or set PQB_ALLOW_EDITED=1 "
        "to read it anyway"
    )


def parquet_path() -> Path:
    """Resolve the leaderboard parquet (see the module docstring for the order)."""
    local = os.environ.get("PQB_LEADERBOARD_PARQUET")
    if local:
        return Path(local)
    repo = os.environ.get("PQB_RESULTS_REPO")
    if repo:
        from huggingface_hub import hf_hub_download

        return Path(hf_hub_download(repo, "leaderboard/leaderboard.parquet", repo_type="dataset"))
    beside = Path(__file__).resolve().parent / "leaderboard.parquet"
    if not beside.is_file():
        raise LeaderboardNotFoundError(
            "no leaderboard parquet: set PQB_LEADERBOARD_PARQUET=<file> or PQB_RESULTS_REPO=<org/results-repo>, "
            f"or write {beside} with `pqb-harness leaderboard <results dir> --out {beside.parent}`"
        )
    return beside


def load_leaderboard(path: Path | None = None) -> pd.DataFrame:
    """The tidy table, selected runs only (one row per model, task, metric)."""
    path = path or parquet_path()
    if not Path(path).is_file():
        raise LeaderboardNotFoundError(
            f"leaderboard parquet {str(path)!r} does not exist; write it with "
            "`pqb-harness leaderboard <results dir> --out <folder>` or fix PQB_LEADERBOARD_PARQUET"
        )
    verify_parquet(path)
    frame = pd.read_parquet(path)
    if "selected" in frame:
        frame = frame[frame["selected"].astype(bool)]
    return frame.reset_index(drop=True)


def domains(frame: pd.DataFrame) -> list[str]:
    """``average`` first, then each domain present."""
    typed = frame[frame["pair_type"].notna()]
    return [AVERAGE, *sorted(d for d in typed["domain"].unique() if d != AVERAGE)]


def _cell(value: Any, lo: Any, hi: Any, saturated: bool) -> str:
    """``12.34 [10.00, 15.00]`` in %, two decimals; ``ˢ`` after a saturated value; ``–`` when missing."""
    if pd.isna(value):
        return "–"
    text = f"{100 * value:.2f}" + ("ˢ" if saturated else "")
    return text if pd.isna(lo) or pd.isna(hi) else f"{text} [{100 * lo:.2f}, {100 * hi:.2f}]"


def summary_table(frame: pd.DataFrame, pair_type: str, domain: str = AVERAGE) -> pd.DataFrame:
    """Rows = models; robustness metrics then effectiveness, one text cell each (``_cell``: % with two
    decimals and the 95% CI, ``ˢ`` where saturated); ``n`` = pairs behind the robustness metrics. Most
    robust first by the main metric (Flip@10 or Deg@10), saturated values last: their 0 says "no room to
    flip", not "robust"."""
    metrics = ROBUSTNESS[pair_type] + EFFECTIVENESS[pair_type]
    sel = frame[
        (frame["pair_type"] == pair_type) & (frame["domain"] == domain) & frame["metric"].isin(metrics)
    ]
    if sel.empty:
        return pd.DataFrame(columns=["model", "stand_in_for", "n", *metrics])
    saturated = saturated_cells(frame, pair_type, domain)
    first = sel.groupby(["model", "metric"]).first()
    present = [m for m in metrics if m in set(sel["metric"])]
    models = sorted(set(sel["model"]))
    wide = pd.DataFrame(index=models)
    for m in present:
        rows = first.xs(m, level="metric").reindex(wide.index)
        wide[m] = [_cell(v, lo, hi, (model, m) in saturated)
                   for model, v, lo, hi in zip(models, rows["value"], rows["ci_low"], rows["ci_high"], strict=True)]  # fmt: skip
    main = ROBUSTNESS[pair_type][2] if ROBUSTNESS[pair_type][2] in present else present[0]
    values = first.xs(main, level="metric")["value"].reindex(wide.index)
    order = sorted(models, key=lambda m: ((m, main) in saturated, pd.isna(values[m]), values[m]))
    n = first.xs(main, level="metric")["n"].reindex(wide.index) if main in ROBUSTNESS[pair_type] else None
    wide.insert(0, "n", n.astype("Int64") if n is not None else pd.NA)
    stand_in = sel.groupby("model")["stand_in_for"].first()
    wide.insert(0, "stand_in_for", stand_in.reindex(wide.index).fillna(""))
    wide.index.name = "model"
    return wide.loc[order].reset_index()


def build_demo(frame: pd.DataFrame | None = None) -> Any:
    """The Gradio Blocks app: pair type and domain selectors over ``summary_table``."""
    try:
        import gradio as gr
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            'The leaderboard Space needs gradio: pip install -r leaderboard/requirements.txt (or "pqb-benchmark[space]")'
        ) from exc
    frame = load_leaderboard() if frame is None else frame
    with gr.Blocks(title="PQB leaderboard") as demo:
        gr.Markdown(
            "# PersonalQuery-Benchmark leaderboard\n"
            "Flip@K / mean RRstd on syntactic pairs, Deg@K / MRRdeg on writing-error pairs (%, lower is more "
            "robust); MRR / Hit@10 beside them (higher is better). Each cell is the value in % with its 95% "
            "clustered-bootstrap CI in brackets; `n` = pairs. `stand_in_for` marks offline substitute weights.\n\n"
            f"ˢ = saturated ({SATURATION_REASON}): the value cannot show robustness at that K, and such a row "
            "is listed after the measurable ones."
        )
        with gr.Row():
            pair = gr.Radio(["syntactic", "error"], value="syntactic", label="Pairs")
            domain = gr.Dropdown(domains(frame), value=AVERAGE, label="Domain")
        table = gr.Dataframe(summary_table(frame, "syntactic"), interactive=False, wrap=True)

        def update(p: str, d: str) -> pd.DataFrame:
            return summary_table(frame, p, d)

        pair.change(update, [pair, domain], table)
        domain.change(update, [pair, domain], table)
    return demo


if __name__ == "__main__":  # pragma: no cover
    try:
        app = build_demo()
    except (LeaderboardNotFoundError, EditedLeaderboardError, ImportError) as exc:
        sys.exit(f"error: {exc}")
    app.launch()
