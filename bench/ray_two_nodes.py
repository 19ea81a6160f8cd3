"""A two-node Ray cluster started with ``ray start`` on this machine gives the bytes of the local run (issue 46).

Usage::

    python bench/ray_two_nodes.py [--scale 0.001] [--domain video_games] [--tmp DIR]

Starts a head node (``ray start --head --block``) and a second node (``ray start --address=<head>
--block``, its own ``--temp-dir`` and a ``node2`` resource, so Ray sees two nodes), one CPU each, each in its own session and on loopback only; builds a LOAD TEST domain (issue 46's generator) with
``pqb-build all --workers 2`` and with ``pqb-build all --executor ray --ray-address <head>`` (every parse,
encoding, audit and error-detection map runs as Ray tasks); and compares every file of the two published
datasets and work directories byte for byte. Each ``ray start`` is stopped by signalling its own process
group (never ``ray stop``, which would end every Ray process on the machine). Prints the wall times and the
verdict; exit 1 when a byte differs. ``tests/test_builders_ray_cluster.py`` runs it (slow).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

LOOPBACK = "127.0.0.1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def _ports(*names: str) -> list[str]:
    return [arg for name in names for arg in (f"--{name}", str(_free_port()))]


def _ray() -> str:
    return str(Path(sys.executable).with_name("ray"))


@contextmanager
def two_node_cluster(tmp: Path, env: Mapping[str, str], timeout: float = 600.0) -> Iterator[str]:
    """Yield the address of a head node and a second node started with ``ray start`` (see the docstring).

    The nodes' ``--temp-dir`` is a short folder under ``/tmp``, not under ``tmp``: Ray puts its Unix
    sockets there, and a socket path over 107 bytes (a pytest ``tmp_path`` is enough) makes
    ``ray start`` exit at once."""
    port = _free_port()
    ray_tmp = Path(tempfile.mkdtemp(prefix="pqbray-", dir="/tmp"))
    common = ["--block", "--disable-usage-stats", "--node-ip-address", LOOPBACK, "--num-cpus", "1",
              "--object-store-memory", str(300 * 2**20)]  # fmt: skip
    node_ports = ("node-manager-port", "object-manager-port", "dashboard-agent-listen-port",
                  "dashboard-agent-grpc-port", "metrics-export-port", "runtime-env-agent-port")  # fmt: skip
    head = [_ray(), "start", "--head", "--port", str(port), "--temp-dir", str(ray_tmp / "h"),
            "--include-dashboard", "false", *_ports("ray-client-server-port", *node_ports), *common]  # fmt: skip
    worker = [_ray(), "start", f"--address={LOOPBACK}:{port}", "--resources", '{"node2": 1}',
              "--temp-dir", str(ray_tmp / "w"), *_ports(*node_ports), *common]  # fmt: skip
    procs: list[subprocess.Popen[bytes]] = []
    tmp.mkdir(parents=True, exist_ok=True)
    logs = [open(tmp / "ray-head.log", "wb"), open(tmp / "ray-node2.log", "wb")]  # noqa: SIM115 (closed below)
    try:
        procs.append(subprocess.Popen(head, env=dict(env), stdout=logs[0], stderr=subprocess.STDOUT,
                                      start_new_session=True))  # fmt: skip
        _wait_for(f"{LOOPBACK}:{port}", 1, env, timeout, procs, tmp)
        procs.append(subprocess.Popen(worker, env=dict(env), stdout=logs[1], stderr=subprocess.STDOUT,
                                      start_new_session=True))  # fmt: skip
        _wait_for(f"{LOOPBACK}:{port}", 2, env, timeout, procs, tmp)
        yield f"{LOOPBACK}:{port}"
    finally:
        for p in reversed(procs):  # each `ray start --block` and the Ray processes it started: its own group
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
        for p in reversed(procs):
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for f in logs:
            f.close()
        shutil.rmtree(ray_tmp, ignore_errors=True)


NODES = """
import json, sys, ray
ray.init(address=sys.argv[1], log_to_driver=False, configure_logging=False)
print(json.dumps([n["Resources"] for n in ray.nodes() if n["Alive"]]))
"""


def _wait_for(address: str, n_nodes: int, env: Mapping[str, str], timeout: float,
              procs: list[subprocess.Popen[bytes]], tmp: Path) -> None:  # fmt: skip
    """Until the cluster at ``address`` has ``n_nodes`` live nodes (a ``ray start`` that ends first is an error)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p, log in zip(procs, ("ray-head.log", "ray-node2.log"), strict=False):
            if p.poll() is not None:
                raise RuntimeError(f"ray start ended early ({log}): {(tmp / log).read_text()[-2000:]}")
        try:  # a poll that cannot reach the head must not outlive the deadline
            out = subprocess.run([sys.executable, "-c", NODES, address], env=dict(env), capture_output=True,
                                 text=True, timeout=max(1.0, min(120.0, deadline - time.monotonic())))  # fmt: skip
        except subprocess.TimeoutExpired:
            continue
        if out.returncode == 0 and len(json.loads(out.stdout.strip().splitlines()[-1])) >= n_nodes:
            return
        time.sleep(2)
    raise RuntimeError(f"the Ray cluster at {address} did not reach {n_nodes} nodes in {timeout:.0f} s")


