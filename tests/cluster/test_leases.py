"""Leases and ownership against a real PostgreSQL (tests/support/postgres_server.py): one winner per space, expiry,
hand-over to a joining node, take-over from a dead one, and the write notification trigger."""

from __future__ import annotations

import asyncio
import time

import psycopg
import pytest

from engram.cluster import leases, rendezvous
from engram.cluster.listener import WRITE_CHANNEL
from engram.cluster.ownership import Ownership
from engram.errors import Unavailable
from engram.store.migrate import available_migrations
from engram.store.postgres.migrate import PACKAGE, apply_migrations, schema_version
from engram.store.postgres.store import PostgresStore
from engram.store.spaces import bump_generation, create_space, require_space

TIMEOUT_MS = 600  # short leases: expiry is awaited by polling, never by sleeping a fixed time
SPACES = [f"at://did:plc:u{i}/garden.engram.space/s{i}" for i in range(60)]


async def _connections(url: str):
    opened = []

    async def open_one() -> psycopg.AsyncConnection:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
        opened.append(conn)
        return conn

    yield open_one
    for conn in opened:
        await conn.close()


@pytest.fixture
async def connect(pg_database_url):
    """Connections to a database with the store's schema (the cluster tables are emptied after each test)."""
    async for open_one in _connections(pg_database_url):
        yield open_one


async def until(condition, bound_s: float = 30.0):
    """Poll an async condition until it holds; the bound only ends a test that would never pass."""
    deadline = time.monotonic() + bound_s
    while not await condition():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.05)


async def test_one_holder_per_space_and_epochs_grow_with_each_new_holder(connect):
    a, b = await connect(), await connect()
    space = SPACES[0]
    assert await leases.acquire(a, space, "a", TIMEOUT_MS) == 1
    assert await leases.acquire(b, space, "b", TIMEOUT_MS) is None  # a holds it
    assert await leases.acquire(a, space, "a", TIMEOUT_MS) == 1  # re-taking our own keeps the epoch

    async def expired():
        return not (await leases.lease_of(b, space)).valid

    await until(expired)
    assert await leases.acquire(b, space, "b", TIMEOUT_MS) == 2
    assert await leases.renew(a, "a", [space], TIMEOUT_MS) == set()  # a lost it
    assert await leases.renew(b, "b", [space], TIMEOUT_MS) == {space}
    await leases.release(b, "b", [space])
    assert await leases.acquire(a, space, "a", TIMEOUT_MS) == 3  # released: free at once


async def test_racing_nodes_get_exactly_one_winner(connect):
    conns = [await connect() for _ in range(4)]
    results = await asyncio.gather(
        *(leases.acquire(c, SPACES[1], f"n{i}", 60_000) for i, c in enumerate(conns))
    )
    assert sorted(r for r in results if r is not None) == [1]
    assert results.count(None) == 3


# What nodes ran at start-up before the cluster's tables were migration 0008 (docs/scale-out.md).
_OLD_START_UP_DDL = """
CREATE TABLE IF NOT EXISTS cluster_nodes (node_id TEXT PRIMARY KEY, url TEXT NOT NULL,
    started_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(), last_seen TIMESTAMPTZ NOT NULL);
CREATE TABLE IF NOT EXISTS space_leases (space TEXT PRIMARY KEY, owner TEXT NOT NULL, epoch BIGINT NOT NULL,
    acquired_at TIMESTAMPTZ NOT NULL, expires_at TIMESTAMPTZ NOT NULL);
CREATE INDEX IF NOT EXISTS space_leases_owner ON space_leases (owner);
CREATE OR REPLACE FUNCTION engram_notify_space_write() RETURNS trigger AS $$
BEGIN
    IF NEW.generation IS DISTINCT FROM OLD.generation THEN PERFORM pg_notify('engram_space_write', NEW.uri);
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS engram_space_write ON spaces;
CREATE TRIGGER engram_space_write AFTER UPDATE OF generation ON spaces
    FOR EACH ROW EXECUTE FUNCTION engram_notify_space_write();
"""


def test_a_database_whose_nodes_made_the_cluster_tables_at_start_up_migrates_in_place(pg_empty_database_url):
    cluster = next(v for v, name, _ in available_migrations(PACKAGE) if name == "0008_cluster.sql")
    with psycopg.connect(pg_empty_database_url, autocommit=True) as conn:
        schema_version(conn)  # creates the version table
        for version, _, sql in available_migrations(PACKAGE)[: cluster - 1]:  # the store before 0008
            conn.execute(sql.encode())
            conn.execute("DELETE FROM engram_schema")
            conn.execute("INSERT INTO engram_schema (version) VALUES (%s)", (version,))
        conn.execute(_OLD_START_UP_DDL.encode())
        conn.execute("INSERT INTO cluster_nodes (node_id, url, last_seen) VALUES ('a', 'http://a', now())")
        assert apply_migrations(conn) == len(available_migrations(PACKAGE)) - cluster + 1
        assert schema_version(conn) == len(available_migrations(PACKAGE))
        assert conn.execute("SELECT node_id FROM cluster_nodes").fetchall() == [("a",)]  # rows kept
        triggers = conn.execute(
            "SELECT tgname FROM pg_trigger WHERE tgrelid = 'spaces'::regclass AND NOT tgisinternal"
            " ORDER BY tgname"
        ).fetchall()
        # the cluster's write trigger once, beside 0010's change notification (docs/scale-out.md#point-reads)
        assert triggers == [("engram_space_write",), ("engram_spaces_changed",)]


