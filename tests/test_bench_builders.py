"""bench/bench_builders.py: the all-processes peak RSS counts the stage's worker processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))
import bench_builders as bb  # noqa: E402

# a parent holding ~20 MB that starts a child holding ~150 MB, then both wait to be killed
TREE = """
import subprocess, sys, time
held = bytearray(20 * 2**20)
child = subprocess.Popen([sys.executable, "-c", "import time; b = bytearray(150 * 2**20); print(1, flush=True); time.sleep(60)"],
                         stdout=subprocess.PIPE)
child.stdout.readline()
print(child.pid, flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(not Path("/proc/self/statm").is_file(), reason="reads /proc (Linux)")
def test_tree_rss_sums_the_children():
    proc = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE)
    child = 0
    try:
        child = int(proc.stdout.readline())
        own = int(Path(f"/proc/{proc.pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
        tree = bb._tree_rss_mb(proc.pid)
        assert own < 100 and tree > own + 150
    finally:
        if child:
            os.kill(child, signal.SIGKILL)
        proc.kill()
        proc.wait()
