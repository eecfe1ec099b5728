"""Space repository: plain functions over a connection (run them with `store.read` / `store.write`).

A deleted space keeps its row (soft delete) so its id and generation never restart; creating it again
revives that row with a bumped generation, so an index cached for the old incarnation can never match.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson

from engram.atrepo.blocks import encode_block
from engram.errors import InvalidInput, UnknownSpace
from engram.store import repo, skipped
from engram.store.models import ModelSpec, Space, SpaceConfig
from engram.store.prepared_memories import MAX_DIMS, now_iso
from engram.store.uris import parse_space_uri

KINDS = ("hosted", "synced")
COLUMNS = (
    "id, uri, authority, skey, kind, created_at, deleted_at, generation, model, model_digest, dims,"
    " document_prefix, query_prefix, next_model, next_model_digest, next_dims, config_json, config_updated_at"
)


def space_from_row(row: tuple[Any, ...]) -> Space:
    # fmt: off
    (id_, uri, authority, skey, kind, created_at, deleted_at, generation, model, digest, dims,
     document_prefix, query_prefix, next_model, next_digest, next_dims, config_json, config_updated_at) = row
    # fmt: on
    config = None
    if model is not None:
        config = SpaceConfig(
            active=ModelSpec(model, digest, dims),
            document_prefix=document_prefix or "",
            query_prefix=query_prefix or "",
            next=ModelSpec(next_model, next_digest, next_dims) if next_model is not None else None,
            updated_at=config_updated_at,
            record=orjson.loads(config_json) if config_json else None,
        )
    return Space(id_, uri, authority, skey, kind, created_at, deleted_at, generation, config)


def get_space(conn: sqlite3.Connection, uri: str) -> Space | None:
    """The space (deleted ones too: check `.deleted`), or None if never seen."""
    row = conn.execute(f"SELECT {COLUMNS} FROM spaces WHERE uri = ?", (uri,)).fetchone()
    return space_from_row(row) if row else None


def require_space(conn: sqlite3.Connection, uri: str) -> Space:
    """The live space, or `UnknownSpace` (unknown or deleted)."""
    space = get_space(conn, uri)
    if space is None or space.deleted:
        raise UnknownSpace(f"unknown space: {uri}")
    return space


def list_spaces(conn: sqlite3.Connection, include_deleted: bool = False) -> list[Space]:
    where = "" if include_deleted else " WHERE deleted_at IS NULL"
    return [space_from_row(row) for row in conn.execute(f"SELECT {COLUMNS} FROM spaces{where} ORDER BY uri")]


def bump_generation(conn: sqlite3.Connection, space_id: int) -> int:
    return int(
        conn.execute(
            "UPDATE spaces SET generation = generation + 1 WHERE id = ? RETURNING generation", (space_id,)
        ).fetchone()[0]
    )


def create_space(conn: sqlite3.Connection, uri: str, kind: str) -> Space:
    """Create (or revive a deleted) space; `InvalidInput("SpaceExists")` if it is live."""
    try:
        authority, skey = parse_space_uri(uri)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
    if kind not in KINDS:
        raise InvalidInput(f"space kind must be one of {KINDS}, got {kind!r}")
    existing = get_space(conn, uri)
    if existing is not None and not existing.deleted:
        raise InvalidInput(f"space already exists: {uri}", "SpaceExists")
    if existing is None:
        conn.execute(
            "INSERT INTO spaces (uri, authority, skey, kind, created_at) VALUES (?, ?, ?, ?, ?)",
            (uri, authority, skey, kind, now_iso()),
        )
    else:
        conn.execute(
            "UPDATE spaces SET kind = ?, created_at = ?, deleted_at = NULL, generation = generation + 1,"
            " model = NULL, model_digest = NULL, dims = NULL, document_prefix = NULL, query_prefix = NULL,"
            " next_model = NULL, next_model_digest = NULL, next_dims = NULL, config_json = NULL,"
            " config_updated_at = NULL WHERE id = ?",
            (kind, now_iso(), existing.id),
        )
    return require_space(conn, uri)


def _check_model(spec: ModelSpec, what: str) -> None:
    if not (isinstance(spec.model, str) and 0 < len(spec.model) <= 256):
        raise InvalidInput(f"{what}.model must be a non-empty string of at most 256 characters")
    if not (isinstance(spec.digest, str) and 0 < len(spec.digest) <= 256):
        raise InvalidInput(f"{what}.modelDigest must be a non-empty string of at most 256 characters")
    if not (isinstance(spec.dims, int) and 1 <= spec.dims <= MAX_DIMS):
        raise InvalidInput(f"{what}.dims must be an integer in 1..{MAX_DIMS}")


def set_config(
    conn: sqlite3.Connection,
    uri: str,
    active: ModelSpec,
    *,
    document_prefix: str = "",
    query_prefix: str = "",
    next: ModelSpec | None = None,
    record: dict[str, Any] | None = None,
) -> Space:
    """Replace the space's config, bump its generation and recompute its skipped list.

    A no-op when nothing changed. `record` is the config record as seen (synced spaces); without it one is
    built from the fields."""
    space = require_space(conn, uri)
    _check_model(active, "config")
    if next is not None:
        _check_model(next, "config.next")
    for name, prefix in (("documentPrefix", document_prefix), ("queryPrefix", query_prefix)):
        if not isinstance(prefix, str) or len(prefix) > 200:
            raise InvalidInput(f"{name} must be a string of at most 200 characters")
    old = space.config
    unchanged = old is not None and (old.active, old.next, old.document_prefix, old.query_prefix) == (
        active,
        next,
        document_prefix,
        query_prefix,
    )
    if old is not None and unchanged and (record is None or record == old.record):
        return space  # a re-sync of the same config: no generation bump, no recompute
    now = now_iso()
    if record is None:
        record = {
            "$type": "garden.engram.config",
            "model": active.model,
            "modelDigest": active.digest,
            "dims": active.dims,
            "documentPrefix": document_prefix,
            "queryPrefix": query_prefix,
            "createdAt": now,
        }
        if next is not None:
            record["next"] = {"model": next.model, "modelDigest": next.digest, "dims": next.dims}
    conn.execute(
        "UPDATE spaces SET model = ?, model_digest = ?, dims = ?, document_prefix = ?, query_prefix = ?,"
        " next_model = ?, next_model_digest = ?, next_dims = ?, config_json = ?, config_updated_at = ?,"
        " generation = generation + 1 WHERE id = ?",
        (
            active.model,
            active.digest,
            active.dims,
            document_prefix,
            query_prefix,
            next.model if next else None,
            next.digest if next else None,
            next.dims if next else None,
            orjson.dumps(record).decode(),
            now,
            space.id,
        ),
    )
    skipped.recompute(conn, space.id, active.key)
    if space.kind == "hosted":  # the authority's config record, in its repo (docs/space-host.md)
        repo.put_record(conn, space.id, repo.CONFIG_COLLECTION, "self", encode_block(record))
    return require_space(conn, uri)


def delete_space(conn: sqlite3.Connection, uri: str) -> bool:
    """Soft-delete: mark deleted, purge its memories and per-space state, revoke its API keys.

    Returns False if the space was unknown or already deleted."""
    space = get_space(conn, uri)
    if space is None or space.deleted:
        return False
    now = now_iso()
    for table in (
        "memories",
        "tombstones",
        "skipped",
        "sync_state",
        "import_keys",
        "space_members",
        "notify_registrations",
        "issued_credentials",
        "revoked_credentials",
        "hosted_writers",
        "documents",
    ):
        conn.execute(f"DELETE FROM {table} WHERE space_id = ?", (space.id,))
    conn.execute(
        "UPDATE api_keys SET revoked_at = ? WHERE space_id = ? AND revoked_at IS NULL", (now, space.id)
    )
    repo.drop_repo(conn, space.id)
    conn.execute(
        "UPDATE spaces SET deleted_at = ?, generation = generation + 1 WHERE id = ?", (now, space.id)
    )
    return True
