"""pqb.builders.linalg: accurate against LAPACK/BLAS, and bit-identical under every OpenBLAS kernel."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from numeric_kernels import run_under, runnable_kernels

from pqb.builders import linalg


def _sym(rng: np.random.Generator, *shape: int) -> np.ndarray:
    A = rng.standard_normal((*shape, shape[-1] + 7))
    return (A[..., :, None, :] * A[..., None, :, :]).sum(-1)


def test_matmul_is_accurate_and_exact_on_integers() -> None:
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((40, 3000)), rng.standard_normal((3000, 30))
    ref = A @ B
    assert np.abs(linalg.matmul(A, B) - ref).max() <= 1e-10 * np.abs(ref).max()
    Ai, Bi = rng.integers(-50, 50, (20, 100)).astype(float), rng.integers(-50, 50, (100, 9)).astype(float)
    assert np.array_equal(linalg.matmul(Ai, Bi), Ai @ Bi)
    assert linalg.matmul(np.zeros((3, 0)), np.zeros((0, 2))).shape == (3, 2)
    with pytest.raises(ValueError, match="matmul needs"):
        linalg.matmul(A, A)


def test_power_of_two_scaling_has_the_bits_of_ldexp() -> None:
    """``_scale2`` (a product by 2^e, which matmul's slicing uses for speed) equals ``np.ldexp`` bit for
    bit, through subnormal results, overflow, zeros and exponents whose power of two is not normal."""
    rng = np.random.default_rng(3)
    A = rng.standard_normal((50, 40)) * 10.0 ** rng.integers(-320, 308, (50, 1))
    A[rng.random(A.shape) < 0.1] = 0.0
    A[0, :5] = [5e-324, -5e-324, 2.2e-308, np.inf, -0.0]
    with np.errstate(over="ignore"):
        for e in [0, 1, -1, 26, -52, 1000, -1000, 1001, -1074, 1100]:
            assert linalg._scale2(A, e).tobytes() == np.ldexp(A, e).tobytes(), e
        rows = rng.integers(-1000, 1000, (50, 1))
        assert linalg._scale2(A, rows).tobytes() == np.ldexp(A, rows).tobytes()
        rows[3] = -1060
        assert linalg._scale2(A, rows).tobytes() == np.ldexp(A, rows).tobytes()


@pytest.mark.parametrize("block", [1, 97, 3000 * 7])
def test_matmul_blocks_give_the_bits_of_one_block(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Row blocks of A and column blocks of B (MATMUL_BLOCK bounds the temporaries) change no bit."""
    rng = np.random.default_rng(5)
    A = rng.standard_normal((23, 3000)) * rng.uniform(0.01, 100, (23, 1))
    B = rng.standard_normal((3000, 19)) * rng.uniform(0.01, 100, (1, 19))
    whole = linalg.matmul(A, B)  # the default block holds these operands whole
    monkeypatch.setattr(linalg, "MATMUL_BLOCK", block)
    assert np.array_equal(linalg.matmul(A, B), whole)


@pytest.mark.parametrize("block", [1, 3, 50])
def test_eigh_blocks_give_the_bits_of_one_block(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stack is rotated EIGH_BLOCK matrices at a time, all in the same sweeps: no bit changes (the
    diagonal matrices converge at once, but their block still sweeps as long as the stack does)."""
    rng = np.random.default_rng(6)
    S = np.concatenate([_sym(rng, 20, 16), np.stack([np.diag(np.arange(16.0))] * 3)])
    w, U = linalg.eigh(S)
    monkeypatch.setattr(linalg, "EIGH_BLOCK", block)
    w_b, U_b = linalg.eigh(S)
    assert np.array_equal(w, w_b) and np.array_equal(U, U_b)


def test_eigh_matches_lapack_single_and_batched() -> None:
    rng = np.random.default_rng(1)
    S = _sym(rng, 5, 16)
    w, U = linalg.eigh(S)
    for k in range(5):
        ref = np.linalg.eigvalsh(S[k])[::-1]
        assert np.allclose(w[k], ref, rtol=1e-12, atol=1e-12 * ref[0])
        assert np.allclose(U[k].T @ U[k], np.eye(16), atol=1e-12)
        assert np.allclose(S[k] @ U[k], U[k] * w[k], atol=1e-11 * ref[0])
    w1, U1 = linalg.eigh(S[2])
    assert np.array_equal(w1, w[2]) and np.array_equal(U1, U[2])  # a stack solves each matrix alike
    w, U = linalg.eigh(np.diag([1.0, 3.0, 3.0, 2.0]))
    assert w.tolist() == [3.0, 3.0, 2.0, 1.0] and U[:, :2].argmax(axis=0).tolist() == [
        1,
        2,
    ]  # ties: index order
    assert linalg.eigh(np.array([[2.0]]))[0].tolist() == [2.0]


def test_cholesky_inverse_and_orthonormalize() -> None:
    rng = np.random.default_rng(2)
    G = _sym(rng, 30)
    R = linalg.cholesky(G)
    assert np.allclose(R.T @ R, G, rtol=1e-12) and np.allclose(
        linalg.inv_upper(R) @ R, np.eye(30), atol=1e-10
    )
    with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
        linalg.cholesky(-G)
    Y = rng.standard_normal((500, 40))
    Y[:, 5] = Y[:, 4] + 1e-9 * Y[:, 6]  # condition number ~1e9: plain Cholesky QR would break down
    Q = linalg.orthonormalize(Y)
    assert np.allclose(Q.T @ Q, np.eye(40), atol=1e-8)
    Y[:, 5] = Y[:, 4]  # exactly rank-deficient: still factors, stays finite
    assert np.isfinite(linalg.orthonormalize(Y)).all()


def test_truncated_svd_matches_the_dense_svd_on_a_decaying_spectrum() -> None:
    rng = np.random.default_rng(3)
    X = rng.standard_normal((400, 12)) @ rng.standard_normal((12, 300)) + 0.01 * rng.standard_normal(
        (400, 300)
    )
    s, Vt = linalg.truncated_svd(sp.csr_matrix(X), 10, seed=0)
    _, s_ref, Vt_ref = np.linalg.svd(X, full_matrices=False)
    assert np.allclose(s, s_ref[:10], rtol=1e-9)
    assert np.allclose(np.abs((Vt * Vt_ref[:10]).sum(1)), 1, atol=1e-8)  # same vectors up to sign
    assert np.all(Vt[np.arange(10), np.abs(Vt).argmax(1)] > 0)  # sign rule
    with pytest.raises(ValueError, match="components"):
        linalg.truncated_svd(sp.csr_matrix(X), 0)


KERNEL_SCRIPT = """
import hashlib, numpy as np, scipy.sparse as sp
from pqb.builders import linalg
rng = np.random.default_rng(0)
X = sp.random(600, 400, density=0.03, random_state=0, format="csr")
s, Vt = linalg.truncated_svd(X, 40, seed=0)
A = rng.standard_normal((6, 16, 23)); w, U = linalg.eigh((A[:, :, None, :] * A[:, None, :, :]).sum(-1))
M = linalg.matmul(rng.standard_normal((50, 600)), X.toarray())
print(hashlib.sha256(b"".join(a.tobytes() for a in (s, Vt, w, U, M))).hexdigest())
"""


def test_bits_do_not_depend_on_the_openblas_kernel_or_threads() -> None:
    kernels = runnable_kernels(("Prescott", "Haswell", "Zen", "SkylakeX"))
    digests = {(k, t): run_under(k, t, ["-c", KERNEL_SCRIPT]).stdout.strip() for k in kernels for t in (1, 2)}
    assert len(set(digests.values())) == 1, digests
