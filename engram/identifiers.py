"""atproto identifier syntax engram relies on, in one place: the DID, NSID and record-key patterns and
the canonical space URI (docs/protocol.md, "Space URIs").

Every layer uses these: the store (space and memory URIs), auth (a credential's `sub` against the space),
the XRPC format checks (`engram/xrpc/formats.py`) and the CLI. Hand-written rather than the atproto SDK's
validators for the reasons given in `engram/xrpc/formats.py` (import cost, and `did:web` authorities with
a `%3A` port that the SDK's at-uri check refuses).
"""

from __future__ import annotations

import datetime
import functools
import re
from typing import NamedTuple

# DID and record-key syntax (docs/protocol.md#space-uris; the length limits are checked separately).
DID_PATTERN = r"did:[a-z]+:[a-zA-Z0-9._:%-]*[a-zA-Z0-9._-]"
RECORD_KEY_CHARS = r"[A-Za-z0-9._:~-]"
# NSID syntax (docs/protocol.md#space-uris): reversed domain authority, then a name starting with a letter.
NSID_PATTERN = (
    r"[a-zA-Z]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)+"
    r"\.[a-zA-Z][a-zA-Z0-9]{0,62}"
)
MAX_DID_LENGTH = 2048
MAX_RECORD_KEY_LENGTH = 512
MAX_NSID_LENGTH = 317

DID_RE = re.compile(DID_PATTERN)
RECORD_KEY_RE = re.compile(f"{RECORD_KEY_CHARS}{{1,{MAX_RECORD_KEY_LENGTH}}}")
NSID_RE = re.compile(NSID_PATTERN)

SPACE_TYPE = "garden.engram.space"  # the space type of every engram space


def is_did(value: object) -> bool:
    return isinstance(value, str) and len(value) <= MAX_DID_LENGTH and DID_RE.fullmatch(value) is not None


def is_record_key(value: object) -> bool:
    return isinstance(value, str) and value not in (".", "..") and RECORD_KEY_RE.fullmatch(value) is not None


def is_nsid(value: object) -> bool:
    return isinstance(value, str) and len(value) <= MAX_NSID_LENGTH and NSID_RE.fullmatch(value) is not None


class SpaceRef(NamedTuple):
    authority: str
    space_type: str
    skey: str

    def __str__(self) -> str:
        return f"at://{self.authority}/space/{self.space_type}/{self.skey}"


def parse_space_uri(s: object) -> SpaceRef:
    """Parse the canonical space URI ``at://{did}/space/{nsid}/{record-key}``; ValueError says why not.

    Canonical means re-serialising reproduces the input: no query, fragment, trailing slash or extra
    segments, so the string can be compared byte-for-byte with a credential's ``sub``.
    """
    if not isinstance(s, str) or not s.startswith("at://"):
        raise ValueError("space URI must start with at://")
    return _parse_space_uri(s)


# Every signed request checks its space URI (the auth step's window-and-space check) and a process serves
# few spaces, so the parse of a valid URI is remembered; an invalid one raises and is not cached.
@functools.lru_cache(maxsize=4096)
def _parse_space_uri(s: str) -> SpaceRef:
    if "?" in s or "#" in s:
        raise ValueError("space URI must not have a query or fragment")
    parts = s[5:].split("/")
    if len(parts) != 4 or parts[1] != "space":
        raise ValueError("space URI must be at://{authority DID}/space/{space type}/{space key}")
    authority, _, space_type, skey = parts
    if not is_did(authority):
        raise ValueError("space URI's authority must be a DID")
    if not is_nsid(space_type):
        raise ValueError("space URI's space type must be an NSID")
    if not is_record_key(skey):
        raise ValueError("space URI's space key must be a record key")
    return SpaceRef(authority, space_type, skey)


def space_authority(space: object) -> str | None:
    """The authority DID of a canonical space URI, or None if ``space`` is not one."""
    try:
        return parse_space_uri(space).authority
    except ValueError:
        return None


# C0 and C1 controls, and the bidirectional formatting characters that reorder what is shown (U+202A-E,
# U+2066-9, U+200E-F, U+061C): a name a person reads (an API key's label, an OAuth client's name) holds
# none, or a terminal listing keys could be recoloured or given fake rows, and a consent page could show
# a client's name reversed
_NOT_DISPLAYED = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def is_display_text(text: str) -> bool:
    """Whether `text` can be shown to a person as written (see _NOT_DISPLAYED)."""
    return _NOT_DISPLAYED.search(text) is None


# The atproto datetime profile (docs/protocol.md#string-formats): uppercase T and Z, seconds and a
# timezone required, offsets as +HH:MM (never -00:00), any number of fraction digits. Field ranges are in the
# regex so only days 29-31 (and year 0) need the calendar: this runs on every datetime of every response.
# One rule for what is stored and what is answered: a write (any door, sync included) is held to it, so a
# stored createdAt never fails the answer's lexicon check (engram/store/prepared_memories.py).
_DATETIME_RE = re.compile(
    r"([0-9]{4})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
    r"T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?"
    r"(?:Z|(?!-00:00)[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
)


def check_datetime(s: str) -> str | None:
    """What is wrong with `s` as an atproto datetime, None when nothing is."""
    m = _DATETIME_RE.fullmatch(s)
    if m is None:
        if s.endswith("-00:00"):
            return "must not use the -00:00 timezone"
        return "must be an RFC 3339 datetime with seconds and a timezone (such as 1985-04-12T23:20:50.123Z)"
    year, month, day = m.group(1, 2, 3)
    if day > "28" or year == "0000":
        try:
            datetime.date(int(year), int(month), int(day))
        except ValueError:
            return "must be a real date"
    return None
