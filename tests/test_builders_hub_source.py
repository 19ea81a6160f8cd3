"""``--source hub`` against a Hub stand-in on loopback (``tests/hub_server.py``), through the real
``hf_hub_download`` in a ``pqb-build`` process pointed at it with ``HF_ENDPOINT`` (and its own
``HF_HOME``/``HF_HUB_CACHE``), the network guard installed there too.

Checked: an ingest from the Hub equals the ingest of the same files read locally (LFS and plain Git
files); a transfer dropped mid-file is resumed (``Range``) or restarted, and gives the same ingest; a
transfer that keeps failing, or delivers other bytes than the Hub's checksum names, ends in one
``error:`` line and writes nothing; a damaged cached file is fetched again; the revision asked for and
the commit it resolved to are recorded in the manifest (and, in the slow test, in the card), and both
files come from that one commit.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hub_server import FakeHub

from pqb.builders.config import BuildConfig
from pqb.builders.source.stage import run_ingest
from pqb.builders.workdir import CORPUS, PRODUCTS, REVIEWS, WorkDir
from pqb.dataset import settings

REPO = "McAuley-Lab/Amazon-Reviews-2023"
REVIEWS_FILE = "raw/review_categories/Video_Games.jsonl"
META_FILE = "raw/meta_categories/meta_Video_Games.jsonl"
TESTS = Path(__file__).resolve().parent
CHILD = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
import network_guard

class _Patch:
    setattr = staticmethod(setattr)

network_guard.install(_Patch())
from pqb.builders.cli import main
sys.exit(main(sys.argv[1:]))
"""
"""``pqb-build`` with the tests' network guard (loopback only), as its own process: ``huggingface_hub``
reads ``HF_ENDPOINT`` and its cache paths once, at import."""


def _slice() -> Path:
    if not (settings.PQB_AMAZON_DIR / "Video_Games.jsonl").is_file():
        pytest.skip("needs the offline slice at $PQB_AMAZON_DIR")
    return settings.PQB_AMAZON_DIR


def _files(folder: Path) -> dict[str, bytes]:
    return {REVIEWS_FILE: (folder / "Video_Games.jsonl").read_bytes(),
            META_FILE: (folder / "meta_Video_Games.jsonl").read_bytes()}  # fmt: skip


def _pqb_build(
    hub: FakeHub, home: Path, *argv: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
    env |= {"HF_ENDPOINT": hub.url, "HF_HOME": str(home), "HF_HUB_CACHE": str(home / "hub"), "HF_HUB_OFFLINE": "0",
            "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_ETAG_TIMEOUT": "20", "HF_HUB_DOWNLOAD_TIMEOUT": "20",
            "NO_PROXY": "127.0.0.1,localhost"}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-c", CHILD, *argv], env=env, capture_output=True, text=True, timeout=timeout
    )


def _ingest(hub: FakeHub, tmp: Path, source: str = "hub", *more: str) -> subprocess.CompletedProcess[str]:
    return _pqb_build(hub, tmp / "hf", "ingest", "--source", source, "--workdir", str(tmp / "hubwork"),
                      "--no-progress", *more)  # fmt: skip


def _local_ingest(folder: Path, tmp: Path) -> WorkDir:
    wd = WorkDir(tmp / "localwork", "video_games")
    run_ingest(wd, BuildConfig(source=str(folder)))
    return wd


def _same_ingest(a: WorkDir, b: WorkDir) -> None:
    for name in (PRODUCTS, CORPUS, REVIEWS):
        assert (a.path / name).read_bytes() == (b.path / name).read_bytes(), name
    sa, sb = (w.manifest["stages"]["ingest"]["stats"] for w in (a, b))
    for read in ("reviews_read", "meta_read"):
        sa[read].pop("path"), sb[read].pop("path")
    assert {k: v for k, v in sa.items() if k != "seconds"} == {k: v for k, v in sb.items() if k != "seconds"}


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and proc.stderr.rstrip().endswith(errors[0]), proc.stderr
    return errors[0]


@pytest.mark.parametrize("lfs", [True, pytest.param(False, marks=pytest.mark.slow)], ids=["lfs", "git"])
def test_hub_ingest_equals_the_local_ingest_and_records_the_commit(tmp_path: Path, lfs: bool) -> None:
    folder = _slice()
    with FakeHub(REPO, _files(folder), lfs=lfs) as hub:
        proc = _ingest(hub, tmp_path)
    assert proc.returncode == 0, proc.stderr
    hub_wd = WorkDir(tmp_path / "hubwork", "video_games")
    _same_ingest(hub_wd, _local_ingest(folder, tmp_path))
    source = hub_wd.manifest["stages"]["ingest"]["config"]["source"]
    assert source == {"kind": "hub", "repo_id": REPO, "revision": "main", "commit": hub.commit}
    heads = [path for method, path, _ in hub.log if method == "HEAD"]
    assert heads == [f"/datasets/{REPO}/resolve/main/{REVIEWS_FILE}",  # main resolved once, then pinned
                     f"/datasets/{REPO}/resolve/{hub.commit}/{META_FILE}"]  # fmt: skip


