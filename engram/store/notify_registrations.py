"""Syncers registered for write notifications of hosted spaces (docs/space-host.md). Plain functions over a
connection."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from engram.errors import InvalidInput


@dataclass(frozen=True)
class Registration:
    service: str  # DID#fragment: the audience of the notifications' service-auth JWTs
    endpoint: str
    expires_at: float


# Live registrations a space takes: any reader may register, and each one is a delivery per commit
MAX_PER_SPACE = 64


def register(
    conn: sqlite3.Connection, space_id: int, service: str, endpoint: str, expires_at: float, now: float
) -> None:
    """Register or renew; InvalidInput when the space already holds MAX_PER_SPACE other live ones."""
    others = conn.execute(
        "SELECT COUNT(*) FROM notify_registrations WHERE space_id = ? AND service <> ? AND expires_at > ?",
        (space_id, service, now),
    ).fetchone()[0]
    if others >= MAX_PER_SPACE:
        raise InvalidInput(f"this space already has {MAX_PER_SPACE} registered syncers; unregister one first")
    conn.execute(
        "INSERT INTO notify_registrations (space_id, service, endpoint, expires_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (space_id, service) DO UPDATE SET endpoint = excluded.endpoint,"
        " expires_at = excluded.expires_at",
        (space_id, service, endpoint, expires_at),
    )


def unregister(conn: sqlite3.Connection, space_id: int, service: str) -> bool:
    return (
        conn.execute(
            "DELETE FROM notify_registrations WHERE space_id = ? AND service = ?", (space_id, service)
        ).rowcount
        == 1
    )


def live_registrations(conn: sqlite3.Connection, space_uri: str, now: float) -> list[Registration]:
    rows = conn.execute(
        "SELECT r.service, r.endpoint, r.expires_at FROM notify_registrations r JOIN spaces s ON s.id = r.space_id"
        " WHERE s.uri = ? AND r.expires_at > ? ORDER BY r.service",
        (space_uri, now),
    ).fetchall()
    return [Registration(*row) for row in rows]
