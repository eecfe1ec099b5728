"""Repo ops (``listRepoOps`` entries) and folding them into an LtHash state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engram.atrepo.blocks import cid_to_bytes, from_json
from engram.atrepo.errors import RepoFormatError
from engram.atrepo.lthash import LtHash, record_element


@dataclass(frozen=True)
class RepoOp:
    """One oplog entry: a create has no ``prev``, a delete no ``cid``, an update both. ``value`` is the
    record (IPLD form, as `blocks.from_json` gives) when the host inlined it."""

    rev: str
    collection: str
    rkey: str
    cid: str | None
    prev: str | None
    value: Any = None

    @property
    def path(self) -> str:
        return f"{self.collection}/{self.rkey}"

    @staticmethod
    def from_json(entry: Any) -> RepoOp:
        if not isinstance(entry, dict):
            raise RepoFormatError("an op must be an object")
        rev, collection, rkey = entry.get("rev"), entry.get("collection"), entry.get("rkey")
        cid, prev = entry.get("cid"), entry.get("prev")
        for name, value in (("rev", rev), ("collection", collection), ("rkey", rkey)):
            if not isinstance(value, str) or not value or "/" in value:
                raise RepoFormatError(f"op {name} must be a non-empty string without '/'")
        for name, value in (("cid", cid), ("prev", prev)):
            if value is not None:
                if not isinstance(value, str):
                    raise RepoFormatError(f"op {name} must be a CID string or null")
                cid_to_bytes(value)  # validates
        if cid is None and prev is None:
            raise RepoFormatError("an op needs a cid, a prev, or both")
        value = from_json(entry["value"]) if entry.get("value") is not None else None
        return RepoOp(rev, collection, rkey, cid, prev, value)

    def to_json(self) -> dict[str, Any]:
        return {
            "rev": self.rev,
            "collection": self.collection,
            "rkey": self.rkey,
            "cid": self.cid,
            "prev": self.prev,
        }


def apply_op(set_hash: LtHash, op: RepoOp) -> LtHash:
    """Fold one op in place: remove the previous version, add the new one."""
    if op.prev is not None:
        set_hash.remove(record_element(op.collection, op.rkey, op.prev))
    if op.cid is not None:
        set_hash.add(record_element(op.collection, op.rkey, op.cid))
    return set_hash


def set_hash_of_index(index: dict[str, str]) -> LtHash:
    """The LtHash of a whole repo given as ``{"collection/rkey": cid}``."""
    state = LtHash()
    for path, cid in index.items():
        state.add(f"{path}/{cid}")
    return state
