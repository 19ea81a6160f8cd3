"""The syntactic encoder's settings, apart from the encoder: a stage fingerprints them before it decides
whether to run, and importing them must not import torch (seconds a cached rerun would pay for nothing)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

SYNTAX_DIR = "syntax"


@dataclass(frozen=True)
class EncoderConfig:
    n_components: int = 256
    hidden: int = 128
    dim: int = 16
    tau: float = 0.1
    lr: float = 3e-3
    batch_size: int = 128
    epochs: int = 30
    n_pos: int = 4
    n_neg: int = 8
    svd_n_iter: int = 7
    min_df: int = 2
    seed: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
