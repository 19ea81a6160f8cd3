"""The numeric environment of this process: what decides floating-point bits on this machine.

Recorded in every builder stage manifest and every harness results file, so a reader can see which
BLAS library, kernel and thread count (via threadpoolctl), OpenMP runtime and torch CPU kernels
produced a file. It is a record, never part of a fingerprint: the builders' arithmetic
(``pqb.builders.linalg``) gives the same bytes under any of them, and the harness's metrics were measured
equal under OpenBLAS Haswell and SkylakeX kernels with 1 and 2 threads.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any

NUMERIC_ENV_VARS = (
    "OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "MKL_CBWR",
    "ATEN_CPU_CAPABILITY", "NPY_DISABLE_CPU_FEATURES",
)  # fmt: skip


def _cpu_model() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor()
    return next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")), "")


def numeric_environment() -> dict[str, Any]:
    """What decides floating-point results on this machine: the BLAS/OpenMP libraries loaded now (via
    threadpoolctl: library, version, kernel, threads), torch's CPU kernels if torch is loaded, the
    CPU and the variables that steer them."""
    from threadpoolctl import threadpool_info

    libs = [
        {k: info.get(k) for k in ("user_api", "internal_api", "version", "architecture", "num_threads")}
        | {"library": Path(info.get("filepath", "")).name}
        for info in threadpool_info()
    ]
    env: dict[str, Any] = {
        "machine": platform.machine(),
        "processor": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "threadpools": sorted(libs, key=lambda d: (str(d["user_api"]), d["library"])),
        "variables": {k: os.environ[k] for k in NUMERIC_ENV_VARS if k in os.environ},
    }
    torch = sys.modules.get("torch")
    if torch is not None:
        env["torch"] = {"cpu_capability": torch.backends.cpu.get_cpu_capability(),
                        "threads": torch.get_num_threads()}  # fmt: skip
    return env
