"""Shared fixtures: the network fence, settings in a temp dir, and the real app on a real port."""

from __future__ import annotations

import ipaddress
import os
import socket

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from engram.config import Settings

SERVICE_DID = "did:web:engram.test"
PUBLIC_URL = "https://engram.test"
LOOPBACK_NETWORKS = (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"))


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


@pytest.fixture(autouse=True)
def no_postgres_on_the_loop(request):
    """Fail a test during which a PostgreSQL statement ran on an event loop's thread: on PostgreSQL every
    statement is a round trip, and the loop never blocks (engram/store/postgres/loop_guard.py). Tests that
    call the store synchronously from their own coroutine on purpose are marked `loop_queries_allowed`."""
    from engram.store.postgres import loop_guard

    seen: list[str] = []
    previous = loop_guard.report_to(seen.append)
    try:
        yield seen
    finally:
        loop_guard.report_to(previous)
    if seen and request.node.get_closest_marker("loop_queries_allowed") is None:
        pytest.fail(f"PostgreSQL statements ran on the event loop's thread: {sorted(set(seen))}")


@pytest.fixture
def settings(tmp_path, request) -> Settings:
    return Settings(
        # TEST_STORE_BACKEND=postgres runs every test built on these settings on a PostgreSQL store
        # (docs/scale-out.md#running-the-tests-on-postgresql); unset, SQLite in data_dir.
        database_url=_test_database_url(request),
        data_dir=tmp_path / "engram-data",
        public_url=PUBLIC_URL,
        service_did=SERVICE_DID,
        embedder="hashing",
        plc_url="http://127.0.0.1:9",  # tests that need a PLC directory start a fake one and override this
        # The fakes at the network edge listen on loopback; tests of the outbound guard set () (tests/security).
        outbound_allow=LOOPBACK_NETWORKS,
        workers=2,
        # A search waits for its index to load (tests of 503 IndexLoading set 0): on a busy CI machine the
        # default 2 s can pass while a freshly seeded space loads, and that would test the machine.
        load_wait_ms=10_000,  # the most ENGRAM_LOAD_WAIT_MS allows
        validate_output=True,  # every answer checked against its lexicon, not only each method's first
        # One process: tests that run `engram serve` from these settings inspect its in-process state.
        processes=1,
    )


def _test_database_url(request) -> str | None:
    if os.environ.get("TEST_STORE_BACKEND", "sqlite") != "postgres":
        return None
    return request.getfixturevalue("pg_database_url")


# Hypothesis' per-example deadline (200 ms) and its too_slow health check are wall-clock assertions: on a
# busy 2-core CI machine they fail for the neighbours' load, not for the code. Every test runs without them.
hypothesis_settings.register_profile(
    "engram", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
hypothesis_settings.load_profile("engram")


# -- PostgreSQL: one real server per session, a fresh database per test (tests/support/postgres_server.py) ----------


@pytest.fixture(scope="session")
def postgres_server():
    """The session's PostgreSQL server; skips (saying what to install) where no binaries exist."""
    from support.postgres_server import SKIP_MESSAGE, PostgresServer, find_binaries

    bin_dir = find_binaries()
    if bin_dir is None:
        pytest.skip(SKIP_MESSAGE)
    server = PostgresServer(bin_dir).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres_dsn(postgres_server) -> str:
    """DSN of the session server's maintenance database (create and drop databases through it)."""
    return postgres_server.dsn


@pytest.fixture
def pg_empty_database_url(postgres_server):
    """A brand-new database without any schema (migration tests), dropped afterwards."""
    url = postgres_server.create_database()
    yield url
    postgres_server.drop_database(url)


@pytest.fixture(scope="session")
def _pg_migrated_database(postgres_server):
    import psycopg

    from engram.store.postgres.migrate import apply_migrations

    url = postgres_server.create_database()
    with psycopg.connect(url, autocommit=True) as conn:
        apply_migrations(conn)
    return url


@pytest.fixture
def pg_database_url(postgres_server, _pg_migrated_database):
    """A database with engram's schema and no rows, for this test alone: what ENGRAM_DATABASE_URL would
    name. Shared by the session's tests one after another and emptied after each (see empty_tables)."""
    yield _pg_migrated_database
    postgres_server.empty_tables(_pg_migrated_database)


@pytest.fixture
async def two_stores(tmp_path):
    """Two stores on one SQLite file, standing in for two serving processes."""
    from engram.store import Store, database_path

    first = await Store.open(database_path(tmp_path))
    second = await Store.open(database_path(tmp_path))
    yield first, second
    await first.close()
    await second.close()
