"""The ``generate`` stage must rerun when a model it runs is replaced at the same path.

SYNTHETIC models (tiny random sentence-transformers built by ``tiny_models``) over the realizer's
candidates for three hand-written target products. Before the fix the stage fingerprinted
``--semantic-model <path>`` (and ``--generator-model <path>``) by the path string alone: with the gate's
model replaced, ``pqb-build generate`` printed "up to date, skipped" and kept the old model's pool (on
5 real slice targets at ``--semantic-threshold 0.9``: 84 candidates kept, where the new model keeps 98).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from tiny_models import tiny_sentence_transformer

from pqb.builders.config import BuildConfig, FilterConfig
from pqb.builders.queries.generate import run_generate
from pqb.builders.workdir import PRODUCTS_SCHEMA, WorkDir, write_parquet

CORE = {
    "P1": [("Brand", "Acme"), ("Color", "Black"), ("Hardware Platform", "Nintendo Switch"),
           ("Feature 1", "Wireless"), ("Rated", "Everyone")],
    "P2": [("Brand", "Zenith"), ("Color", "Red"), ("Material", "Plastic"), ("Style", "Classic"),
           ("Feature 1", "Backlit Keys")],
    "P3": [("Brand", "Orbit"), ("Color", "White"), ("Compatible Devices", "PlayStation"),
           ("Connectivity Technology", "USB"), ("Feature 2", "Detachable Cable")],
}  # fmt: skip


def _workdir(root: Path) -> WorkDir:
    wd = WorkDir(root, "video_games")
    rows = [
        {"parent_asin": asin, "title": f"{core[0][1]} thing {asin}",
         "text": f"product: {asin}\n" + "\n".join(f"{n.lower()}: {v}" for n, v in core), "brand": core[0][1],
         "attributes": [{"name": n, "value": v} for n, v in core], "core_terms": [v for _, v in core],
         "protected_terms": [], "is_target": True}
        for asin, core in CORE.items()
    ]  # fmt: skip
    write_parquet(pa.Table.from_pylist(rows, schema=PRODUCTS_SCHEMA), wd.file("products.parquet"))
    return wd


@pytest.mark.neural
def test_a_semantic_model_replaced_at_the_same_path_reruns_the_stage(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    model = tmp_path / "st"
    wd = _workdir(tmp_path / "work")
    filters = FilterConfig(semantic=True, semantic_model=str(model), semantic_threshold=0.9)
    cfg = BuildConfig(n_candidates=10, filters=filters)
    tiny_sentence_transformer(model, seed=0)
    first = run_generate(wd, cfg)
    assert not first.get("skipped")
    assert run_generate(wd, cfg).get("skipped")  # nothing changed: fresh
    tiny_sentence_transformer(model, seed=1)  # other weights, same path
    again = run_generate(wd, cfg)
    assert not again.get("skipped"), "the old model's candidates were kept"
    identity = wd.manifest["stages"]["generate"]["config"]["model_identity"]
    assert identity["semantic"].startswith("sha256=")


def test_the_realizer_without_the_gate_records_no_model_identity(tmp_path: Path) -> None:
    """The default build (realizer, no semantic gate) runs no model: its stage config, which the card
    shows, is unchanged."""
    wd = _workdir(tmp_path / "work")
    run_generate(wd, BuildConfig(n_candidates=5))
    assert "model_identity" not in wd.manifest["stages"]["generate"]["config"]
