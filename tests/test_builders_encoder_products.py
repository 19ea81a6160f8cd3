"""The encoder's products go through :func:`pqb.builders.linalg.matmul`, not torch's (MKL's).

MKL picks its code path by CPU, and even its conditional numerical reproducibility mode ``COMPATIBLE``
trained other weights on an AMD EPYC than on an Intel Xeon, so the committed dataset did not rebuild
there. These tests check that the layer is the product it replaces, and that MKL's code path no longer
changes a bit (a fresh interpreter per MKL mode: MKL reads its mode once, at its first call).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from pqb.builders.syntax.encoder import ExactLinear  # noqa: E402

TRAIN = """
import hashlib, numpy as np
from pqb.builders.config import EncoderConfig
from pqb.builders.syntax.encoder import train_mlp
rng = np.random.default_rng(5)
F = rng.standard_normal((600, 96))
users = [f"u{i % 12}" for i in range(600)]
products = [f"p{i % 17}" for i in range(600)]
w, _ = train_mlp(F, users, products, EncoderConfig(epochs=2, batch_size=128, hidden=64, dim=16, seed=1))
print(hashlib.sha256(b"".join(w[k].tobytes() for k in sorted(w))).hexdigest())
"""


def test_exact_linear_is_the_product_and_its_gradients() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(7, 5, generator=g, requires_grad=True)
    lin = torch.nn.Linear(5, 3)
    ExactLinear.apply(x, lin.weight, lin.bias).square().sum().backward()
    ours = (x.grad.clone(), lin.weight.grad.clone(), lin.bias.grad.clone())
    x.grad = lin.weight.grad = lin.bias.grad = None
    lin(x).square().sum().backward()
    for a, b in zip(ours, (x.grad, lin.weight.grad, lin.bias.grad), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_mkl_code_path_does_not_change_the_weights() -> None:
    """Training under MKL's CPU-chosen path, its AVX2 path and its COMPATIBLE path gives one set of bits
    (through torch's products, the three differ)."""
    digests = set()
    for mode in ("AUTO", "AVX2", "COMPATIBLE"):
        env = {k: v for k, v in os.environ.items() if k != "MKL_CBWR"} | {"MKL_CBWR": mode}
        proc = subprocess.run([sys.executable, "-c", TRAIN], env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        digests.add(proc.stdout.strip())
    assert len(digests) == 1, digests
