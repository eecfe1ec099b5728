"""The authority's repo of each hosted space (docs/space-host.md): record writes, the oplog, signed heads.

Writers (memories.put_memories/delete_memories, spaces.set_config) call `put_record` / `delete_record` in
their own transaction; each change becomes an unsigned op. `commit_pending` runs on the writer thread at the
end of every write transaction, before COMMIT (`Store.before_commit`): it folds the unsigned ops of each
space into the repo's LtHash, signs one commit with the authority's key and stamps the ops with its rev.
So every acknowledged hosted write is in a signed commit, whichever writer made it.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

from engram.atrepo.blocks import cid_of_block
from engram.atrepo.commit import CommitContext, SignedCommit, sign_commit
from engram.atrepo.lthash import LtHash
from engram.atrepo.ops import RepoOp, apply_op
from engram.auth.crypto_keys import PrivateKey
from engram.store.dialect import pipelined
from engram.store.notify_registrations import Registration
from engram.store.prepared_memories import now_iso
from engram.store.tid import decode_tid, encode_tid, new_tid

CONFIG_COLLECTION = "garden.engram.config"
MEMORY_COLLECTION = "garden.engram.memory"


@dataclass(frozen=True)
class RepoHead:
    repo: str
    rev: str
    prev_rev: str | None
    state: bytes
    commit: SignedCommit


@dataclass(frozen=True)
class Committed:
    """A commit just signed (for write notifications, sent after the transaction commits)."""

    space_uri: str
    repo: str
    rev: str
    prev_rev: str | None
    hash: bytes
    # The space's live notification registrations, read in the committing transaction: the notifier then
    # needs no read per commit, and nothing at all for the (usual) space nobody registered for.
    registrations: tuple[Registration, ...] = ()


def record_cid(conn: sqlite3.Connection, space_id: int, collection: str, rkey: str) -> str | None:
    row = conn.execute(
        "SELECT cid FROM repo_records WHERE space_id = ? AND collection = ? AND rkey = ?",
        (space_id, collection, rkey),
    ).fetchone()
    return row[0] if row else None


def _op(
    conn: sqlite3.Connection, space_id: int, collection: str, rkey: str, cid: str | None, prev: str | None
) -> None:
    conn.execute(
        "INSERT INTO repo_ops (space_id, collection, rkey, cid, prev) VALUES (?, ?, ?, ?, ?)",
        (space_id, collection, rkey, cid, prev),
    )


def put_record(conn: sqlite3.Connection, space_id: int, collection: str, rkey: str, block: bytes) -> str:
    """Create or update a record from its DAG-CBOR bytes; returns its CID (no op if unchanged)."""
    return write_record(conn, space_id, collection, rkey, block, record_cid(conn, space_id, collection, rkey))


def write_record(
    conn: sqlite3.Connection, space_id: int, collection: str, rkey: str, block: bytes, prev: str | None
) -> str:
    """`put_record` for a caller that already read the record's current CID `prev` (a batch's writes read
    them all at once: engram/store/write_batch.py)."""
    cid = cid_of_block(block)
    if prev != cid:
        conn.execute(
            "INSERT INTO repo_records (space_id, collection, rkey, cid, block) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (space_id, collection, rkey) DO UPDATE SET cid = excluded.cid, block = excluded.block",
            (space_id, collection, rkey, cid, block),
        )
        _op(conn, space_id, collection, rkey, cid, prev)
    return cid


def delete_record(conn: sqlite3.Connection, space_id: int, collection: str, rkey: str) -> bool:
    prev = record_cid(conn, space_id, collection, rkey)
    if prev is None:
        return False
    conn.execute(
        "DELETE FROM repo_records WHERE space_id = ? AND collection = ? AND rkey = ?",
        (space_id, collection, rkey),
    )
    _op(conn, space_id, collection, rkey, None, prev)
    return True


def drop_repo(conn: sqlite3.Connection, space_id: int) -> None:
    """Forget a deleted space's repo entirely (its syncers learn of the deletion by other means)."""
    for table in ("repo_records", "repo_ops", "repo_heads"):
        conn.execute(f"DELETE FROM {table} WHERE space_id = ?", (space_id,))