def _files(folder: Path) -> dict[str, bytes]:
    """Every file of a build, by path: the published dataset and each work dir's artifacts (the manifest
    holds timings, so it is compared through its recorded output hashes instead)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.name != "manifest.json" and not p.name.startswith("."):
            out[str(p.relative_to(folder))] = p.read_bytes()
        elif p.name == "manifest.json":
            stages = json.loads(p.read_text())["stages"]
            out[str(p.relative_to(folder))] = json.dumps(
                {k: v.get("output_sha256") for k, v in sorted(stages.items())}, sort_keys=True
            ).encode()
    return out


def compare(domain: str, scale: float, tmp: Path) -> dict[str, object]:
    """Build the LOAD TEST domain locally (2 processes) and on the two-node cluster; the differences."""
    from pqb.builders.source.loadtest_domain import generate_domain
    from pqb.dataset import settings

    src = tmp / "src"
    if not (src / "loadtest.json").is_file():
        generate_domain(Path(settings.PQB_AMAZON_DIR), domain, src, scale=scale, seed=0, progress=False)
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}  # fmt: skip
    cli = [
        sys.executable,
        "-c",
        "import sys; from pqb.builders.cli import main; sys.exit(main(sys.argv[1:]))",
    ]

    def build(name: str, *executor: str) -> float:
        t = time.perf_counter()
        run_env = {**env, "PQB_CACHE_DIR": str(tmp / f"cache-{name}")}  # cold: the maps really run
        out = subprocess.run([*cli, "all", "--domain", domain, "--source", str(src), "--workdir", str(tmp / name / "work"),
                              "--dataset", str(tmp / name / "dataset"), "--no-progress", *executor],
                             env=run_env, capture_output=True, text=True)  # fmt: skip
        if out.returncode:
            raise RuntimeError(f"pqb-build all {' '.join(executor)} failed: {out.stderr[-3000:]}")
        return time.perf_counter() - t

    local_s = build("local", "--workers", "2")
    with two_node_cluster(tmp / "cluster", env) as address:
        ray_s = build("ray", "--executor", "ray", "--ray-address", address)
    a, b = _files(tmp / "local"), _files(tmp / "ray")
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    return {"domain": domain, "scale": scale, "local_s": local_s, "ray_s": ray_s, "files": len(a),
            "rows_files": sum(k.endswith(".parquet") for k in a), "differ": differ}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--domain", default="video_games")
    ap.add_argument("--scale", type=float, default=0.001)
    ap.add_argument("--tmp", default=None, help="parent of the temporary folder (deleted at the end)")
    ap.add_argument(
        "--keep",
        default=None,
        help="work in this folder and keep it: a rerun resumes the builds (pqb-build all skips fresh stages)",
    )
    args = ap.parse_args(argv)
    if args.keep:
        res = compare(args.domain, args.scale, Path(args.keep))
    else:
        (Path(args.tmp) if args.tmp else Path(tempfile.gettempdir())).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="pqbray-", dir=args.tmp) as d:
            res = compare(args.domain, args.scale, Path(d))
    print(
        f"LOAD TEST {args.domain} x {args.scale:g}: local (2 processes) {res['local_s']:.0f} s, two-node Ray "
        f"cluster {res['ray_s']:.0f} s; {res['files']} files compared, "
        + (
            "all byte-identical"
            if not res["differ"]
            else f"{len(res['differ'])} differ: {res['differ'][:10]}"
        )
    )
    return 1 if res["differ"] else 0


if __name__ == "__main__":
    sys.exit(main())
