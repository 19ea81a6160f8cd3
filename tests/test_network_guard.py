"""The autouse socket guard: local traffic passes, anything else is refused before it leaves."""

from __future__ import annotations

import socket

import pytest
from network_guard import NetworkBlockedError, is_local


@pytest.mark.parametrize(
    ("address", "local"),
    [
        (("127.0.0.1", 80), True), (("::1", 80, 0, 0), True), (("localhost", 8080), True),
        ("/tmp/some.sock", True), (("10.0.0.1", 80), False), (("huggingface.co", 443), False),
        (("192.168.1.5", 22), False), ((b"example.com", 80), False),
    ],
)  # fmt: skip
def test_is_local(address: object, local: bool) -> None:
    assert is_local(address) is local


def test_guard_is_installed_and_refuses_name_lookups() -> None:
    assert hasattr(socket.socket.connect, "__wrapped__") and hasattr(socket.getaddrinfo, "__wrapped__")
    with pytest.raises(NetworkBlockedError, match=r"huggingface\.co"):
        socket.getaddrinfo("huggingface.co", 443)
    assert socket.getaddrinfo("localhost", 80)  # loopback names still resolve


def test_loopback_still_works() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    with socket.create_connection(server.getsockname(), timeout=2):
        pass
    server.close()
