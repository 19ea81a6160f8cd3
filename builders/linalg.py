"""Linear algebra whose bits do not depend on the BLAS kernel, the thread count or the CPU.

Why this module exists: OpenBLAS picks its kernel (Haswell, SkylakeX, Zen, …) and its blocking at run
time, and a threaded reduction adds partial sums in another order. The same TruncatedSVD therefore
returned other float32 bits on another machine or with another ``OPENBLAS_NUM_THREADS``, and the
encoder training amplified those 1e-10 differences into other Gaussians and other pairs. A benchmark
must rebuild byte for byte anywhere, so every numerically sensitive step of the builders goes through
the three tools below. Each uses only operations whose result IEEE 754 fixes exactly:

* elementwise arithmetic and numpy reductions (their summation order is fixed by numpy's algorithm,
  not by the CPU);
* sparse products through scipy's own C++ loops (fixed order, single thread, no BLAS);
* BLAS products of *integers*: :func:`matmul` splits each operand into slices of few enough bits
  that every product and every partial sum is an integer below 2⁵³, so any kernel, blocking, FMA use or
  thread count gives the exact same sum (an error-free "Ozaki" splitting). The slice products are
  then added in a fixed order.

:func:`eigh` (cyclic Jacobi) and :func:`cholesky` replace LAPACK for the small symmetric problems,
and :func:`truncated_svd` is a randomized range finder (Halko, Martinsson and Tropp 2011) built from
them. They are slower than LAPACK per flop, but the problems are small (16×16 Gaussians, a few hundred
SVD components), so a build pays seconds for reproducibility.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

MATMUL_SLICES = 2
"""Slices per operand in :func:`matmul`: about 40 significant bits for inner dimensions near 10⁴."""


def _scale2(A: np.ndarray, e: np.ndarray | int) -> np.ndarray:
    """``np.ldexp(A, e)`` at about three times its speed: a product by a power of two is rounded as
    ldexp rounds (both are the correctly rounded ``A·2^e``), so the bits are the same whenever ``2^e``
    itself is a normal float; otherwise ldexp."""
    e = np.asarray(e)
    if e.size and (e.max() > 1000 or e.min() < -1000):
        return np.ldexp(A, e)
    return A * np.ldexp(1.0, e)


def _slices(A: np.ndarray, axis: int, bits: int, n: int) -> tuple[list[np.ndarray], np.ndarray]:
    """Split ``A`` into ``n`` integer-valued slices of ``bits`` bits, scaled per row (axis=1) or column.

    The scale is a power of two at or above each row's (column's) largest magnitude, so scaling and
    unscaling are exact; ``A ≈ Σ_i slices[i] · 2^(e − bits·(i+1))``.
    """
    amax = np.max(np.abs(A), axis=axis, keepdims=True)
    _, e = np.frexp(np.where(amax > 0, amax, 1.0))
    rest = _scale2(A, -e)  # |rest| < 1, exact
    out = []
    for i in range(n):
        q = rest * math.ldexp(1.0, bits * (i + 1))  # a power of two below 2^53: exact, as _scale2
        np.rint(q, out=q)
        out.append(q)
        if i < n - 1:  # the last slice's remainder is below the resolution: never read
            rest -= q * math.ldexp(1.0, -bits * (i + 1))  # exact: q holds the leading bits of rest
    return out, e


MATMUL_BLOCK = 1 << 21
"""Elements of one operand block in :func:`matmul` (16 MB of float64 per slice): the product runs over
row blocks of ``A`` and column blocks of ``B``, so its temporaries stay a few blocks whatever the shapes
(each block's slices are those of the whole operand, so the bits do not depend on the blocking)."""


def matmul(A: np.ndarray, B: np.ndarray, slices: int = MATMUL_SLICES) -> np.ndarray:
    """``A @ B`` for dense float64 matrices, bit-identical on every BLAS kernel and thread count.

    Accurate to about ``2^-(slices·bits)`` relative to the largest entry of each row of ``A`` times
    each column of ``B`` (``bits`` = ⌊(52 − ⌈log₂ K⌉) / 2⌋ for inner dimension K), i.e. ~1e-12 for
    K ≈ 10⁴: far below anything the builders round to, and the result never depends on the machine.
    """
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[0]:
        raise ValueError(f"matmul needs (n, k) @ (k, m), got {A.shape} @ {B.shape}")
    k = A.shape[1]
    if k == 0 or A.size == 0 or B.size == 0:
        return np.zeros((A.shape[0], B.shape[1]))
    bits = (52 - math.ceil(math.log2(k + 1))) // 2
    if bits < 8:
        raise ValueError(f"inner dimension {k} is too large for exact slice products")
    step = max(1, MATMUL_BLOCK // k)
    cols = range(0, B.shape[1], step)
    whole_b = _slices(B, 0, bits, slices) if len(cols) == 1 else None
    out = np.empty((A.shape[0], B.shape[1]))
    for r in range(0, A.shape[0], step):
        sa, ea = _slices(A[r : r + step], 1, bits, slices)
        for c in cols:
            sb, eb = whole_b or _slices(B[:, c : c + step], 0, bits, slices)
            out[r : r + step, c : c + step] = _sliced_product(sa, ea, sb, eb, bits, slices)
    return out


def _sliced_product(
    sa: list[np.ndarray], ea: np.ndarray, sb: list[np.ndarray], eb: np.ndarray, bits: int, slices: int
) -> np.ndarray:
    """One block of :func:`matmul` from its operands' slices: slice pairs i + j < slices, smallest
    terms first, in a fixed order; each BLAS product is exact (integers < 2^53), and the dropped pairs
    are below the last slice's resolution."""
    out = np.zeros((sa[0].shape[0], sb[0].shape[1]))
    for total in range(slices - 1, -1, -1):
        for i in range(max(0, total - slices + 1), min(slices, total + 1)):
            j = total - i
            out += _scale2(sa[i] @ sb[j], -bits * (total + 2))
    return _scale2(_scale2(out, ea), eb)


def spmm(X: sp.spmatrix | sp.sparray, D: np.ndarray) -> np.ndarray:
    """Sparse × dense through scipy's sparsetools loops (no BLAS, one thread, fixed order)."""
    return np.asarray(X @ np.ascontiguousarray(D, dtype=np.float64))


# --------------------------------------------------------------------------------------------------
# Small symmetric problems
# --------------------------------------------------------------------------------------------------


def _round_robin(n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The n−1 rounds of disjoint index pairs of the circle method (n even) covering all pairs once."""
    idx = list(range(n))
    rounds = []
    for _ in range(n - 1):
        p = np.array([min(idx[i], idx[n - 1 - i]) for i in range(n // 2)])
        q = np.array([max(idx[i], idx[n - 1 - i]) for i in range(n // 2)])
        rounds.append((p, q))
        idx = [idx[0], idx[-1], *idx[1:-1]]
    return rounds


EIGH_BLOCK = 4096
"""Matrices per block of a batched :func:`eigh`: each sweep rotates the stack a block at a time, so the
temporaries are a block's, not the stack's."""


def eigh(S: np.ndarray, tol: float = 1e-15, max_sweeps: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending) and eigenvectors (columns) of symmetric matrices by cyclic Jacobi.

    ``S`` is (n, n) or a stack (..., n, n); a stack is solved in one pass, which is what makes the
    per-user Gaussian audits cheap. Each round rotates n/2 disjoint (p, q) planes at once with
    elementwise numpy operations only, so the result is the same on every machine. Sweeps stop when
    the off-diagonal mass is below ``tol`` times the Frobenius norm or stops shrinking, both measured
    over the whole stack (so a matrix's bits depend on the stack it is solved in). The stack is rotated
    :data:`EIGH_BLOCK` matrices at a time, all blocks in the same sweep (a rotation touches one matrix
    only, so the blocking changes no bit). Ties in eigenvalue keep index order.
    """
    A = np.array(S, dtype=np.float64)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"eigh needs square matrices, got shape {A.shape}")
    n, shape = A.shape[-1], A.shape
    A = A.reshape(-1, n, n)
    blocks = [slice(a, a + EIGH_BLOCK) for a in range(0, len(A), EIGH_BLOCK)]
    for b in blocks:
        A[b] = (A[b] + np.swapaxes(A[b], -1, -2)) / 2
    V = np.broadcast_to(np.eye(n), A.shape).copy()
    if n > 1:
        m = n + (n % 2)
        rounds = [(p[q < n], q[q < n]) for p, q in _round_robin(m)]
        scale = np.concatenate([np.sqrt((A[b] * A[b]).sum(axis=(-2, -1))) + 1e-300 for b in blocks])
        diag = np.eye(n, dtype=bool)
        last = np.inf
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            for _ in range(max_sweeps):
                off = max(
                    float(np.max(np.sqrt(np.where(diag, 0.0, A[b] * A[b]).sum(axis=(-2, -1))) / scale[b]))
                    for b in blocks
                )
                if off <= tol or off >= last:
                    break
                last = off
                for b in blocks:
                    _jacobi_sweep(A[b], V[b], rounds)
    w = np.diagonal(A, axis1=-2, axis2=-1).copy()
    order = np.argsort(-w, axis=-1, kind="stable")
    w, V = np.take_along_axis(w, order, -1), np.take_along_axis(V, order[..., None, :], -1)
    return w.reshape(shape[:-1]), V.reshape(shape)


def _jacobi_sweep(A: np.ndarray, V: np.ndarray, rounds: list[tuple[np.ndarray, np.ndarray]]) -> None:
    """One cyclic Jacobi sweep over the stack ``A`` (k, n, n), in place, accumulating into ``V``."""
    for p, q in rounds:
        apq = A[..., p, q]
        tau = (A[..., q, q] - A[..., p, p]) / (2 * apq)
        t = np.where(tau >= 0, 1.0, -1.0) / (np.abs(tau) + np.sqrt(1 + tau * tau))
        t = np.where(np.isfinite(t) & (apq != 0), t, 0.0)
        c = 1 / np.sqrt(1 + t * t)
        s = t * c
        Ap, Aq = A[..., p, :], A[..., q, :]
        A[..., p, :] = c[..., None] * Ap - s[..., None] * Aq
        A[..., q, :] = s[..., None] * Ap + c[..., None] * Aq
        for M in (A, V):
            Mp, Mq = M[..., :, p], M[..., :, q]
            M[..., :, p] = Mp * c[..., None, :] - Mq * s[..., None, :]
            M[..., :, q] = Mp * s[..., None, :] + Mq * c[..., None, :]


LN2_HI, LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10
"""ln 2 split so that ``k * LN2_HI`` is exact for |k| < 2¹¹ (Cody and Waite's argument reduction)."""
_EXP_TERMS = tuple(1.0 / math.factorial(n) for n in range(14))
_LOG_TERMS = tuple(1.0 / (2 * n + 1) for n in range(12))


def exp(x: np.ndarray) -> np.ndarray:
    """``e**x`` in float64 from additions, products and exact scalings only, so every CPU gives the same
    bits (within about 2 ulp of the true value). Why not ``np.exp`` or ``torch.exp``: numpy dispatches
    its own AVX-512 exp or the C library's by CPU, and torch's is MKL's vector math, whose result
    depends on MKL's code path, so an Intel and an AMD CPU trained other encoder weights.
    ``x = k ln 2 + r`` with ``|r| <= ln 2 / 2``; ``e**r`` by its Taylor series to degree 13 (Horner);
    the result is ``2**k e**r``. Overflows to inf; far below -700 the result is 0."""
    x = np.asarray(x, dtype=np.float64)
    k = np.rint(np.clip(x, -1100.0, 1100.0) * (1.0 / math.log(2.0)))
    r = (x - k * LN2_HI) - k * LN2_LO
    p = np.full_like(r, _EXP_TERMS[-1])
    for c in _EXP_TERMS[-2::-1]:
        p = p * r + c
    return np.ldexp(p, k.astype(np.int64))


def log(x: np.ndarray) -> np.ndarray:
    """Natural log in float64 from additions, products, divisions and exact scalings only (see
    :func:`exp` for why). ``x = 2**e m`` with ``m`` in [√½, √2); ``ln m = 2 atanh s`` with
    ``s = (m - 1) / (m + 1)``, ``|s| <= 0.172``, by its series to ``s**23``. Positive finite ``x`` only:
    0 gives -inf, anything else nan."""
    x = np.asarray(x, dtype=np.float64)
    m, e = np.frexp(x)
    small = m < math.sqrt(0.5)
    m = np.where(small, m * 2.0, m)
    e = (e - small).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = (m - 1.0) / (m + 1.0)
        s2 = s * s
        p = np.full_like(s, _LOG_TERMS[-1])
        for c in _LOG_TERMS[-2::-1]:
            p = p * s2 + c
        out = e * LN2_HI + ((e * LN2_LO) + 2.0 * s * p)
    return np.where(x > 0, out, np.where(x == 0, -np.inf, np.nan))


def cholesky(G: np.ndarray) -> np.ndarray:
    """Upper-triangular R with RᵀR = G for a symmetric positive-definite G (row by row, no LAPACK)."""
    G = np.asarray(G, dtype=np.float64)
    n = G.shape[0]
    R = np.zeros_like(G)
    for j in range(n):
        d = G[j, j] - float((R[:j, j] * R[:j, j]).sum())
        if not d > 0:
            raise np.linalg.LinAlgError(f"matrix is not positive definite (pivot {j} = {d:.3g})")
        R[j, j] = math.sqrt(d)
        R[j, j + 1 :] = (G[j, j + 1 :] - (R[:j, j, None] * R[:j, j + 1 :]).sum(axis=0)) / R[j, j]
    return R


def inv_upper(R: np.ndarray) -> np.ndarray:
    """Inverse of an upper-triangular matrix by back substitution (elementwise operations only)."""
    n = R.shape[0]
    inv = np.zeros_like(R, dtype=np.float64)
    for i in range(n - 1, -1, -1):
        e = np.zeros(n)
        e[i] = 1.0
        inv[i, :] = (e - (R[i, i + 1 :, None] * inv[i + 1 :, :]).sum(axis=0)) / R[i, i]
    return inv


def orthonormalize(Y: np.ndarray, max_passes: int = 4) -> np.ndarray:
    """Orthonormal basis of the columns of ``Y`` (n ≥ m) by Cholesky QR, repeated until QᵀQ ≈ I.

    The first pass adds a tiny shift to the Gram matrix so that an ill-conditioned or rank-deficient
    ``Y`` still factors (Fukaya et al. 2020, shifted CholeskyQR); later passes restore orthogonality to
    the precision of :func:`matmul` and stop once ``max|QᵀQ − I| < 1e-9`` (two passes in practice).
    Columns of an exactly rank-deficient ``Y`` cannot all be normalised; they stay finite.
    """
    Q = np.asarray(Y, dtype=np.float64)
    n, m = Q.shape
    for k in range(max_passes):
        G = matmul(Q.T, Q)
        G = (G + G.T) / 2
        if k and float(np.abs(G - np.eye(m)).max()) < 1e-9:
            break
        shifted = G.copy()
        shifted[np.diag_indices(m)] += 1e-13 * max(n, m) * float(np.trace(G)) + 1e-300
        try:
            R = cholesky(G if k else shifted)
        except np.linalg.LinAlgError:
            R = cholesky(shifted)
        Q = matmul(Q, inv_upper(R))
    return Q


def truncated_svd(
    X: sp.spmatrix | sp.sparray, k: int, *, n_iter: int = 7, n_oversamples: int = 10, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` singular values and right singular vectors (k × V, rows) of a sparse matrix.

    Randomized subspace iteration with orthonormalisation after every product, as scikit-learn's
    ``TruncatedSVD(algorithm="randomized")`` does, but with a Rademacher test matrix (exact bits from
    the seeded generator) and the deterministic products above. Each vector's sign is fixed so its
    largest-magnitude loading is positive.
    """
    X = sp.csr_matrix(X, dtype=np.float64)
    n, d = X.shape
    m = min(k + n_oversamples, n, d)
    if not 1 <= k <= m:
        raise ValueError(f"truncated_svd: k={k} components from a {n}×{d} matrix")
    rng = np.random.default_rng(seed)
    omega = rng.integers(0, 2, size=(d, m)).astype(np.float64) * 2 - 1
    Q = orthonormalize(spmm(X, omega))
    XT = sp.csr_matrix(X.T)
    for _ in range(n_iter):
        Q = orthonormalize(spmm(X, orthonormalize(spmm(XT, Q))))
    Bt = spmm(XT, Q)  # (d, m) = (Qᵀ X)ᵀ
    w, U = eigh(matmul(Bt.T, Bt))  # Qᵀ X Xᵀ Q = U diag(s²) Uᵀ
    w, U = w[:k], U[:, :k]
    s = np.sqrt(np.maximum(w, 0))
    Vt = matmul(U.T, Bt.T) / np.where(s > 0, s, 1.0)[:, None]
    signs = np.where(Vt[np.arange(k), np.abs(Vt).argmax(axis=1)] < 0, -1.0, 1.0)
    return s, Vt * signs[:, None]
