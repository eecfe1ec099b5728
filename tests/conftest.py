"""Shared fixtures: the network fence, settings in a temp dir, and the real app on a real port."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from engram.config import Settings

SERVICE_DID = "did:web:engram.test"
PUBLIC_URL = "https://engram.test"


def _is_loopback(address) -> bool:
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, bytes):
        host = host.decode()
    if not isinstance(host, str):
        return True  # AF_UNIX paths and other local families
    if host in {"localhost", ""}:
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def network_fence(monkeypatch):
    """Fail any connection that is not to this machine: no test may reach the internet."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def guarded(real):
        def connect(self, address):
            if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address):
                raise AssertionError(f"test tried to reach the network: {address!r}")
            return real(self, address)

        return connect

    monkeypatch.setattr(socket.socket, "connect", guarded(real_connect))
    monkeypatch.setattr(socket.socket, "connect_ex", guarded(real_connect_ex))
    yield


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(
        data_dir=tmp_path / "engram-data",
        public_url=PUBLIC_URL,
        service_did=SERVICE_DID,
        embedder="hashing",
        plc_url="http://127.0.0.1:9",  # tests that need a PLC directory start a fake one and override this
        workers=2,
        # A search waits for its index to load (tests of 503 IndexLoading set 0): on a busy CI machine the
        # default 2 s can pass while a freshly seeded space loads, and that would test the machine.
        load_wait_ms=10_000,  # the most ENGRAM_LOAD_WAIT_MS allows
        validate_output=True,  # every answer checked against its lexicon, not only each method's first
        # One process: tests that run `engram serve` from these settings inspect its in-process state.
        processes=1,
    )


# Hypothesis' per-example deadline (200 ms) and its too_slow health check are wall-clock assertions: on a
# busy 2-core CI machine they fail for the neighbours' load, not for the code. Every test runs without them.
hypothesis_settings.register_profile(
    "engram", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
hypothesis_settings.load_profile("engram")
