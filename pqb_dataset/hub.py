"""Is the Hugging Face Hub reachable? One quick probe before the first Hub lookup, so offline means fast.

Without network and without ``HF_HUB_OFFLINE``, ``huggingface_hub`` retries every failed request with
back-off (1 + 2 + 4 + 8 + 8 s): a harness run on a Hub id printed 11 retry lines over 23-28 s before its
one-line error. :func:`hub_unreachable` opens one TCP connection to the Hub's endpoint with a short
timeout first; when that fails, callers give their one-line error at once, naming why. The answer is
kept for :data:`PROBE_TTL` seconds (a notebook that comes online later asks again).
"""

from __future__ import annotations

import os
import socket
import time
from urllib.parse import urlparse

from pqb.dataset import settings

PROBE_TIMEOUT = 3.0
"""Seconds to wait for the Hub's TCP handshake (a reachable Hub answers in well under a second)."""

PROBE_TTL = 60.0
"""Seconds a probe's answer is reused."""

_answers: dict[tuple[str, int], tuple[float, str | None]] = {}


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` or ``HF_DATASETS_OFFLINE`` is set: the user asked for no Hub access at all."""
    return bool(settings.HF_HUB_OFFLINE) or os.environ.get("HF_DATASETS_OFFLINE", "").lower() in {
        "1",
        "true",
        "yes",
    }


def hub_endpoint() -> tuple[str, int]:
    """(host, port) of the Hub endpoint (``HF_ENDPOINT``, default ``https://huggingface.co``)."""
    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    return url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)


def hub_unreachable() -> str | None:
    """``None`` when the Hub endpoint accepts a TCP connection within :data:`PROBE_TIMEOUT`; else one line
    saying why (``huggingface.co:443: [Errno -2] Name or service not known``)."""
    host, port = hub_endpoint()
    now = time.monotonic()
    cached = _answers.get((host, port))
    if cached is not None and now - cached[0] < PROBE_TTL:
        return cached[1]
    why: str | None = None
    try:
        socket.create_connection((host, port), timeout=PROBE_TIMEOUT).close()
    except OSError as exc:  # DNS failure, refused, timed out, or a sandbox that blocks sockets
        why = f"{host}:{port}: {' '.join(str(exc).split()) or type(exc).__name__}"
    _answers[(host, port)] = (now, why)
    return why
