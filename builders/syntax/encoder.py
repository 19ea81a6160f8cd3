"""The syntactic encoder: binary rule vector → TruncatedSVD → small MLP → unit vector in R^16 (docs/design.md §6).

Differences from the authors, on purpose:

* rows are L2-normalised both when the SVD is fitted and whenever it is applied (the authors fitted on
  normalised rows and projected raw ones);
* the SVD output is divided by the per-component standard deviation of the training projection, so
  the MLP sees unit-scale inputs (stored with the basis, applied identically at encode time);
* everything — vocabulary, SVD, MLP — is fitted on PROFILE sentences only;
* the contrastive objective is adapted to small samples: an anchor's positives are other profile
  sentences of the same user (half from the same product when the user has more than one sentence
  about it), negatives are other users' sentences, half drawn from users who reviewed one of the
  same products when such users exist (the authors' "other user on the same ASIN").

Training is seeded and runs with ``torch.use_deterministic_algorithms`` and one thread, so the same
inputs give byte-identical weights on a CPU. The SVD and projections use :mod:`pqb.builders.linalg`, so
neither the BLAS kernel nor the thread count changes a bit (measured under OpenBLAS Haswell,
SkylakeX, Zen, Sandybridge, Prescott and Nehalem kernels with 1 and 2 threads). torch's products, exp, log and
sqrt go through MKL, which picks its code path by CPU: an AVX-512 Xeon trained other weights than the
AVX2 machine that built an earlier dataset (the same SVD bits, a first loss 4e-6 apart), and MKL's
conditional numerical reproducibility mode ``COMPATIBLE``, meant to be one path on every x86-64 CPU,
still trained other weights on an AMD EPYC (Zen 4) than on that Xeon. So no step of training or encoding
calls MKL: :class:`ExactLinear` computes the products with :func:`pqb.builders.linalg.matmul`,
:class:`ExactLogSumExp` the loss's exp and log with :func:`pqb.builders.linalg.exp` and
:func:`~pqb.builders.linalg.log` (additions and products only), and :class:`Adam` takes its square root
with numpy (exactly rounded). The products alone were not enough: torch's exp, log and sqrt are MKL's
vector math (VML), which ``MKL_VERBOSE`` does not list, and an Intel Xeon (Sapphire Rapids class, AMX)
trained other weights than the AMD EPYC with them. What remains is torch's elementwise operations and
reductions, whose AVX2 and AVX-512 kernels give identical weights (tested); its non-vectorised
``default`` fallback does not.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from safetensors.numpy import load_file, save_file

from pqb.builders import linalg
from pqb.builders.config import EncoderConfig
from pqb.builders.parses import Parsed, parse_texts
from pqb.builders.syntax.rules import RuleVocab, rules_of
from pqb.builders.workdir import SYNTAX_DIR
from pqb.dataset.io import atomic_path, atomic_write_json
from pqb.dataset.progress import bar


@contextlib.contextmanager
def deterministic_torch(seed: int) -> Iterator[None]:
    """One thread, deterministic kernels, seeded; restores the previous settings afterwards."""
    threads = torch.get_num_threads()
    was = torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(seed)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(was)
        torch.set_num_threads(threads)


def l2_rows(X: sp.csr_matrix) -> sp.csr_matrix:
    """Row-L2-normalised copy (all-zero rows stay zero)."""
    X = sp.csr_matrix(X, dtype=np.float64)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sp.diags(1.0 / norms) @ X


def fit_svd(X: sp.csr_matrix, n_components: int, seed: int, n_iter: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Truncated SVD basis (k × V) of row-normalised ``X`` and the per-component scale of its projection.

    :func:`pqb.builders.linalg.truncated_svd` replaces scikit-learn's randomized TruncatedSVD, whose
    OpenBLAS products gave other bits on other CPU kernels and thread counts (and, through training,
    other Gaussians and pairs); same algorithm, deterministic arithmetic, signs fixed by the largest
    loading.
    """
    k = int(max(1, min(n_components, X.shape[1] - 1, X.shape[0] - 1)))
    Xn = l2_rows(X)
    _, comps = linalg.truncated_svd(Xn, k, n_iter=n_iter, seed=seed)
    proj = linalg.spmm(Xn, comps.T)
    scale = np.maximum(proj.std(axis=0), 1e-6)
    return np.ascontiguousarray(comps, dtype=np.float32), np.ascontiguousarray(scale, dtype=np.float32)


