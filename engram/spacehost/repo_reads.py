"""Reading the authority's repo of a hosted space (docs/space-host.md): records, the oplog, the signed
head, the CAR export and the space's writer list. The writes happen in the store (engram/store/repo.py)."""

from __future__ import annotations

import sqlite3
from typing import Any

from ..atrepo.blocks import b64encode, decode_block, to_json
from ..atrepo.car import RepoRecord, write_repo_car
from ..errors import InvalidInput
from ..store import hosted_writers as store_writers
from ..store import repo as store_repo
from ..store.models import Space

MAX_CURSOR = 2**63 - 1


def record_uri(space: Space, repo: str, collection: str, rkey: str) -> str:
    return f"{space.uri}/{repo}/{collection}/{rkey}"


def _value(block: bytes) -> Any:
    return to_json(decode_block(bytes(block)))


def _head_or_missing(conn: sqlite3.Connection, space: Space, repo: str) -> store_repo.RepoHead:
    head = store_repo.get_head(conn, space.id)
    if head is None or head.repo != repo:
        raise InvalidInput(f"no repo of {repo} in {space.uri}", "RepoNotFound")
    return head


def get_record(conn: sqlite3.Connection, space: Space, repo: str, collection: str, rkey: str) -> dict:
    _head_or_missing(conn, space, repo)
    row = conn.execute(
        "SELECT cid, block FROM repo_records WHERE space_id = ? AND collection = ? AND rkey = ?",
        (space.id, collection, rkey),
    ).fetchone()
    if row is None:
        raise InvalidInput(f"no record {collection}/{rkey} in {repo}'s repo", "RecordNotFound")
    return {"uri": record_uri(space, repo, collection, rkey), "cid": row[0], "value": _value(row[1])}


def _record_cursor(cursor: str, collection: str | None) -> tuple[str, str]:
    """The (collection, rkey) a page starts after. A cursor is ``{collection}/{rkey}`` (neither may hold a
    slash); within one collection a bare rkey is accepted too, the form engram answered before."""
    coll, sep, rkey = cursor.rpartition("/")
    if not sep:
        if collection is None:
            raise InvalidInput("bad cursor: expected {collection}/{rkey}", "InvalidRequest")
        coll, rkey = collection, cursor
    return coll, rkey


def list_records(
    conn: sqlite3.Connection,
    space: Space,
    repo: str,
    collection: str | None,
    *,
    limit: int,
    cursor: str | None,
    exclude_values: bool,
    reverse: bool = False,
) -> dict:
    """Records of one collection, or of every collection when ``collection`` is None (the reference makes
    it optional), in (collection, rkey) order, descending with ``reverse``."""
    _head_or_missing(conn, space, repo)
    op, order = ("<", "DESC") if reverse else (">", "ASC")
    where, args = "space_id = ?", list[object]([space.id])
    if collection is not None:
        where, args = where + " AND collection = ?", [*args, collection]
    if cursor is not None:
        where, args = (
            where + f" AND (collection, rkey) {op} (?, ?)",
            [*args, *_record_cursor(cursor, collection)],
        )
    rows = conn.execute(
        f"SELECT collection, rkey, cid, block FROM repo_records WHERE {where}"
        f" ORDER BY collection {order}, rkey {order} LIMIT ?",
        (*args, limit),
    ).fetchall()
    records = []
    for coll, rkey, cid, block in rows:
        view = {"uri": record_uri(space, repo, coll, rkey), "collection": coll, "rkey": rkey, "cid": cid}
        if not exclude_values:
            view["value"] = _value(block)
        records.append(view)
    out: dict = {"records": records}
    if len(rows) == limit:
        out["cursor"] = f"{rows[-1][0]}/{rows[-1][1]}"
    return out


def latest_commit(conn: sqlite3.Connection, space: Space, repo: str) -> dict:
    return {"commit": _head_or_missing(conn, space, repo).commit.to_json()}


def _seq_cursor(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit() or int(cursor) > MAX_CURSOR:
        raise InvalidInput("bad cursor", "InvalidRequest")
    return int(cursor)


def list_repo_ops(
    conn: sqlite3.Connection,
    space: Space,
    repo: str,
    *,
    since: str | None,
    limit: int,
    cursor: str | None,
    exclude_values: bool,
) -> dict:
    """Signed ops after ``cursor`` (wins) or after rev ``since``, oldest first. The page that reaches the
    head carries the head commit, so a syncer folding these ops can check its LtHash against it."""
    head = _head_or_missing(conn, space, repo)
    after_seq = _seq_cursor(cursor)
    rev_floor = since if cursor is None and since is not None else ""
    rows = conn.execute(
        "SELECT o.seq, o.rev, o.collection, o.rkey, o.cid, o.prev, r.block FROM repo_ops o"
        " LEFT JOIN repo_records r ON r.space_id = o.space_id AND r.collection = o.collection"
        " AND r.rkey = o.rkey AND r.cid = o.cid"
        " WHERE o.space_id = ? AND o.rev IS NOT NULL AND o.seq > ? AND o.rev > ? ORDER BY o.seq LIMIT ?",
        (space.id, after_seq, rev_floor, limit + 1),
    ).fetchall()
    page = rows[:limit]
    ops = []
    for _seq, rev, collection, rkey, cid, prev, block in page:
        op: dict = {"rev": rev, "collection": collection, "rkey": rkey}
        # No cid: a delete; no prev: a create. Absent rather than null, which the lexicon's string fields
        # (and so this runtime's output check) do not allow; readers treat both the same.
        if cid is not None:
            op["cid"] = cid
        if prev is not None:
            op["prev"] = prev
        if block is not None and not exclude_values:  # the latest state of its path
            op["value"] = _value(block)
        ops.append(op)
    out: dict = {"ops": ops}
    if len(rows) > limit:
        out["cursor"] = str(page[-1][0])
    else:
        out["commit"] = head.commit.to_json()
        if page:
            out["cursor"] = str(page[-1][0])
    return out


def repo_car(conn: sqlite3.Connection, space: Space, repo: str, *, exclude_values: bool) -> bytes:
    head = _head_or_missing(conn, space, repo)
    rows = conn.execute(
        "SELECT collection, rkey, cid, block FROM repo_records WHERE space_id = ?", (space.id,)
    ).fetchall()
    records = [RepoRecord(c, r, cid, bytes(block)) for c, r, cid, block in rows]
    return write_repo_car(head.commit, records, exclude_values=exclude_values)


def list_repos(conn: sqlite3.Connection, space: Space, *, cursor: str | None, limit: int) -> dict:
    """The space's writers in ascending spaceRev after ``cursor``: the authority's repo (kept here; its rev
    is its spaceRev) and the members' repos their repo hosts told this host about
    (docs/space-host.md#members-repos). A page after the newest spaceRev is empty and ends the walk."""
    if limit < 1:
        return {"repos": []}
    after = cursor or ""
    entries: list[dict[str, Any]] = [
        {"did": w.repo, "repoRev": w.repo_rev, "hash": {"$bytes": w.hash}, "spaceRev": w.space_rev}
        for w in store_writers.writers_after(conn, space.id, after, limit)
    ]  # fmt: skip
    head = store_repo.get_head(conn, space.id)
    if head is not None and head.rev > after:
        entries.append({"did": head.repo, "repoRev": head.rev, "hash": {"$bytes": b64encode(head.commit.hash)},
                        "spaceRev": head.rev})  # fmt: skip
    entries = sorted(entries, key=lambda e: e["spaceRev"])[:limit]
    if not entries:
        return {"repos": []}
    return {"repos": entries, "cursor": entries[-1]["spaceRev"]}
