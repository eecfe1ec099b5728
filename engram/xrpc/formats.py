"""Lexicon string formats (did, handle, nsid, at-uri, cid, datetime, ...); the DID, NSID and record-key
patterns and the canonical space URI parser are `engram/identifiers.py`.

Why hand-written: the atproto SDK's validators live in ``atproto_client.models.string_formats``, and
importing that module imports the whole generated client (measured: 1.1 s, 63 MB RSS). They are also
looser or stricter than the lexicon spec in places that matter here: the at-uri regex rejects
``did:web:localhost%3A8080`` authorities and the space record URIs our memoryView carries, and the
datetime check leans on ``fromisoformat``. So the rules below follow the atproto syntax specs (and
@atproto/syntax) directly. CIDs are parsed for real by ``libipld.decode_cid`` (sub-microsecond).
NSIDs use the spec's own regex rather than ``atproto_core.nsid.validate_nsid``: same rules, but that
walks segments in Python (2.6 us vs 0.3 us), and every memoryView URI in every response holds two.

Each checker takes a string and returns an error message (``None`` when the value is valid), so the
validators can build their own path-qualified errors without exceptions on the happy path.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import libipld

from engram.identifiers import (
    DID_PATTERN,
    DID_RE,
    MAX_DID_LENGTH,
    MAX_NSID_LENGTH,
    NSID_PATTERN,
    NSID_RE,
    RECORD_KEY_CHARS,
    RECORD_KEY_RE,
    check_datetime,
)

FormatCheck = Callable[[str], "str | None"]

_HANDLE_RE = re.compile(
    r"([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"
)
_TID_RE = re.compile(r"[234567abcdefghij][234567abcdefghijklmnopqrstuvwxyz]{12}")
_URI_RE = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*:(//)?[^\s/][^\s]*")
_AT_URI_CHARS_RE = re.compile(r"[a-zA-Z0-9._~:@!$&')(*+,;=%/-]*")
_AT_URI_FRAGMENT_RE = re.compile(r"/[a-zA-Z0-9._~:@!$&')(*+,;=%\[\]/-]*")
# Language tags (docs/protocol.md#string-formats): the regular grammar (the irregular grandfathered tags
# are listed below), with the primary subtag restricted as atproto's interop tests do: 2-3 lowercase
# letters ("jaja", "JA" fail).
_LANG_RE = re.compile(
    r"(?:(?P<lang>[a-z]{2,3}(?:-[A-Za-z]{3}){0,3})"
    r"(?:-[A-Za-z]{4})?"
    r"(?:-(?:[A-Za-z]{2}|[0-9]{3}))?"
    r"(?P<variants>(?:-(?:[A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*)"
    r"(?P<extensions>(?:-[0-9A-WY-Za-wy-z](?:-[A-Za-z0-9]{2,8})+)*)"
    r"(?:-x(?:-[A-Za-z0-9]{1,8})+)?"
    r"|x(?:-[A-Za-z0-9]{1,8})+)"
)
_IRREGULAR_LANGS = frozenset(
    [
        "en-gb-oed",
        "i-ami",
        "i-bnn",
        "i-default",
        "i-enochian",
        "i-hak",
        "i-klingon",
        "i-lux",
        "i-mingo",
        "i-navajo",
        "i-pwn",
        "i-tao",
        "i-tay",
        "i-tsu",
        "sgn-be-fr",
        "sgn-be-nl",
        "sgn-ch-de",
    ]
)
# Fast path for the URIs engram emits most (DID authority, classic or space record forms): when the
# whole URI is short enough that no part can break a length limit, one regex decides validity.
_DID_P = DID_PATTERN
_NSID_P = NSID_PATTERN
_RKEY_P = rf"(?!\.\.?(?:/|$)){RECORD_KEY_CHARS}+"
_FAST_AT_URI_RE = re.compile(
    rf"at://{_DID_P}(?:/space/{_NSID_P}/{_RKEY_P}(?:/{_DID_P}(?:/{_NSID_P}(?:/{_RKEY_P})?)?)?"
    rf"|/{_NSID_P}(?:/{_RKEY_P})?)?"
)
MAX_HANDLE_LENGTH = 253
MAX_URI_LENGTH = 8192


def check_did(s: str) -> str | None:
    if len(s) > MAX_DID_LENGTH or not DID_RE.fullmatch(s):
        return "must be a DID (did:method:identifier)"
    return None


def check_handle(s: str) -> str | None:
    if len(s) > MAX_HANDLE_LENGTH or not _HANDLE_RE.fullmatch(s):
        return "must be a handle (a domain name such as alice.example.com)"
    return None


def check_at_identifier(s: str) -> str | None:
    if s.startswith("did:"):
        return check_did(s)
    return check_handle(s) and "must be a DID or a handle"


def check_nsid(s: str) -> str | None:
    if len(s) > MAX_NSID_LENGTH or not NSID_RE.fullmatch(s):
        return "must be an NSID (such as com.example.fooBar)"
    return None


def check_tid(s: str) -> str | None:
    return None if _TID_RE.fullmatch(s) else "must be a TID (13 base32-sortable characters)"


def check_record_key(s: str) -> str | None:
    if s in (".", "..") or not RECORD_KEY_RE.fullmatch(s):
        return "must be a record key (1-512 of A-Z a-z 0-9 . _ : ~ -, not . or ..)"
    return None


def check_cid(s: str) -> str | None:
    if len(s) < 8 or len(s) > 256 or not s.isascii():
        return "must be a CID"
    try:
        libipld.decode_cid(s)
    except ValueError:
        return "must be a CID"
    return None


def check_uri(s: str) -> str | None:
    if len(s) > MAX_URI_LENGTH or not _URI_RE.fullmatch(s):
        return "must be a URI with a scheme (such as https://example.com/)"
    return None


def check_language(s: str) -> str | None:
    if s.lower() in _IRREGULAR_LANGS:
        return None
    m = _LANG_RE.fullmatch(s)
    if m is None:
        return "must be a BCP 47 language tag (such as en or pt-BR)"
    variants = m.group("variants").lower().split("-")[1:] if m.group("variants") else []
    singletons = (
        re.findall(r"-([0-9a-wy-z])(?=-)", m.group("extensions").lower()) if m.group("extensions") else []
    )
    if len(set(variants)) != len(variants) or len(set(singletons)) != len(singletons):
        return "must not repeat a variant or extension subtag"
    return None


def check_at_uri(s: str) -> str | None:
    """at://authority[/collection[/rkey]] and the spaces forms at://did/space/type/skey[/did[/nsid[/rkey]]]."""
    if len(s) <= MAX_NSID_LENGTH and _FAST_AT_URI_RE.fullmatch(s):
        return None
    if len(s) > MAX_URI_LENGTH:
        return "must be at most 8 KiB"
    uri, hash_sign, fragment = s.partition("#")
    if hash_sign and not _AT_URI_FRAGMENT_RE.fullmatch(fragment):
        return "must have a fragment that starts with a slash"
    if not _AT_URI_CHARS_RE.fullmatch(uri) or not uri.startswith("at://"):
        return "must be an at:// URI"
    parts = uri[5:].split("/")
    if check_at_identifier(parts[0]) is not None:
        return "must have a DID or handle as its authority"
    path = parts[1:]
    if any(p == "" for p in path):
        return "must not have empty path segments or a trailing slash"
    if path[:1] == ["space"]:
        return _check_space_path(parts[0], path[1:])
    if len(path) > 2:
        return "must have at most a collection and a record key in its path"
    if path and check_nsid(path[0]) is not None:
        return "must have an NSID as its collection"
    if len(path) == 2 and check_record_key(path[1]) is not None:
        return "must have a valid record key"
    return None


def _check_space_path(authority: str, rest: list[str]) -> str | None:
    if check_did(authority) is not None:
        return "must have a DID as a space's authority"
    if len(rest) < 2 or len(rest) > 5:
        return "must name a space as space/{type}/{skey}, optionally followed by /{did}/{collection}/{rkey}"
    checks = (check_nsid, check_record_key, check_did, check_nsid, check_record_key)
    names = ("space type", "space key", "author DID", "collection", "record key")
    for part, check, name in zip(rest, checks, names, strict=False):
        if check(part) is not None:
            return f"must have a valid {name}"
    return None


FORMATS: dict[str, FormatCheck] = {
    "did": check_did,
    "handle": check_handle,
    "at-identifier": check_at_identifier,
    "nsid": check_nsid,
    "tid": check_tid,
    "record-key": check_record_key,
    "cid": check_cid,
    "datetime": check_datetime,
    "uri": check_uri,
    "language": check_language,
    "at-uri": check_at_uri,
}