def _fail_after_bumping(conn, uri):
    bump_generation(conn, require_space(conn, uri).id)
    raise RuntimeError("roll back")


def _bump(conn, uri):
    bump_generation(conn, require_space(conn, uri).id)


async def test_a_write_notifies_on_commit_and_a_rolled_back_one_never(pg_database_url, connect):
    x, y = "at://did:plc:a/space/garden.engram.space/x", "at://did:plc:b/space/garden.engram.space/y"
    store = await PostgresStore.open(pg_database_url)
    listener = await connect()
    try:
        await store.write(create_space, x, "hosted")
        await store.write(create_space, y, "hosted")
        await listener.execute(f"LISTEN {WRITE_CHANNEL}")
        with pytest.raises(RuntimeError):
            await store.write(_fail_after_bumping, y)
        await store.write(_bump, x)
        notes = listener.notifies(timeout=30, stop_after=1)
        payloads = [note.payload async for note in notes]
        assert payloads == [x]
    finally:
        await store.close()


async def _node(connect, node_id: str) -> Ownership:
    return Ownership(await connect(), node_id, f"http://{node_id}.test", TIMEOUT_MS * 50)


async def test_the_rendezvous_owner_serves_and_the_others_forward_to_it(connect):
    a, b = await _node(connect, "a"), await _node(connect, "b")
    await a.beat()
    await b.beat()
    await a.beat()
    for space in SPACES[:20]:
        owner = rendezvous.owner(space, ["a", "b"])
        first, second = (a, b) if owner == "a" else (b, a)
        other = second  # ask the non-owner first: it must not take the lease
        route = await other.route(space)
        assert route.url == f"http://{owner}.test" and not other.holds(space)
        assert (await first.route(space)).local and first.holds(space)
        assert (await other.route(space)).url == f"http://{owner}.test"
        with pytest.raises(
            Unavailable
        ) as refused:  # the loop guard: a forwarded request is not forwarded again
            await other.route(space, forwarded=True)
        assert refused.value.name == "NotOwner"


async def test_a_joining_node_gets_only_its_share_handed_over(connect):
    a, b = await _node(connect, "a"), await _node(connect, "b")
    await a.beat()
    await b.beat()
    await a.beat()
    for space in SPACES:
        owner = a if rendezvous.owner(space, ["a", "b"]) == "a" else b
        assert (await owner.route(space)).local
    released: list[str] = []
    a.events.released = b.events.released = released.append
    c = await _node(connect, "c")
    await c.beat()
    await a.beat()
    await b.beat()  # the old owners hand over what now hashes to c
    await c.beat()  # c takes over the released leases at once
    wanted_by_c = {s for s in SPACES if rendezvous.owner(s, ["a", "b", "c"]) == "c"}
    assert set(c.held) == wanted_by_c == set(released)
    assert 0.15 < len(wanted_by_c) / len(SPACES) < 0.55
    assert set(a.held) | set(b.held) == set(SPACES) - wanted_by_c
    for space in SPACES:
        holder = await leases.lease_of(c.conn, space)
        assert holder.owner == rendezvous.owner(space, ["a", "b", "c"]) and holder.valid


async def test_a_dead_nodes_spaces_move_after_the_lease_timeout(connect):
    a = Ownership(await connect(), "a", "http://a.test", TIMEOUT_MS)
    b = Ownership(await connect(), "b", "http://b.test", TIMEOUT_MS)
    await a.beat()
    await b.beat()
    a_spaces = [s for s in SPACES if rendezvous.owner(s, ["a", "b"]) == "a"]
    for space in a_spaces:
        assert (await a.route(space)).local
    lost: list[str] = []
    b.events.acquired = lambda space, epoch: lost.append(space)
    # a stops beating (killed); b keeps beating and takes a's spaces once a's leases lapse

    async def moved():
        await b.beat()
        return set(b.held) >= set(a_spaces)

    await until(moved)
    assert set(lost) >= set(a_spaces)
    assert "a" not in b.live
    for space in a_spaces:
        assert (await leases.lease_of(b.conn, space)).epoch == 2
    assert await leases.renew(a.conn, "a", a_spaces, TIMEOUT_MS) == set()  # a, if it woke up, holds nothing


async def test_a_clean_leave_frees_the_leases_at_once(connect):
    a, b = await _node(connect, "a"), await _node(connect, "b")
    await a.beat()
    await b.beat()
    mine = [s for s in SPACES[:10] if rendezvous.owner(s, ["a", "b"]) == "a"]
    for space in mine:
        await a.route(space)
    await a.leave()
    await b.beat()
    assert set(b.held) >= set(mine) and "a" not in b.live


async def test_a_space_the_store_does_not_know_is_answered_locally_and_leaves_no_lease(connect):
    async def exists(space: str) -> bool:
        return space != "at://did:plc:nobody/garden.engram.space/made-up"

    a = Ownership(await connect(), "a", "http://a.test", 60_000, exists=exists)
    b = Ownership(await connect(), "b", "http://b.test", 60_000, exists=exists)
    await a.beat()
    await b.beat()
    await a.beat()
    for node in (a, b):
        assert (await node.route("at://did:plc:nobody/garden.engram.space/made-up")).local
    assert await leases.all_leases(a.conn) == []
