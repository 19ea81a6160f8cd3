"""The encoder trains on MKL's CPU-independent code path, or refuses to train.

MKL (inside torch) picks its code path by CPU: an AVX-512 Xeon trained other encoder weights than the
AVX2 machine that built the committed dataset, so the committed rows did not rebuild there. These run
fresh interpreters, because MKL reads its mode once, at its first call.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from pqb.builders.syntax.encoder import MKL_CBWR_COMPATIBLE, mkl_cbwr_branch  # noqa: E402

pytestmark = pytest.mark.skipif(mkl_cbwr_branch() is None, reason="this torch carries no MKL")

MATMUL = "import torch; torch.ones(300, 300) @ torch.ones(300, 300)"


def python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k != "MKL_CBWR"} | env  # the test process set it
    return subprocess.run(
        [sys.executable, "-c", code], env=clean, capture_output=True, text=True, timeout=300
    )


def test_importing_the_builders_puts_mkl_on_one_path_before_torch_computes() -> None:
    proc = python(
        f"import pqb.builders; {MATMUL}; from pqb.builders.syntax.encoder import mkl_cbwr_branch as b; print(b())"
    )
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) == MKL_CBWR_COMPATIBLE


@pytest.mark.parametrize(
    ("code", "env"),
    [
        (f"{MATMUL}; import pqb.builders", {}),  # MKL started on the CPU's path before the builders
        ("import pqb.builders", {"MKL_CBWR": "AUTO"}),  # a user's setting, kept but refused
    ],
)
def test_the_encoder_refuses_mkl_on_a_cpu_dependent_path(code: str, env: dict[str, str]) -> None:
    proc = python(
        f"{code}; {MATMUL}; from pqb.builders.syntax.encoder import deterministic_torch\n"
        "with deterministic_torch(0): pass"
    , **env)  # fmt: skip
    assert proc.returncode == 1
    assert "not COMPATIBLE" in proc.stderr.splitlines()[-1]