def get_head(conn: sqlite3.Connection, space_id: int) -> RepoHead | None:
    row = conn.execute(
        "SELECT repo, rev, prev_rev, state, signed_commit FROM repo_heads WHERE space_id = ?", (space_id,)
    ).fetchone()
    if row is None:
        return None
    return RepoHead(row[0], row[1], row[2], bytes(row[3]), SignedCommit.from_cbor(bytes(row[4])))


def _next_rev(previous: str | None) -> str:
    """A fresh TID strictly after the previous head's rev (another process may have a clock ahead)."""
    rev = new_tid()
    if previous is not None and rev <= previous:
        micros, clock_id = decode_tid(previous)
        rev = encode_tid(micros + 1, clock_id)
    return rev


def commit_pending(conn: sqlite3.Connection, signer: Callable[[str], PrivateKey | None]) -> list[Committed]:
    """Sign one commit per hosted space with unsigned ops; `signer(authority)` is the authority's key, or
    None: engram cannot sign for that authority, so it keeps no repo for the space (nothing could verify
    it) and the records stay out; if the key is added later, the start-up backfill builds the repo.

    A group of writes (docs/internals.md#group-commit) may leave ops in many spaces: their ops, heads and
    live notification registrations are read in three statements for all of them, and the stamps and new heads are written without waiting
    for each answer (on PostgreSQL every statement is a round trip)."""
    ops: dict[int, list[tuple[str, str, str | None, str | None]]] = {}
    spaces: dict[int, tuple[str, str]] = {}
    # Both reads go out before either is fetched: one round trip when pipelined.
    with pipelined(conn):
        unsigned = conn.execute(
            "SELECT o.space_id, s.uri, s.authority, o.collection, o.rkey, o.cid, o.prev FROM repo_ops o"
            " JOIN spaces s ON s.id = o.space_id WHERE o.rev IS NULL ORDER BY o.space_id, o.seq"
        )
        heads_cursor = conn.execute(
            "SELECT space_id, rev, state FROM repo_heads WHERE space_id IN"
            " (SELECT DISTINCT space_id FROM repo_ops WHERE rev IS NULL)"
        )
        registrations_cursor = conn.execute(
            "SELECT space_id, service, endpoint, expires_at FROM notify_registrations WHERE space_id IN"
            " (SELECT DISTINCT space_id FROM repo_ops WHERE rev IS NULL) AND expires_at > ?"
            " ORDER BY space_id, service",
            (time.time(),),
        )
        for space_id, uri, authority, collection, rkey, cid, prev in unsigned.fetchall():
            spaces[space_id] = (uri, authority)
            ops.setdefault(space_id, []).append((collection, rkey, cid, prev))
        heads = {space_id: (rev, bytes(state)) for space_id, rev, state in heads_cursor.fetchall()}
        registrations: dict[int, list[Registration]] = {}
        for space_id, service, endpoint, expires_at in registrations_cursor.fetchall():
            registrations.setdefault(space_id, []).append(Registration(service, endpoint, expires_at))
    committed = []
    with pipelined(conn):
        for space_id, (uri, authority) in spaces.items():
            key = signer(authority)
            if key is None:
                drop_repo(conn, space_id)
                continue
            head = heads.get(space_id)
            state = LtHash(head[1]) if head else LtHash()
            for collection, rkey, cid, prev in ops[space_id]:
                apply_op(state, RepoOp("", collection, rkey, cid, prev))
            prev_rev = head[0] if head else None
            rev = _next_rev(prev_rev)
            digest = state.digest()
            commit = sign_commit(digest, CommitContext(uri, authority, rev), key)
            conn.execute("UPDATE repo_ops SET rev = ? WHERE space_id = ? AND rev IS NULL", (rev, space_id))
            conn.execute(
                "INSERT INTO repo_heads (space_id, repo, rev, prev_rev, state, signed_commit, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (space_id) DO UPDATE SET repo = excluded.repo,"
                " rev = excluded.rev, prev_rev = excluded.prev_rev, state = excluded.state,"
                " signed_commit = excluded.signed_commit, updated_at = excluded.updated_at",
                (space_id, authority, rev, prev_rev, state.state, commit.to_cbor(), now_iso()),
            )
            listeners = tuple(registrations.get(space_id, ()))
            committed.append(Committed(uri, authority, rev, prev_rev, digest, listeners))
    return committed
