"""Where the ``evaluate`` metric script lives, so ``evaluate.load(PQB_ROBUSTNESS_PATH)`` works offline."""

from __future__ import annotations

from importlib import resources

PQB_ROBUSTNESS_PATH: str = str(
    resources.files("pqb.harness.integrations").joinpath("pqb_robustness", "pqb_robustness.py")
)
