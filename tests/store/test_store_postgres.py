"""What only the PostgreSQL backend has: its migration twins, the placeholder translator, the advisory
write lock between processes, read-only readers, and refusing to acknowledge a silently aborted write."""

import asyncio
import contextlib
import sqlite3

import psycopg
import pytest

from engram.store import Store, database_path
from engram.store.migrate import available_migrations
from engram.store.postgres.migrate import PACKAGE, apply_migrations, schema_version
from engram.store.postgres.store import PostgresStore
from engram.store.postgres.translate import adapt_params, translate


def _columns_sqlite(tmp_path) -> dict[str, set[str]]:
    conn = sqlite3.connect(database_path(tmp_path))
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    columns = {
        t: {r[1] for r in conn.execute(f"PRAGMA table_info({t})")}
        for t in tables
        if not t.startswith("sqlite_")
    }
    conn.close()
    return columns


POSTGRES_ONLY = {"cluster_nodes", "space_leases"}


def test_both_migration_sets_have_the_same_numbered_files():
    """A new SQLite migration needs its PostgreSQL twin under the same number and name (and vice versa)."""
    sqlite_set = [(version, name) for version, name, _ in available_migrations()]
    postgres_set = [(version, name) for version, name, _ in available_migrations(PACKAGE)]
    assert sqlite_set == postgres_set


async def test_both_backends_get_the_same_tables_and_columns(tmp_path, pg_empty_database_url):
    await (await Store.open(database_path(tmp_path))).close()
    await (await PostgresStore.open(pg_empty_database_url)).close()
    with psycopg.connect(pg_empty_database_url) as conn:
        rows = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'"
            " AND table_name <> 'engram_schema'"
        ).fetchall()
        version = schema_version(conn)
    postgres: dict[str, set[str]] = {}
    for table, column in rows:
        postgres.setdefault(table, set()).add(column)
    # Cluster mode needs PostgreSQL: its tables are in the PostgreSQL set only (0008, a no-op on SQLite).
    assert set(postgres) - set(_columns_sqlite(tmp_path)) == POSTGRES_ONLY
    assert {t: c for t, c in postgres.items() if t not in POSTGRES_ONLY} == _columns_sqlite(tmp_path)
    assert version == len(available_migrations())


def test_migrations_apply_once_when_several_processes_start_together(pg_empty_database_url):
    def run() -> int:
        with psycopg.connect(pg_empty_database_url, autocommit=True) as conn:
            return apply_migrations(conn)

    async def together() -> list[int]:
        return await asyncio.gather(*(asyncio.to_thread(run) for _ in range(3)))

    applied = asyncio.run(together())
    assert sum(applied) == len(available_migrations())  # each migration by exactly one of them
    with psycopg.connect(pg_empty_database_url) as conn:
        assert schema_version(conn) == len(available_migrations())


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT a FROM t WHERE b = ? AND c = ?", "SELECT a FROM t WHERE b = %s AND c = %s"),
        ("SELECT '?', \"x?\" FROM t WHERE b = ?", "SELECT '?', \"x?\" FROM t WHERE b = %s"),
        ("SELECT 'it''s ?' || ? -- why?\n", "SELECT 'it''s ?' || %s -- why?\n"),
        ("SELECT '50%' FROM t WHERE b LIKE ?", "SELECT '50%%' FROM t WHERE b LIKE %s"),
        ("SELECT x FROM memories INDEXED BY memories_by_space WHERE y = ?", "SELECT x FROM memories WHERE y = %s"),
        ("CASE WHEN k = ?1 THEN v END WHERE s = ?2 AND k = ?1", "CASE WHEN k = %(p1)s THEN v END WHERE s = %(p2)s AND k = %(p1)s"),
    ],
)  # fmt: skip
def test_translate_placeholders_literals_and_hints(sql, expected):
    assert translate(sql)[0] == expected


def test_numbered_parameters_go_by_name_and_booleans_as_integers():
    assert adapt_params(["k", 7], numbered=True) == {"p1": "k", "p2": 7}
    assert adapt_params([True, False, 1, None], numbered=False) == [1, 0, 1, None]


