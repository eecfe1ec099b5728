import sqlite3

import pytest

from engram.store import Store, database_path
from engram.store.database import DB_FILE_NAME
from engram.store.migrate import apply_migrations, available_migrations, schema_version, split_statements

EXPECTED_TABLES = {
    "spaces",
    "memories",
    "memory_tags",
    "tombstones",
    "skipped",
    "api_keys",
    "sync_state",
    "import_keys",
}


def test_migrations_are_numbered_and_split_cleanly():
    migrations = available_migrations()
    assert [version for version, _, _ in migrations] == list(range(1, len(migrations) + 1))
    for _, _, sql in migrations:
        statements = split_statements(sql)
        assert statements and all(sqlite3.complete_statement(s) for s in statements)
        assert not any(s.upper().startswith(("BEGIN", "COMMIT")) for s in statements)


def test_fresh_database_gets_every_table_and_version(tmp_path):
    conn = sqlite3.connect(tmp_path / "x.sqlite3", isolation_level=None)
    assert apply_migrations(conn) == len(available_migrations())
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables >= EXPECTED_TABLES
    assert schema_version(conn) == len(available_migrations())
    assert apply_migrations(conn) == 0  # idempotent: nothing left to apply
    conn.close()


def test_failed_migration_leaves_no_trace(tmp_path):
    conn = sqlite3.connect(tmp_path / "x.sqlite3", isolation_level=None)
    conn.execute("CREATE TABLE spaces (x)")  # makes 0001's CREATE TABLE spaces fail midway
    with pytest.raises(RuntimeError, match="0001_init.sql"):
        apply_migrations(conn)
    assert schema_version(conn) == 0
    assert not conn.in_transaction
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"spaces"}
    conn.close()


def test_newer_schema_is_refused(tmp_path):
    conn = sqlite3.connect(tmp_path / "x.sqlite3", isolation_level=None)
    apply_migrations(conn)
    conn.execute("PRAGMA user_version = 999")
    with pytest.raises(RuntimeError, match="newer"):
        apply_migrations(conn)
    conn.close()


def test_split_statements_keeps_semicolons_inside_strings_and_comments():
    sql = (
        "-- a; comment\nCREATE TABLE t (x TEXT DEFAULT 'a;b');\n"
        "INSERT INTO t VALUES ('c;\nd');\n-- trailing\n"
    )
    assert split_statements(sql) == [
        "-- a; comment\nCREATE TABLE t (x TEXT DEFAULT 'a;b');",
        "INSERT INTO t VALUES ('c;\nd');",
    ]
    with pytest.raises(ValueError):
        split_statements("CREATE TABLE t (x")


async def test_store_open_sets_pragmas_and_reopen_is_idempotent(tmp_path):
    data_dir = tmp_path / "fresh" / "engram-data"  # created on first open
    store = await Store.open(database_path(data_dir))
    await store.close()
    store = await Store.open(database_path(data_dir))
    try:

        def pragmas(conn):
            return {
                name: conn.execute(f"PRAGMA {name}").fetchone()[0]
                for name in (
                    "journal_mode",
                    "synchronous",
                    "foreign_keys",
                    "busy_timeout",
                    "query_only",
                    "user_version",
                )
            }

        written = await store.write(pragmas)
        read = await store.read(pragmas)
    finally:
        await store.close()
    assert (data_dir / DB_FILE_NAME).exists()
    expected = {
        "journal_mode": "wal",
        "synchronous": 2,
        "foreign_keys": 1,
        "busy_timeout": 5000,
        "user_version": len(available_migrations()),
    }
    assert written == {**expected, "query_only": 0}
    assert read == {**expected, "query_only": 1}


async def test_opening_a_directory_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="database_path"):
        await Store.open(tmp_path)


def test_0009_drops_the_keyword_fts_table_and_keeps_the_memories(tmp_path):
    """A file made before 0009 has the FTS5 table and its triggers; upgrading drops all three, and the
    memories written before it stay readable and deletable (no trigger refers to a missing table)."""
    conn = sqlite3.connect(tmp_path / "x.sqlite3", isolation_level=None)
    for version, _, sql in available_migrations():
        if version < 9:
            for statement in split_statements(sql):
                conn.execute(statement)
    conn.execute("PRAGMA user_version = 8")
    conn.execute(
        "INSERT INTO spaces (uri, authority, skey, kind, created_at)"
        " VALUES ('at://did:plc:a/space/garden.engram.space/s', 'did:plc:a', 's', 'hosted', 'now')"
    )
    for n in (1, 2):
        conn.execute(
            "INSERT INTO memories (space_id, author, rkey, uri, cid, text, tags, created_at, created_ms,"
            " indexed_at) VALUES (1, 'did:plc:a', ?, ?, 'c', 'hello words', '[]', 'now', 0, 'now')",
            (f"r{n}", f"at://m/{n}"),
        )
    assert conn.execute("SELECT count(*) FROM memories_fts").fetchone()[0] == 2

    assert apply_migrations(conn) == len(available_migrations()) - 8
    objects = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    assert not {n for n in objects if "fts" in n}
    conn.execute("DELETE FROM memories WHERE rkey = 'r1'")
    assert [r for (r,) in conn.execute("SELECT rkey FROM memories")] == ["r2"]
    conn.close()
