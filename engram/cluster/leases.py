"""The SQL of nodes and leases: plain async functions over one autocommit psycopg connection.

Each statement is one atomic transaction, and every time comparison uses the database's clock
(`clock_timestamp()`), so two nodes racing for the same space get one winner and nodes need not agree on
the time. The rules (docs/scale-out.md#nodes-and-ownership):
- a node is live while its `last_seen` is younger than the lease timeout;
- a lease can be taken when it is free or expired; taking it from another node bumps the epoch;
- renewing extends only leases the node still holds; whatever it asked for and did not get back is lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg


@dataclass(frozen=True)
class Node:
    node_id: str
    url: str
    last_seen: datetime
    live: bool


@dataclass(frozen=True)
class Lease:
    space: str
    owner: str
    epoch: int
    expires_at: datetime
    valid: bool  # not expired, by the database's clock


def _ms(timeout_ms: int) -> str:
    return f"{int(timeout_ms)} milliseconds"


async def heartbeat(conn: psycopg.AsyncConnection, node_id: str, url: str) -> None:
    await conn.execute(
        "INSERT INTO cluster_nodes (node_id, url, last_seen) VALUES (%s, %s, clock_timestamp())"
        " ON CONFLICT (node_id) DO UPDATE SET url = EXCLUDED.url, last_seen = EXCLUDED.last_seen",
        (node_id, url),
    )


async def nodes(conn: psycopg.AsyncConnection, timeout_ms: int) -> list[Node]:
    """Every registered node, live or not, by id."""
    cur = await conn.execute(
        "SELECT node_id, url, last_seen, last_seen > clock_timestamp() - %s::interval"
        " FROM cluster_nodes ORDER BY node_id",
        (_ms(timeout_ms),),
    )
    return [Node(*row) for row in await cur.fetchall()]


async def forget_node(conn: psycopg.AsyncConnection, node_id: str) -> None:
    """A node shutting down cleanly: drop its row and expire its leases so peers take over at once."""
    await conn.execute(
        "UPDATE space_leases SET expires_at = clock_timestamp() WHERE owner = %s AND expires_at > clock_timestamp()",
        (node_id,),
    )
    await conn.execute("DELETE FROM cluster_nodes WHERE node_id = %s", (node_id,))


async def acquire(conn: psycopg.AsyncConnection, space: str, node_id: str, timeout_ms: int) -> int | None:
    """Take the lease of `space` if it is free, expired or already ours; returns its epoch, or None when
    another node holds a valid lease. Re-taking our own lease keeps its epoch (nobody else held it since)."""
    cur = await conn.execute(
        "INSERT INTO space_leases (space, owner, epoch, acquired_at, expires_at)"
        " VALUES (%(space)s, %(node)s, 1, clock_timestamp(), clock_timestamp() + %(ttl)s::interval)"
        " ON CONFLICT (space) DO UPDATE SET owner = EXCLUDED.owner,"
        "   epoch = space_leases.epoch + (space_leases.owner <> EXCLUDED.owner)::int,"
        "   acquired_at = CASE WHEN space_leases.owner = EXCLUDED.owner THEN space_leases.acquired_at"
        "                      ELSE EXCLUDED.acquired_at END,"
        "   expires_at = EXCLUDED.expires_at"
        " WHERE space_leases.owner = EXCLUDED.owner OR space_leases.expires_at <= clock_timestamp()"
        " RETURNING epoch",
        {"space": space, "node": node_id, "ttl": _ms(timeout_ms)},
    )
    row = await cur.fetchone()
    return int(row[0]) if row else None


async def renew(conn: psycopg.AsyncConnection, node_id: str, spaces: list[str], timeout_ms: int) -> set[str]:
    """Extend the leases of `spaces` this node still holds; returns those it holds. The rest were taken over
    after they expired: they are lost."""
    if not spaces:
        return set()
    cur = await conn.execute(
        "UPDATE space_leases SET expires_at = clock_timestamp() + %s::interval"
        " WHERE owner = %s AND space = ANY(%s) RETURNING space",
        (_ms(timeout_ms), node_id, spaces),
    )
    return {row[0] for row in await cur.fetchall()}


async def release(conn: psycopg.AsyncConnection, node_id: str, spaces: list[str]) -> None:
    """Hand `spaces` over: their leases expire now (rows and epochs stay), so their new owner can take them."""
    if spaces:
        await conn.execute(
            "UPDATE space_leases SET expires_at = clock_timestamp() WHERE owner = %s AND space = ANY(%s)",
            (node_id, spaces),
        )


async def lease_of(conn: psycopg.AsyncConnection, space: str) -> Lease | None:
    cur = await conn.execute(
        "SELECT space, owner, epoch, expires_at, expires_at > clock_timestamp() FROM space_leases WHERE space = %s",
        (space,),
    )
    row = await cur.fetchone()
    return Lease(*row) if row else None


async def all_leases(conn: psycopg.AsyncConnection) -> list[Lease]:
    cur = await conn.execute(
        "SELECT space, owner, epoch, expires_at, expires_at > clock_timestamp() FROM space_leases ORDER BY space"
    )
    return [Lease(*row) for row in await cur.fetchall()]


async def expired_spaces(conn: psycopg.AsyncConnection) -> list[str]:
    """Spaces whose lease lapsed (their holder died or handed them over): candidates to take over now."""
    cur = await conn.execute("SELECT space FROM space_leases WHERE expires_at <= clock_timestamp()")
    return [row[0] for row in await cur.fetchall()]
