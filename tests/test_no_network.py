"""No test reaches the network: the test process refuses every address but loopback
(tests/conftest.py), and says which address a test tried."""

from __future__ import annotations

import socket

import pytest


def test_an_internet_address_is_refused_with_its_address() -> None:
    with pytest.raises(ConnectionRefusedError, match=r"no network but 127\.0\.0\.1: 192\.0\.2\.7"):
        socket.create_connection(("192.0.2.7", 443), timeout=1)


def test_loopback_still_connects() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    with server, socket.create_connection(server.getsockname(), timeout=1):
        pass
