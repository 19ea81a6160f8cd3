"""The encoder's arithmetic never calls MKL: products through :func:`pqb.builders.linalg.matmul`, exp and
log through :func:`pqb.builders.linalg.exp` / :func:`~pqb.builders.linalg.log`, Adam's square root through
numpy.

MKL picks its code path by CPU, and even its conditional numerical reproducibility mode ``COMPATIBLE``
trained other weights on an AMD EPYC than on an Intel Xeon, so the committed dataset did not rebuild
there. These tests check that each replacement computes what it replaces, that MKL's code path no longer
changes a bit (a fresh interpreter per MKL mode: MKL reads its mode once, at its first call), and that a
small training gives the pinned bits, which every CPU must reproduce.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from pqb.builders import linalg  # noqa: E402
from pqb.builders.syntax.encoder import Adam, ExactLinear, ExactLogSumExp  # noqa: E402

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
TRAINED = "80e6bb381d7021ed2badd14c020faad9afed799d56c202d0c1333cf557e5826d"
"""TRAIN's weights, first made on an Intel Xeon (AVX-512, AMX); every x86-64 CPU with AVX2 must match."""


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


def test_exp_and_log_are_within_two_ulp() -> None:
    import math

    import numpy as np

    x = np.concatenate([np.linspace(-745, 709, 20_001), np.linspace(-40, 5, 10_001), [0.0, 1e-12, -1e-12]])
    got = linalg.exp(x)
    ref = np.array([math.exp(v) for v in x])
    assert (np.abs(got - ref) <= 2 * np.spacing(ref)).all()
    y = np.concatenate([np.exp(np.linspace(-700, 700, 20_001)), [0.5, 1.0, 2.0, 1 - 1e-12, 5e-324]])
    got, ref = linalg.log(y), np.array([math.log(v) for v in y])
    assert (np.abs(got - ref) <= 2 * np.spacing(np.abs(ref))).all()
    assert np.isneginf(linalg.log(np.array([0.0])))[0] and np.isnan(linalg.log(np.array([-1.0])))[0]


def test_exact_logsumexp_is_torch_logsumexp_and_its_gradient() -> None:
    g = torch.Generator().manual_seed(1)
    x = (torch.randn(9, 13, generator=g) * 10).requires_grad_(True)
    w = torch.randn(9, generator=g)
    (ExactLogSumExp.apply(x) * w).sum().backward()
    ours = x.grad.clone()
    x.grad = None
    torch.testing.assert_close(ExactLogSumExp.apply(x), torch.logsumexp(x, 1))
    (torch.logsumexp(x, 1) * w).sum().backward()
    torch.testing.assert_close(ours, x.grad)


def test_adam_takes_torchs_adam_steps() -> None:
    g = torch.Generator().manual_seed(2)
    a = torch.nn.Parameter(torch.randn(5, 4, generator=g))
    b = torch.nn.Parameter(a.detach().clone())
    ours, theirs = Adam(iter([a]), lr=0.01), torch.optim.Adam([b], lr=0.01)
    for _ in range(20):
        grad = torch.randn(5, 4, generator=g)
        for p, opt in ((a, ours), (b, theirs)):
            opt.zero_grad()
            p.grad = grad.clone()
            opt.step()
    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_mkl_code_path_does_not_change_the_weights() -> None:
    """Training under MKL's CPU-chosen path, its AVX2 path and its COMPATIBLE path gives the pinned bits
    (through torch's products the three differ; with exact products and torch's exp, log and sqrt they
    still differ on an Intel Xeon)."""
    digests = set()
    for mode in ("AUTO", "AVX2", "COMPATIBLE"):
        env = {k: v for k, v in os.environ.items() if k != "MKL_CBWR"} | {"MKL_CBWR": mode}
        proc = subprocess.run([sys.executable, "-c", TRAIN], env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        digests.add(proc.stdout.strip())
    assert digests == {TRAINED}, digests
