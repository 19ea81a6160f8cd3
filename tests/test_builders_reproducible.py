"""The profiles stage — the numerically heaviest builder step (SVD, encoder training, Gaussian fits and
audits) — writes the same bytes under every OpenBLAS kernel this CPU can run, with 1 and 2 threads,
under torch's AVX2 and AVX-512 kernels, and under MKL's code paths.

Before ``pqb.builders.linalg``, a SkylakeX kernel and a Haswell/Zen kernel (or 1 vs 2 threads) gave other
SVD bits, other Gaussians and other pairs, so the committed dataset did not rebuild on other machines.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from numeric_kernels import run_under, runnable_kernels

from pqb.dataset import settings
from pqb.dataset.io import sha256_file

OUTPUTS = ("vocab.json", "svd.safetensors", "encoder.safetensors", "gaussians.parquet", "embeddings.parquet")


@pytest.mark.slow
def test_profiles_stage_bytes_are_identical_across_kernels_and_threads(tmp_path: Path) -> None:
    from pqb.builders.config import BuildConfig
    from pqb.builders.source.stage import run_ingest, run_users
    from pqb.builders.workdir import WorkDir

    if not (Path(settings.PQB_AMAZON_DIR) / "Video_Games.jsonl").exists():
        pytest.skip("needs the offline slice at $PQB_AMAZON_DIR")
    base = tmp_path / "base"
    wd = WorkDir(base, "video_games")
    run_ingest(wd, BuildConfig(link="any"))
    run_users(wd, BuildConfig(link="any"))
    # torch's vector kernels too: AVX2 beside the AVX-512 ones where the CPU has them; and MKL's code path,
    # which no longer enters (the encoder calls linalg for its products, exp and log)
    runs = [(kernel, threads, {}) for kernel in runnable_kernels(("Haswell", "SkylakeX", "Zen")) for threads in (1, 2)]
    runs += [("Haswell", 1, {"ATEN_CPU_CAPABILITY": "avx2"})] if runnable_kernels(("SkylakeX",)) else []
    runs += [("Haswell", 1, {"MKL_CBWR": "AVX2"}), ("Haswell", 1, {"MKL_CBWR": "COMPATIBLE"})]
    digests: dict[tuple[str, int, str], tuple[str, ...]] = {}
    for i, (kernel, threads, env) in enumerate(runs):
        work = tmp_path / f"run{i}-{kernel}-{threads}"
        shutil.copytree(base, work)
        run_under(kernel, threads, ["-c", "import sys; from pqb.builders.cli import main; sys.exit(main())", "profiles", "--domain", "video_games",
                                    "--workdir", str(work), "--threshold", "heldout", "--epochs", "3"], env=env)  # fmt: skip
        digests[kernel, threads, str(env)] = tuple(sha256_file(work / "video_games/syntax" / n) for n in OUTPUTS)
    assert len(digests) >= 2
    assert len(set(digests.values())) == 1, digests
