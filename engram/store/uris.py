"""engram's space and memory AT-URIs in their canonical forms (docs/protocol.md, "Space URIs"); the syntax
itself (DID, record key, the space URI parser) is `engram/identifiers.py`."""

from __future__ import annotations

from engram.identifiers import SPACE_TYPE, is_did, is_record_key
from engram.identifiers import parse_space_uri as parse_any_space_uri

MEMORY_COLLECTION = "garden.engram.memory"


def space_uri(authority: str, skey: str) -> str:
    if not is_did(authority):
        raise ValueError(f"space authority is not a DID: {authority!r}")
    if not is_record_key(skey):
        raise ValueError(f"space key is not a valid record key: {skey!r}")
    return f"at://{authority}/space/{SPACE_TYPE}/{skey}"


def parse_space_uri(uri: str) -> tuple[str, str]:
    """(authority DID, skey) of a canonical engram space URI; ValueError for anything else."""
    ref = parse_any_space_uri(uri)
    if ref.space_type != SPACE_TYPE:
        raise ValueError(f"not a {SPACE_TYPE} space URI: {uri!r}")
    return ref.authority, ref.skey


def memory_uri(space: str, author: str, rkey: str) -> str:
    return f"{space}/{author}/{MEMORY_COLLECTION}/{rkey}"


def parse_memory_uri(uri: str) -> tuple[str, str, str]:
    """(space URI, author DID, rkey) of a memory URI; ValueError if malformed."""
    if not isinstance(uri, str):
        raise ValueError("memory URI must be a string")  # noqa: TRY004 - callers catch ValueError for any bad URI
    parts = uri.rsplit("/", 3)
    if len(parts) != 4 or parts[2] != MEMORY_COLLECTION:
        raise ValueError(f"not a memory URI: {uri!r}")
    space, author, _, rkey = parts
    parse_space_uri(space)
    if not is_did(author) or not is_record_key(rkey):
        raise ValueError(f"not a memory URI: {uri!r}")
    return space, author, rkey