def _exact_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` in ``a``'s dtype through :func:`pqb.builders.linalg.matmul` (float64 slices, exact sums):
    the same bits on every CPU, where torch's own product is MKL's, whose bits depend on the CPU."""
    out = linalg.matmul(a.detach().double().numpy(), b.detach().double().numpy())
    return torch.from_numpy(out).to(a.dtype)


class ExactLinear(torch.autograd.Function):
    """``x @ weight.T + bias`` with its gradients, every product through :func:`_exact_product`."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        return _exact_product(x, weight.t()) + bias

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor, torch.Tensor]:
        x, weight = ctx.saved_tensors
        # the first layer's input is the data: its gradient, a third of that layer's products, is never used
        grad_x = _exact_product(grad, weight) if ctx.needs_input_grad[0] else None
        return grad_x, _exact_product(grad.t(), x), grad.sum(0)


class ExactLogSumExp(torch.autograd.Function):
    """``logsumexp(x, dim=1)`` of a 2-D tensor and its gradient (the softmax), in float64 through
    :func:`pqb.builders.linalg.exp` and :func:`~pqb.builders.linalg.log`: torch's exp and log are MKL's
    vector math, whose bits depend on MKL's code path (Intel and AMD CPUs trained other weights)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        x64 = x.detach().double().numpy()
        top = x64.max(axis=1, keepdims=True)
        lse = top + linalg.log(linalg.exp(x64 - top).sum(axis=1, keepdims=True))
        ctx.save_for_backward(x, torch.from_numpy(lse))
        return torch.from_numpy(lse[:, 0]).to(x.dtype)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        x, lse = ctx.saved_tensors
        soft = linalg.exp(x.detach().double().numpy() - lse.numpy())
        return torch.from_numpy(grad.double().numpy()[:, None] * soft).to(x.dtype)


class Adam:
    """``torch.optim.Adam``'s update (no weight decay, no AMSGrad), with the square root taken by numpy,
    which rounds it exactly: torch's ``sqrt`` is MKL's vector math, whose bits depend on the CPU. The
    other steps are single products, sums and quotients, each rounded once whatever the CPU."""

    def __init__(
        self, params: Iterator[torch.nn.Parameter], lr: float, betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:  # fmt: skip
        self.params = list(params)
        self.lr, (self.b1, self.b2), self.eps = lr, betas, eps
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]
        self.t = 0

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        self.t += 1
        step = self.lr / (1 - self.b1**self.t)
        root2 = (1 - self.b2**self.t) ** 0.5
        for p, m, v in zip(self.params, self.m, self.v, strict=True):
            g = p.grad
            m.mul_(self.b1).add_(g * (1 - self.b1))
            v.mul_(self.b2).add_(g * g * (1 - self.b2))
            denom = torch.from_numpy(np.sqrt(v.numpy())) / root2 + self.eps
            p.sub_(m / denom * step)


class StyleMLP(torch.nn.Module):
    """k → hidden → ReLU → dim, then L2 normalisation onto the unit sphere. The layers are
    ``torch.nn.Linear`` for their parameters (and the saved weights' names); their products are
    :class:`ExactLinear`'s."""

    def __init__(self, k: int, hidden: int = 128, dim: int = 16) -> None:
        super().__init__()
        self.l1 = torch.nn.Linear(k, hidden)
        self.l2 = torch.nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(ExactLinear.apply(x, self.l1.weight, self.l1.bias))
        return torch.nn.functional.normalize(ExactLinear.apply(h, self.l2.weight, self.l2.bias), dim=-1)


def _sample_epoch(
    rng: np.random.Generator,
    starts: np.ndarray,
    ends: np.ndarray,
    user_of: np.ndarray,
    groups: list[np.ndarray],
    co_pools: dict[int, np.ndarray],
    n_pos: int,
    n_neg: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Positive and negative indices for every anchor (rows sorted by user; user u owns [starts, ends))."""
    n = len(user_of)
    size = ends[user_of] - starts[user_of]
    local = np.arange(n) - starts[user_of]
    r = (rng.random((n, n_pos)) * (size[:, None] - 1)).astype(np.int64)
    r += r >= local[:, None]
    pos = starts[user_of][:, None] + r
    for g in groups:  # same (user, product): the first half of the positives
        h = max(1, n_pos // 2)
        rr = (rng.random((len(g), h)) * (len(g) - 1)).astype(np.int64)
        rr += rr >= np.arange(len(g))[:, None]
        pos[g, :h] = g[rr]
    r = (rng.random((n, n_neg)) * (n - size[:, None])).astype(np.int64)
    r += np.where(r >= starts[user_of][:, None], size[:, None], 0)
    neg = r
    for u, pool in co_pools.items():  # users sharing a product: the first half of the negatives
        rows = np.arange(starts[u], ends[u])
        h = max(1, n_neg // 2)
        neg[rows, :h] = pool[rng.integers(0, len(pool), size=(len(rows), h))]
    return pos, neg


def train_mlp(
    F: np.ndarray, users: Sequence[str], products: Sequence[str], cfg: EncoderConfig
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Train :class:`StyleMLP` with multi-positive InfoNCE on profile features ``F`` (n × k)."""
    users = np.asarray(users)
    products = np.asarray(products)
    order = np.lexsort((np.arange(len(users)), users))
    F, users, products = F[order], users[order], products[order]
    uniq, user_of = np.unique(users, return_inverse=True)
    counts = np.bincount(user_of, minlength=len(uniq))
    keep_users = counts >= 2
    keep = keep_users[user_of]
    F, users, products = F[keep], users[keep], products[keep]
    uniq, user_of = np.unique(users, return_inverse=True)
    if len(uniq) < 2:
        raise ValueError(f"encoder training needs >= 2 users with >= 2 profile sentences, got {len(uniq)}")
    starts = np.searchsorted(user_of, np.arange(len(uniq)))
    ends = np.searchsorted(user_of, np.arange(len(uniq)), side="right")
    key = np.char.add(np.char.add(users.astype(str), "\t"), products.astype(str))
    _, gid = np.unique(key, return_inverse=True)
    groups = [g for g in (np.flatnonzero(gid == j) for j in range(gid.max() + 1)) if len(g) >= 2]
    prod_users: dict[str, set[int]] = {}
    for p, u in zip(products, user_of, strict=True):
        prod_users.setdefault(str(p), set()).add(int(u))
    co_pools: dict[int, np.ndarray] = {}
    for u in range(len(uniq)):
        others = sorted({v for s in prod_users.values() if u in s for v in s} - {u})
        if others:
            co_pools[u] = np.concatenate([np.arange(starts[v], ends[v]) for v in others])
    rng = np.random.default_rng(cfg.seed)
    X = torch.from_numpy(np.ascontiguousarray(F, dtype=np.float32))
    n = len(users)
    losses: list[float] = []
    with deterministic_torch(cfg.seed):
        model = StyleMLP(F.shape[1], cfg.hidden, cfg.dim)
        opt = Adam(model.parameters(), lr=cfg.lr)
        for _ in bar(range(cfg.epochs), desc="encoder epochs", leave=False):
            pos, neg = _sample_epoch(rng, starts, ends, user_of, groups, co_pools, cfg.n_pos, cfg.n_neg)
            perm = rng.permutation(n)
            epoch_loss = 0.0
            for b in range(0, n, cfg.batch_size):
                a = perm[b : b + cfg.batch_size]
                need, inv = np.unique(
                    np.concatenate([a, pos[a].ravel(), neg[a].ravel()]), return_inverse=True
                )
                Z = model(X[torch.from_numpy(need)])
                inv = torch.from_numpy(inv)
                za = Z[inv[: len(a)]]
                zp = Z[inv[len(a) : len(a) * (1 + cfg.n_pos)]].view(len(a), cfg.n_pos, -1)
                zn = Z[inv[len(a) * (1 + cfg.n_pos) :]].view(len(a), cfg.n_neg, -1)
                sp_ = (za[:, None, :] * zp).sum(-1) / cfg.tau
                sn_ = (za[:, None, :] * zn).sum(-1) / cfg.tau
                lse = ExactLogSumExp.apply(sp_), ExactLogSumExp.apply(torch.cat([sp_, sn_], 1))
                loss = -(lse[0] - lse[1]).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                epoch_loss += loss.item() * len(a)
            losses.append(epoch_loss / n)
    weights = {k: v.detach().cpu().numpy().copy() for k, v in model.state_dict().items()}
    stats = {"train_sentences": int(n), "train_users": len(uniq), "same_product_groups": len(groups),
             "users_with_coreviewers": len(co_pools), "loss_first": round(losses[0], 6) if losses else None,
             "loss_last": round(losses[-1], 6) if losses else None}  # fmt: skip
    return weights, stats


class SyntaxEncoder:
    """Texts → 16-d unit vectors through rules, vocabulary, SVD and the trained MLP.

    ``SyntaxEncoder.load(<work>/<domain>)`` then ``.encode(["a query", ...])`` is the whole public use.
    """

    def __init__(
        self,
        vocab: RuleVocab,
        components: np.ndarray,
        scale: np.ndarray,
        weights: dict[str, np.ndarray],
        config: EncoderConfig,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.vocab = vocab
        self.components = np.ascontiguousarray(components, dtype=np.float32)
        self.scale = np.ascontiguousarray(scale, dtype=np.float32)
        self.config = config
        self.meta = dict(meta or {})
        self.model = StyleMLP(self.components.shape[0], config.hidden, config.dim)
        self.model.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in weights.items()})
        self.model.eval()

    # -- fitting ------------------------------------------------------------------------------------
    @classmethod
    def fit(
        cls,
        rule_sets: Sequence[frozenset[str]],
        users: Sequence[str],
        products: Sequence[str],
        cfg: EncoderConfig | None = None,
    ) -> SyntaxEncoder:
        """Fit vocabulary, SVD and MLP on PROFILE sentences (their rule sets, authors and products)."""
        cfg = cfg or EncoderConfig()
        vocab = RuleVocab.fit(rule_sets, cfg.min_df)
        if len(vocab) < 2:
            raise ValueError(
                f"rule vocabulary has {len(vocab)} rules; need more profile sentences or a lower min_df"
            )
        X = vocab.transform(rule_sets)
        comps, scale = fit_svd(X, cfg.n_components, cfg.seed, cfg.svd_n_iter)
        F = cls._project(X, comps, scale)
        weights, stats = train_mlp(F, users, products, cfg)
        stats.update({"vocab_size": len(vocab), "svd_components": int(comps.shape[0])})
        return cls(vocab, comps, scale, weights, cfg, {"train": stats})

    @staticmethod
    def _project(X: sp.csr_matrix, comps: np.ndarray, scale: np.ndarray) -> np.ndarray:
        return (linalg.spmm(l2_rows(X), comps.astype(np.float64).T) / scale).astype(np.float32)

    # -- encoding -----------------------------------------------------------------------------------
    def encode_matrix(self, X: sp.csr_matrix) -> np.ndarray:
        F = self._project(X, self.components, self.scale)
        with deterministic_torch(self.config.seed), torch.no_grad():
            Z = self.model(torch.from_numpy(F)).numpy()
        return Z.astype(np.float64)

    def encode_rule_sets(self, rule_sets: Sequence[frozenset[str]]) -> np.ndarray:
        return self.encode_matrix(self.vocab.transform(rule_sets))

    def encode_parsed(self, parsed: Sequence[Parsed]) -> np.ndarray:
        return self.encode_rule_sets([rules_of(p) for p in parsed])

    def encode(self, texts: list[str]) -> np.ndarray:
        """(n, 16) unit vectors; each text is parsed on its own with the configured spaCy pipeline."""
        if not texts:
            return np.zeros((0, self.config.dim))
        return self.encode_parsed(parse_texts(texts))

    # -- persistence --------------------------------------------------------------------------------
    def save(self, directory: Path) -> list[Path]:
        """Write ``vocab.json``, ``svd.safetensors``, ``encoder.safetensors``, ``encoder.json`` (atomically)."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        self.vocab.save(d / "vocab.json")
        for name, tensors in (
            ("svd.safetensors", {"components": self.components, "scale": self.scale}),
            (
                "encoder.safetensors",
                {k: np.ascontiguousarray(v.detach().numpy()) for k, v in self.model.state_dict().items()},
            ),
        ):
            with atomic_path(d / name) as tmp:
                save_file(tensors, str(tmp))
        atomic_write_json(d / "encoder.json", {"config": self.config.as_dict(), **self.meta})
        return [d / n for n in ("vocab.json", "svd.safetensors", "encoder.safetensors", "encoder.json")]

    @classmethod
    def load(cls, workdir_path: str | Path) -> SyntaxEncoder:
        """Load from ``<work>/<domain>`` (or its ``syntax/`` folder)."""
        d = Path(workdir_path)
        if not (d / "encoder.json").exists():
            d = d / SYNTAX_DIR
        if not (d / "encoder.json").exists():
            raise FileNotFoundError(
                f"no trained syntax encoder in {workdir_path}; run `pqb-build profiles` first"
            )
        meta = json.loads((d / "encoder.json").read_text(encoding="utf-8"))
        cfg = EncoderConfig(**meta.pop("config"))
        svd = load_file(str(d / "svd.safetensors"))
        return cls(RuleVocab.load(d / "vocab.json"), svd["components"], svd["scale"],
                   load_file(str(d / "encoder.safetensors")), cfg, meta)  # fmt: skip