def _create_counter(conn):
    conn.execute("CREATE TABLE IF NOT EXISTS counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
    conn.execute("INSERT INTO counter (id, n) VALUES (1, 0) ON CONFLICT DO NOTHING")


def _increment(conn):
    n = conn.execute("SELECT n FROM counter WHERE id = 1").fetchone()[0]  # read-modify-write
    conn.execute("UPDATE counter SET n = ? WHERE id = 1", (n + 1,))


async def test_two_stores_on_one_database_take_turns(pg_database_url):
    """Two processes (here two stores, each with its own writer connection) serialize on the advisory
    write lock, so read-modify-write transactions lose no update, as SQLite's BEGIN IMMEDIATE ensures."""
    first, second = await PostgresStore.open(pg_database_url), await PostgresStore.open(pg_database_url)
    try:
        await first.write(_create_counter)
        await asyncio.gather(*(s.write(_increment) for _ in range(40) for s in (first, second)))
        assert await first.read(lambda c: c.execute("SELECT n FROM counter").fetchone()[0]) == 80
    finally:
        await first.close()
        await second.close()


async def test_direct_readers_are_read_only_and_see_commits(pg_database_url):
    store = await PostgresStore.open(pg_database_url)
    try:
        await store.write(_create_counter)
        await store.write(_increment)
        # Direct readers run on the calling thread: here a worker thread, as hit hydration does.
        count = await asyncio.to_thread(
            store.readers.statement, lambda c: c.execute("SELECT n FROM counter").fetchone()[0]
        )
        assert count == 1
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            await asyncio.to_thread(store.readers.run, _increment)
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            await asyncio.to_thread(store.readers.statement, _increment)
    finally:
        await store.close()


async def test_a_write_whose_error_was_swallowed_is_not_acknowledged(pg_database_url):
    """PostgreSQL turns COMMIT of an aborted transaction into a silent ROLLBACK; the store must raise. (The
    write reads the failing statement's answer, so the error is raised inside it, in pipeline mode too.)"""
    store = await PostgresStore.open(pg_database_url)
    try:
        await store.write(_create_counter)

        def increment_then_swallow_an_error(conn):
            _increment(conn)
            with contextlib.suppress(psycopg.errors.UndefinedTable):
                conn.execute("SELECT * FROM no_such_table").fetchall()

        with pytest.raises(RuntimeError, match="rolled back"):
            await store.write(increment_then_swallow_an_error)
        assert await store.read(lambda c: c.execute("SELECT n FROM counter").fetchone()[0]) == 0
        await store.write(_increment)  # the writer carries on
        assert await store.read(lambda c: c.execute("SELECT n FROM counter").fetchone()[0]) == 1
    finally:
        await store.close()


async def test_the_writer_reconnects_after_its_connection_is_lost(pg_database_url):
    store = await PostgresStore.open(pg_database_url)
    try:
        await store.write(_create_counter)
        with psycopg.connect(pg_database_url, autocommit=True) as admin:  # what a server restart does
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        with pytest.raises(psycopg.OperationalError):
            await store.write(_increment)  # the write in flight fails loudly, nothing is acknowledged
        await store.write(_increment)
        assert await store.read(lambda c: c.execute("SELECT n FROM counter").fetchone()[0]) == 1
    finally:
        await store.close()


async def test_text_orders_by_bytes_on_both_backends(store):
    """Cursors over URIs and rkeys rely on one order: byte order (SQLite's BINARY, COLLATE "C" on
    PostgreSQL), whatever the database's locale would say about case and punctuation."""
    from engram.store.spaces import create_space, list_spaces

    names = ["b", "B", "a-c", "ab", "a_c", "Z9", "z"]
    for name in names:
        await store.write(create_space, f"at://did:plc:authority1/space/garden.engram.space/{name}", "hosted")
    listed = [space.skey for space in await store.read(list_spaces)]
    assert listed == sorted(names, key=str.encode)