@pytest.mark.parametrize(
    "ignore_range", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["range", "server-ignores-range"]
)
def test_a_transfer_dropped_mid_file_is_resumed_and_gives_the_same_ingest(
    tmp_path: Path, ignore_range: bool
) -> None:
    """A file over huggingface_hub's 10 MB read chunk (a LOAD TEST file), cut after 12 MB: the client
    resumes at the last whole chunk (``Range: bytes=10485760-``), or starts over when the server ignores
    the range; either way the ingest is the local one's."""
    from pqb.builders.source.loadtest_domain import generate_domain

    folder = tmp_path / "lt"
    generate_domain(_slice(), "video_games", folder, scale=0.005, seed=1, progress=False)
    files = _files(folder)
    assert len(files[REVIEWS_FILE]) > 14_000_000
    with FakeHub(REPO, files, drop_once=12_000_000, ignore_range=ignore_range) as hub:
        proc = _ingest(hub, tmp_path)
    assert proc.returncode == 0, proc.stderr
    gets = [
        rng
        for method, path, rng in hub.log
        if method == "GET" and "Video_Games.jsonl" in path and "meta_" not in path
    ]
    assert gets == [None, "bytes=10485760-"]
    _same_ingest(WorkDir(tmp_path / "hubwork", "video_games"), _local_ingest(folder, tmp_path))


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        ("drop_always", "RemoteProtocolError"),
        ("no_length", "Consistency check failed"),
        ("corrupt", "fetched twice from the Hub dataset"),
    ],
)
def test_a_transfer_that_keeps_failing_is_one_error_and_writes_nothing(
    tmp_path: Path, fault: str, says: str
) -> None:
    with FakeHub(REPO, _files(_slice()), **{fault: True}) as hub:
        proc = _ingest(hub, tmp_path)
    assert says in _one_error_line(proc)
    assert not (WorkDir(tmp_path / "hubwork", "video_games").path / REVIEWS).exists()


def test_a_damaged_cached_file_is_fetched_again(tmp_path: Path) -> None:
    folder = _slice()
    with FakeHub(REPO, _files(folder)) as hub:
        assert _ingest(hub, tmp_path).returncode == 0
        blob = next(
            (tmp_path / "hf" / "hub").glob("datasets--*/snapshots/*/raw/review_categories/*")
        ).resolve()
        data = bytearray(blob.read_bytes())
        data[len(data) // 2] ^= 0x20  # same size: huggingface_hub would serve it as it is
        blob.write_bytes(bytes(data))
        n_gets = sum(method == "GET" for method, _, _ in hub.log)
        proc = _ingest(hub, tmp_path, "hub", "--force")
        assert proc.returncode == 0, proc.stderr
        assert sum(method == "GET" for method, _, _ in hub.log) == n_gets + 1
    _same_ingest(WorkDir(tmp_path / "hubwork", "video_games"), _local_ingest(folder, tmp_path))


def test_a_revision_pin_is_fetched_and_recorded(tmp_path: Path) -> None:
    with FakeHub(REPO, _files(_slice())) as hub:
        proc = _ingest(hub, tmp_path, f"hub@{hub.commit}")
        assert proc.returncode == 0, proc.stderr
        assert all(f"/resolve/{hub.commit}/" in path for method, path, _ in hub.log if method == "HEAD")
        source = WorkDir(tmp_path / "hubwork", "video_games").manifest["stages"]["ingest"]["config"]["source"]
        assert source == {"kind": "hub", "repo_id": REPO, "revision": hub.commit, "commit": hub.commit}
        unknown = _ingest(hub, tmp_path / "other", "hub@no-such-branch")
    assert "RevisionNotFoundError" in _one_error_line(unknown)


@pytest.mark.slow
def test_a_build_from_the_hub_equals_the_local_build_and_its_card_names_the_commit(tmp_path: Path) -> None:
    """``pqb-build all`` of the real Video_Games slice, once from the Hub stand-in at a pinned commit and
    once from the same files in a folder: every dataset file is byte-identical; the cards differ only
    where they name the source, and the Hub build's card names the commit."""
    folder = tmp_path / "src"
    folder.mkdir()
    for name, data in _files(_slice()).items():
        (folder / Path(name).name).write_bytes(data)
    with FakeHub(REPO, _files(folder)) as hub:
        common = ("--domain", "video_games", "--no-progress", "--workers", "2")
        built = _pqb_build(hub, tmp_path / "hf", "all", "--source", f"hub@{hub.commit}", "--workdir",
                           str(tmp_path / "w-hub"), "--dataset", str(tmp_path / "ds-hub"), *common, timeout=3600)  # fmt: skip
        assert built.returncode == 0, built.stderr[-3000:]
        local = _pqb_build(hub, tmp_path / "hf", "all", "--source", str(folder), "--workdir", str(tmp_path / "w-local"),
                           "--dataset", str(tmp_path / "ds-local"), *common, timeout=3600)  # fmt: skip
        assert local.returncode == 0, local.stderr[-3000:]
    files = {p.relative_to(tmp_path / "ds-hub") for p in (tmp_path / "ds-hub").rglob("*.parquet")}
    assert files and files == {
        p.relative_to(tmp_path / "ds-local") for p in (tmp_path / "ds-local").rglob("*.parquet")
    }
    for rel in files:
        assert (tmp_path / "ds-hub" / rel).read_bytes() == (tmp_path / "ds-local" / rel).read_bytes(), rel
    card_hub = (tmp_path / "ds-hub" / "README.md").read_text(encoding="utf-8")
    card_local = (tmp_path / "ds-local" / "README.md").read_text(encoding="utf-8")
    assert hub.commit in card_hub and hub.commit not in card_local

    # the cards differ only in where the source is named: the "source" objects of the stage configs
    # (local: kind and root; hub: kind, repo, revision and commit) and the provenance's source line
    def without_source(card: str) -> str:
        return re.sub(r'"source": (\{[^{}]*\}|"[^"]*")', '"source": ...', card)

    assert card_hub != card_local and without_source(card_hub) == without_source(card_local)
    manifest = json.loads((tmp_path / "w-hub" / "video_games" / "manifest.json").read_text())
    assert manifest["stages"]["ingest"]["config"]["source"]["commit"] == hub.commit
