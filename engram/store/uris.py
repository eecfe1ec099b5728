"""Space and memory AT-URIs in their canonical forms (DESIGN §2)."""

from __future__ import annotations

import re

SPACE_TYPE = "garden.engram.space"
MEMORY_COLLECTION = "garden.engram.memory"

# atproto DID and record-key syntax (atproto.com/specs/did, /specs/record-key).
_DID_RE = re.compile(r"did:[a-z]+:[a-zA-Z0-9._:%-]*[a-zA-Z0-9._-]")
_RKEY_RE = re.compile(r"[a-zA-Z0-9._:~-]{1,512}")
_SPACE_RE = re.compile(r"at://(?P<authority>[^/]+)/space/(?P<type>[^/]+)/(?P<skey>[^/?#]+)")


def is_did(value: object) -> bool:
    return isinstance(value, str) and len(value) <= 2048 and _DID_RE.fullmatch(value) is not None


def is_record_key(value: object) -> bool:
    return isinstance(value, str) and value not in (".", "..") and _RKEY_RE.fullmatch(value) is not None


def space_uri(authority: str, skey: str) -> str:
    if not is_did(authority):
        raise ValueError(f"space authority is not a DID: {authority!r}")
    if not is_record_key(skey):
        raise ValueError(f"space key is not a valid record key: {skey!r}")
    return f"at://{authority}/space/{SPACE_TYPE}/{skey}"


def parse_space_uri(uri: str) -> tuple[str, str]:
    """(authority DID, skey) of a canonical space URI; ValueError for anything else."""
    match = _SPACE_RE.fullmatch(uri) if isinstance(uri, str) else None
    if match is None or match["type"] != SPACE_TYPE:
        raise ValueError(f"not a canonical {SPACE_TYPE} space URI: {uri!r}")
    authority, skey = match["authority"], match["skey"]
    if space_uri(authority, skey) != uri:  # also validates both parts
        raise ValueError(f"not a canonical space URI: {uri!r}")
    return authority, skey


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
