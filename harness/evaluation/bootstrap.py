"""Seeded clustered bootstrap: percentile 95% CIs that respect how PQB's pairs cluster, vectorised.

Why clustered: error pairs share a target (about two per ASIN) and a user (up to ten rows each), so
resampling pairs as if independent makes CIs too narrow. The *unit* says what is resampled with
replacement; every observation inside a drawn unit comes along whole:

* ``pair``   — one syntactic pair group (rows sharing ``pair_id``) or one error row (the old behaviour);
* ``target`` — the target ASIN, with all its pairs and queries (the default);
* ``user``   — the user. A syntactic pair joins two users, so its weight in a replicate is the
  *product* of its users' draw counts (Owen's pigeonhole bootstrap for crossed units); error pairs
  and queries have one user.

A replicate draws ``n_units`` units with replacement, giving each unit a count ``W_u``; an
observation's weight is the product of its units' counts times its base weight (1, or the authors'
per-ASIN macro weight), and every metric is the weighted mean. All metrics of a task share one draw
of counts per replicate ("paired": Flip@10 and MRR move together), and :mod:`pqb.harness.evaluation.compare` uses the
same draws for both systems.

Replicates depend only on the seed and the inputs, never on the BLAS kernel, the thread count or the
process. Two-unit levels use elementwise products and ``numpy`` sums. Single-unit levels, the common
case, are one BLAS product ``counts @ per-unit sums``. BLAS may add in any order, so
:func:`fixed_point` first rounds each column of per-unit sums to integers on a power-of-two grid
chosen so that no partial sum can exceed 2**52. Every partial sum is then an exact integer, and every
kernel and thread count gives the same bits. The rounding moves a replicate mean by at most
``n_units * max|per-unit sum| * 2**-51`` (4e-11 at 50K units of two pairs each), far below any
reported digit. The replicates are
also independent of the chunk size (one generator, rows drawn in order). Memory stays below
``MAX_CELLS`` float64 cells per array, however many replicates or observations.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from pqb.dataset.progress import bar

UNITS: tuple[str, ...] = ("pair", "target", "user")
DEFAULT_UNIT = "target"
MAX_CELLS = 4_000_000
"""Upper bound on (replicates in a chunk) × (observations or units) cells per temporary array (32 MB)."""


@dataclass(frozen=True)
class Level:
    """One kind of observation of a task (its pairs, its queries, or the authors' per-ASIN values).

    ``units[i]`` holds the unit code(s) of observation ``i``: shape ``(n, 1)``, or ``(n, 2)`` for an
    observation that belongs to two units at once (a syntactic pair under the ``user`` unit).
    ``values`` maps metric names to per-observation arrays; ``base`` are fixed weights (``None`` = 1).
    """

    units: np.ndarray
    values: dict[str, np.ndarray]
    base: np.ndarray | None = None

    def __post_init__(self) -> None:
        units = np.asarray(self.units, dtype=np.int64)
        object.__setattr__(
            self, "units", units.reshape(len(units), -1) if units.size else units.reshape(0, 1)
        )
        object.__setattr__(
            self, "values", {k: np.asarray(v, np.float64).reshape(-1) for k, v in self.values.items()}
        )

    @property
    def n(self) -> int:
        return int(self.units.shape[0])

    def weights(self, counts: np.ndarray) -> np.ndarray:
        """(replicates, n) observation weights from (replicates, n_units) unit draw counts."""
        w = counts[:, self.units[:, 0]]
        for col in range(1, self.units.shape[1]):
            w = w * counts[:, self.units[:, col]]
        return w if self.base is None else w * self.base[None, :]

    @property
    def single(self) -> bool:
        """Each observation in one unit: the level can be summed per unit first."""
        return self.units.shape[1] == 1

    def unit_sums(self, n_units: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """(per-unit base-weighted sum of each metric, per-unit sum of base weights), single-unit levels.

        A replicate then costs one pass over units instead of observations (``bincount`` adds in
        observation order: deterministic)."""
        u = self.units[:, 0]
        base = np.ones(self.n) if self.base is None else self.base
        totals = np.bincount(u, weights=base, minlength=n_units)
        return {
            k: np.bincount(u, weights=v * base, minlength=n_units) for k, v in self.values.items()
        }, totals

    def fixed_sums(self, n_units: int) -> FixedSums:
        """:meth:`unit_sums` as one fixed-point matrix, the base-weight totals in column 0."""
        per_unit, totals = self.unit_sums(n_units)
        columns = np.column_stack([totals, *per_unit.values()])
        return FixedSums(tuple(per_unit), *fixed_point(columns, n_units))

    def point(self) -> dict[str, float]:
        """The estimate itself: the base-weighted mean of every metric (NaN when empty)."""
        if self.n == 0:
            return {k: float("nan") for k in self.values}
        base = np.ones(self.n) if self.base is None else self.base
        return {k: float((v * base).sum() / base.sum()) for k, v in self.values.items()}


@dataclass(frozen=True)
class FixedSums:
    """Per-unit sums of a single-unit level, ready for :func:`exact_product` (see :func:`fixed_point`)."""

    names: tuple[str, ...]
    ints: np.ndarray
    scale: np.ndarray

    def means(self, counts: np.ndarray) -> dict[str, np.ndarray]:
        """Replicate means of every metric for a chunk of unit draw ``counts``; NaN for zero weight."""
        sums = exact_product(counts, self.ints, self.scale)
        with np.errstate(invalid="ignore", divide="ignore"):
            return {k: sums[:, i + 1] / sums[:, 0] for i, k in enumerate(self.names)}


@dataclass(frozen=True)
class Design:
    """All levels of a task over one unit space of ``n_units`` units (codes ``0..n_units-1``)."""

    n_units: int
    levels: dict[str, Level] = field(default_factory=dict)

    def point(self) -> dict[str, float]:
        return {k: v for level in self.levels.values() for k, v in level.point().items()}


def unit_codes(labels: np.ndarray | list) -> tuple[np.ndarray, list]:
    """(integer code per label, sorted distinct labels): units are numbered in sorted label order, so
    the same data give the same codes (and the same replicates) on every machine."""
    uniq, inverse = np.unique(np.asarray(labels, dtype=object).astype(str), return_inverse=True)
    return inverse.astype(np.int64).reshape(np.shape(labels)), list(uniq)


def chunk_size(n_boot: int, width: int, max_cells: int = MAX_CELLS) -> int:
    """Replicates per chunk so that ``chunk × width`` stays under ``max_cells``."""
    return max(1, min(n_boot, max_cells // max(1, width)))


def draw_counts(rng: np.random.Generator, n_units: int, n_rep: int) -> np.ndarray:
    """(n_rep, n_units) counts of each unit among ``n_units`` draws with replacement, per replicate.

    Row r is ``bincount(rng.integers(0, n_units, n_units))`` of the r-th draw, so a chunk of rows is
    the same as drawing replicate by replicate (the slow reference loop in the tests does that)."""
    idx = rng.integers(0, n_units, size=(n_rep, n_units))
    counts = np.empty((n_rep, n_units))
    for row, drawn in zip(counts, idx, strict=True):  # one short bincount per row: cache-sized
        row[:] = np.bincount(drawn, minlength=n_units)
    return counts


def fixed_point(columns: np.ndarray, n_draws: int) -> tuple[np.ndarray, np.ndarray]:
    """(integer-valued float64 columns, per-column scale) with ``columns ≈ ints * scale``.

    Each column's scale is the power of two that keeps ``n_draws * max|ints|`` under 2**52. A row of
    draw counts sums to ``n_draws``, so every partial sum of ``counts @ ints`` is an integer below 2**52:
    exact in float64 whatever order a BLAS kernel adds in. A column holding NaN or ±inf is kept as it is,
    with scale NaN, so that :func:`exact_product` sums it elementwise instead."""
    columns = np.asarray(columns, dtype=np.float64)
    peak = np.abs(columns).max(axis=0, initial=0.0)
    finite = np.isfinite(peak)
    bound = np.where(finite & (peak > 0), n_draws * np.where(finite, peak, 1.0), 1.0)
    scale = np.exp2(np.ceil(np.log2(bound)) - 51)
    ints = np.where(finite[None, :], np.rint(columns / scale[None, :]), columns)
    return ints, np.where(finite, scale, np.nan)


def exact_product(counts: np.ndarray, ints: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``counts @ (ints * scale)``, the same bits on every BLAS kernel (see :func:`fixed_point`)."""
    finite = np.isfinite(scale)
    if finite.all():
        return (counts @ ints) * scale[None, :]
    out = np.empty((counts.shape[0], ints.shape[1]))
    out[:, finite] = (counts @ ints[:, finite]) * scale[finite][None, :]
    with np.errstate(invalid="ignore"):  # an undrawn unit's 0 × inf is NaN, as in a plain sum
        for col in np.flatnonzero(~finite):
            out[:, col] = (counts * ints[:, col][None, :]).sum(axis=1)
    return out


def _draw_width(design: Design) -> int:
    """Cells per replicate of the widest array a chunk holds (units or a level's observations)."""
    return max([design.n_units, *(lv.n for lv in design.levels.values())])


def iter_count_chunks(design: Design, n_boot: int, seed: int) -> Iterator[tuple[slice, np.ndarray]]:
    """(replicate slice, unit counts) chunk by chunk, from one generator seeded with ``seed``."""
    step = chunk_size(n_boot, _draw_width(design))
    rng = np.random.default_rng(seed)
    for start in range(0, n_boot, step):
        stop = min(start + step, n_boot)
        yield slice(start, stop), draw_counts(rng, design.n_units, stop - start)


def weighted_means(
    level: Level, w: np.ndarray, values: Mapping[str, np.ndarray] | None = None
) -> dict[str, np.ndarray]:
    """Per-replicate weighted mean of each array (rows of ``w`` are replicates); NaN for zero weight."""
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {k: (w * v[None, :]).sum(axis=1) / total for k, v in (values or level.values).items()}


def level_replicates(level: Level, counts: np.ndarray, n_units: int,
                     sums: FixedSums | None = None) -> dict[str, np.ndarray]:  # fmt: skip
    """Replicate means of every metric of ``level`` for a chunk of unit draw ``counts``.

    Single-unit levels use their per-unit sums (``sums``, from :meth:`Level.fixed_sums`) in one exact
    product; two-unit levels weigh each observation by the product of its units' counts."""
    if level.n == 0:
        return {k: np.full(counts.shape[0], np.nan) for k in level.values}
    if not level.single:
        return weighted_means(level, level.weights(counts))
    return (sums if sums is not None else level.fixed_sums(n_units)).means(counts)


def bootstrap_design(design: Design, *, n_boot: int = 1000, seed: int = 0) -> dict[str, np.ndarray]:
    """``n_boot`` replicate means of every metric of every level, all from the same unit draws."""
    names = [k for level in design.levels.values() for k in level.values]
    if n_boot <= 0 or design.n_units == 0:
        return {k: np.empty(0) for k in names}
    out = {k: np.empty(n_boot) for k in names}
    sums = {n: lv.fixed_sums(design.n_units) for n, lv in design.levels.items() if lv.single and lv.n}
    chunks = iter_count_chunks(design, n_boot, seed)
    total = -(-n_boot // chunk_size(n_boot, _draw_width(design)))
    for rows, counts in bar(chunks, desc=f"bootstrap ({n_boot} replicates)", total=total, unit="chunk",
                            leave=False, dynamic_ncols=True):  # fmt: skip
        for name, level in design.levels.items():
            for k, v in level_replicates(level, counts, design.n_units, sums.get(name)).items():
                out[k][rows] = v
    return out


def bootstrap_means(
    values: Mapping[str, np.ndarray],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    groups: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Replicate means of equal-length per-pair arrays, each observation its own unit (``pair``).

    With ``groups`` the units are the groups and each group weighs 1 whatever its size: the authors'
    per-ASIN macro average (mean of group means), resampled by ASIN.
    """
    names = list(values)
    if not names:
        return {}
    n = len(np.asarray(values[names[0]]).reshape(-1))
    if groups is None:
        units, base = np.arange(n), None
    else:
        units, _ = unit_codes(groups)
        base = 1.0 / np.bincount(units)[units] if n else None
    n_units = int(units.max()) + 1 if n else 0
    return bootstrap_design(
        Design(n_units, {"obs": Level(units, dict(values), base)}), n_boot=n_boot, seed=seed
    )


def percentile_ci(replicates: np.ndarray, alpha: float = 0.05) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates; ``(nan, nan)`` when there are none."""
    r = np.asarray(replicates, dtype=np.float64)
    r = r[~np.isnan(r)]
    if r.size == 0:
        return (float("nan"), float("nan"))
    lo, hi = np.quantile(r, [alpha / 2, 1 - alpha / 2])
    return (float(lo), float(hi))
