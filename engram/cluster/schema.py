"""The cluster's own tables in PostgreSQL, created idempotently when a node starts.

`cluster_nodes`: one row per node (its URL and the time of its last heartbeat). `space_leases`: one row per
space ever served, naming the node that holds it, an `epoch` bumped on every change of holder (the fencing
token: a node that lost a lease and did not notice yet holds an older epoch) and when the lease expires.
A released or expired lease keeps its row so epochs only grow. All times are the database's clock, so
nodes with skewed clocks still agree on who is live.

The statements are idempotent (IF NOT EXISTS, OR REPLACE) so every node can run them at start-up, racing
with its peers, under an advisory lock.

The write trigger: every committed change of a space's `generation` (the store bumps it on each write
batch, delete or config change) sends `NOTIFY engram_space_write, '<space uri>'` from inside the writing
transaction, so PostgreSQL delivers it exactly when the write commits and never for a rolled-back one. It is
installed only when the store's `spaces` table exists (a PostgreSQL store); the owner LISTENs for it to
catch its index up (engram/cluster/listener.py).
"""

from __future__ import annotations

import psycopg

WRITE_CHANNEL = "engram_space_write"
_LOCK_KEY = 0x656E6772616D  # "engram": serialises concurrent start-ups running this DDL

TABLES = """
CREATE TABLE IF NOT EXISTS cluster_nodes (
    node_id    TEXT PRIMARY KEY,
    url        TEXT NOT NULL,
    started_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    last_seen  TIMESTAMPTZ NOT NULL
);
CREATE TABLE IF NOT EXISTS space_leases (
    space       TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    epoch       BIGINT NOT NULL,
    acquired_at TIMESTAMPTZ NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS space_leases_owner ON space_leases (owner);
"""

WRITE_TRIGGER = f"""
CREATE OR REPLACE FUNCTION engram_notify_space_write() RETURNS trigger AS $$
BEGIN
    IF NEW.generation IS DISTINCT FROM OLD.generation THEN
        PERFORM pg_notify('{WRITE_CHANNEL}', NEW.uri);
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS engram_space_write ON spaces;
CREATE TRIGGER engram_space_write AFTER UPDATE OF generation ON spaces
    FOR EACH ROW EXECUTE FUNCTION engram_notify_space_write();
"""


async def ensure_schema(conn: psycopg.AsyncConnection) -> bool:
    """Create the tables (and the write trigger when the store's tables exist). Returns whether the trigger
    is installed. `conn` is in autocommit mode; this runs in one transaction of its own."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        await conn.execute(TABLES)
        cur = await conn.execute("SELECT to_regclass('spaces') IS NOT NULL")
        has_spaces = bool((await cur.fetchone())[0])
        if has_spaces:
            await conn.execute(WRITE_TRIGGER)
    return has_spaces
