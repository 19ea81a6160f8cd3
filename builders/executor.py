"""Where the builders' heavy per-chunk maps run: in this process, in local worker processes, or on Ray.

Parsing, error detection and the candidate encoders are pure functions of one chunk of inputs (a
list of texts in, a list of results out), so they need no more than an ordered ``map``. The stages
cut their work into chunks the same way whatever the executor, and every back-end returns results in
input order, so the bytes a stage writes do not depend on where the chunks ran (a test checks this
for Ray against the local executor).

* :class:`LocalExecutor` (the default): ``workers=1`` maps in this process; ``workers > 1`` keeps a
  pool of spawned processes for the stage, each loading its models once (they are cached per process).
* :class:`RayExecutor` (``pip install 'pqb-benchmark[ray]'``): one Ray task per chunk. ``address=None`` starts
  a private local Ray instance; ``address="auto"`` joins the cluster this machine belongs to
  (``ray start --head`` on one node, ``ray start --address=<head>:6379`` on the others); a
  ``ray://<head>:10001`` address connects through Ray Client. Every node needs this package and its
  build extra installed (same versions, as pinned in the manifest), and the work directory and parse
  cache must be on a path every node sees only if the chunk functions read them (the builders' chunk
  functions take and return plain data, so they do not).

At most ``2 × workers`` chunks are in flight, so memory stays bounded by a few chunks whatever the
input size.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, Protocol, TypeVar

from pqb.builders.errors import ResourceUnavailableError, UsageError

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    """An ordered, lazily consumed map of a picklable top-level function over chunks."""

    name: str
    workers: int

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]: ...

    def close(self) -> None: ...


class RayNotInstalledError(ResourceUnavailableError, ImportError):
    """``--executor ray`` without the optional ``ray`` extra."""


PARENT_POLL_SECONDS = 0.5
"""How often a local worker checks that the process that started it is still alive."""


def die_with_parent(parent_pid: int) -> None:
    """Worker initializer: exit as soon as ``parent_pid`` is gone.

    A ``kill -9`` of ``pqb-build`` runs no clean-up, and its workers, blocked on the task pipe, used to
    live on as orphans (PPID 1, ~400 MB each) until killed by hand. A daemon thread polls the parent
    id (reparenting changes it) rather than relying on ``PR_SET_PDEATHSIG``, which is Linux-only and
    fires when the *thread* that started the worker ends, not the process.
    """

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="pqb-parent-watch", daemon=True).start()


class LocalExecutor:
    """In-process (``workers=1``) or a pool of ``workers`` spawned local processes."""

    def __init__(self, workers: int = 1) -> None:
        if workers < 1:
            raise UsageError(f"executor workers must be >= 1, got {workers}")
        self.workers = int(workers)
        self.name = f"local:{self.workers}"
        self._pool: ProcessPoolExecutor | None = None

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        if self.workers == 1:
            yield from map(fn, items)
            return
        if self._pool is None:  # spawn, not fork: a forked spaCy/torch state is not safe to reuse
            self._pool = ProcessPoolExecutor(
                self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=die_with_parent,
                initargs=(os.getpid(),),
            )
        pending: deque[Future[R]] = deque()
        for item in items:
            pending.append(self._pool.submit(fn, item))
            if len(pending) >= 2 * self.workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None


class RayExecutor:
    """One Ray task per chunk, results in input order (see the module docstring for ``address``)."""

    def __init__(self, address: str | None = None, *, num_cpus_per_task: float = 1.0) -> None:
        try:
            import ray
        except ImportError as exc:
            raise RayNotInstalledError(
                "--executor ray needs Ray: pip install 'pqb-benchmark[ray]' (or use --executor local)"
            ) from exc
        self._ray = ray
        self._owns = not ray.is_initialized()
        if self._owns:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
        self.workers = max(1, int(ray.cluster_resources().get("CPU", 1) // num_cpus_per_task))
        self.name = f"ray:{address or 'local'}"
        self._cpus = num_cpus_per_task
        self._remote: dict[Callable[..., Any], Any] = {}

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        ray = self._ray
        if fn not in self._remote:
            self._remote[fn] = ray.remote(num_cpus=self._cpus)(fn)
        task = self._remote[fn]
        pending: deque[Any] = deque()
        for item in items:
            pending.append(task.remote(item))
            if len(pending) >= 2 * self.workers:
                yield ray.get(pending.popleft())
        while pending:
            yield ray.get(pending.popleft())

    def close(self) -> None:
        if self._owns:
            self._ray.shutdown()
            self._owns = False


def make_executor(kind: str = "local", workers: int = 1, address: str | None = None) -> Executor:
    """``local`` (``workers`` processes) or ``ray`` (``address``: None, ``auto`` or ``ray://host:port``)."""
    if kind == "local":
        return LocalExecutor(workers)
    if kind == "ray":
        return RayExecutor(address)
    raise UsageError(f"unknown executor {kind!r}; use 'local' or 'ray'")
