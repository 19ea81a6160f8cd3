"""No test may reach the network: a socket guard that allows only loopback and Unix-domain sockets.

Installed for every test by ``conftest.py``. It refuses before anything leaves the machine —
``connect``/``connect_ex``/``sendto`` on a non-local address and name lookups of non-local hosts —
so an accidental Hub download or HTTP call fails at once with :class:`NetworkBlockedError` instead
of hanging or silently succeeding on a machine that happens to be online. Headless Chromium, the
Gradio Space and other local servers keep working over 127.0.0.1 / ::1.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback", ""})


class NetworkBlockedError(OSError):
    """A test tried to reach a non-local address."""


def is_local(address: Any) -> bool:
    """True for Unix-socket paths, loopback IPs and the loopback host names."""
    if isinstance(address, (str, bytes)):  # AF_UNIX path (or abstract name)
        return True
    host = address[0] if isinstance(address, tuple) and address else address
    if isinstance(host, bytes):
        host = host.decode()
    if not isinstance(host, str):
        return False
    if host.lower() in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _guard(method: Any, address_index: int, *, lookup: bool = False) -> Any:
    """Wrap a socket call so it refuses non-local addresses (``lookup``: args[0] is a host name)."""

    def guarded(*args: Any, **kwargs: Any) -> Any:
        address = args[address_index] if len(args) > address_index else None
        if lookup:
            address = (address,)
        elif getattr(args[0], "family", None) == socket.AF_UNIX:
            return method(*args, **kwargs)
        if address is not None and not is_local(address):
            raise NetworkBlockedError(f"tests run offline: {method.__name__} to {address!r} was blocked")
        return method(*args, **kwargs)

    guarded.__name__ = method.__name__
    guarded.__wrapped__ = method  # type: ignore[attr-defined]
    return guarded


def install(monkeypatch: Any) -> None:
    """Patch ``socket`` for the duration of one test (``monkeypatch`` undoes it)."""
    monkeypatch.setattr(socket.socket, "connect", _guard(socket.socket.connect, 1))
    monkeypatch.setattr(socket.socket, "connect_ex", _guard(socket.socket.connect_ex, 1))
    monkeypatch.setattr(socket.socket, "sendto", _guard(socket.socket.sendto, 2))
    monkeypatch.setattr(socket, "getaddrinfo", _guard(socket.getaddrinfo, 0, lookup=True))
