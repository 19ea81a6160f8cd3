"""OpenBLAS kernels this CPU can run, and a helper to run Python under a forced kernel and thread count.

Forcing ``OPENBLAS_CORETYPE`` to a kernel whose instructions the CPU lacks would crash the child, so
the matrix is restricted to what ``/proc/cpuinfo`` says the CPU supports (Prescott needs only SSE3).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

KERNEL_FLAGS = {
    "Prescott": {"sse3"},
    "Sandybridge": {"avx"},
    "Haswell": {"avx2", "fma"},
    "Zen": {"avx2", "fma"},
    "SkylakeX": {"avx512f", "avx512bw", "avx512vl", "avx512dq"},
}


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return set(line.split(":", 1)[-1].split())


def runnable_kernels(wanted: tuple[str, ...]) -> list[str]:
    flags = cpu_flags()
    return [k for k in wanted if KERNEL_FLAGS[k] <= flags]


def run_under(
    kernel: str, threads: int, args: list[str], env: dict[str, str] | None = None, **kw: object
) -> subprocess.CompletedProcess[str]:
    """``python <args>`` with OpenBLAS forced onto ``kernel`` and ``threads`` (and OpenMP likewise), plus ``env``."""
    env = dict(os.environ, OPENBLAS_CORETYPE=kernel, OPENBLAS_NUM_THREADS=str(threads),
               OMP_NUM_THREADS=str(threads), **(env or {}))  # fmt: skip
    proc = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    assert proc.returncode == 0, f"{kernel}/{threads} threads: exit {proc.returncode}\n{proc.stderr[-2000:]}"
    return proc
