"""Signed space-repo commits: build, sign, verify, and their DAG-CBOR and JSON forms (docs/sync.md).

A commit is ``{ver: 1, rev, hash, ikm, sig, mac}``:

- ``ctx`` = ASCII ``atproto-space-v1`` then ``u16be(len) || value`` for the space URI, author DID, rev, ikm;
- ``sig`` = the author's ``#atproto`` key over ``ctx`` (64-byte compact, low-S). It does not cover the hash,
  so a leaked commit proves nothing to a third party about the repo's contents;
- ``mac`` = HMAC-SHA256(key = HKDF-Expand-SHA256(prk = ikm, info = ctx, L = 32), msg = hash): only someone
  holding the contents can check it, and it binds the hash to the signed ikm;
- ``hash`` = sha256 of the repo's LtHash state, which the verifier recomputes and compares.

HKDF-Expand (no Extract step) and HMAC come from ``cryptography``; signatures from `engram.auth.crypto_keys`.
"""

from __future__ import annotations

import hmac
import os
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import hmac as crypto_hmac
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

from engram.atrepo.blocks import b64encode, decode_block, encode_block, from_json
from engram.atrepo.errors import CommitVerificationError, RepoFormatError
from engram.auth.crypto_keys import KeyFormatError, PrivateKey, PublicKey

COMMIT_VERSION = 1
CONTEXT_DOMAIN = b"atproto-space-v1"
_FIELD_BYTES = {"hash": 32, "ikm": 32, "mac": 32, "sig": 64}
_FIELDS = ("ver", "rev", *_FIELD_BYTES)


@dataclass(frozen=True)
class CommitContext:
    """What a commit signature is bound to besides its ikm."""

    space: str
    author: str
    rev: str


@dataclass(frozen=True)
class SignedCommit:
    rev: str
    hash: bytes
    ikm: bytes
    sig: bytes
    mac: bytes
    ver: int = COMMIT_VERSION

    def to_value(self) -> dict[str, Any]:
        return {
            "ver": self.ver,
            "rev": self.rev,
            "hash": self.hash,
            "ikm": self.ikm,
            "sig": self.sig,
            "mac": self.mac,
        }

    def to_cbor(self) -> bytes:
        return encode_block(self.to_value())

    def to_json(self) -> dict[str, Any]:
        return {
            "ver": self.ver,
            "rev": self.rev,
            **{name: {"$bytes": b64encode(getattr(self, name))} for name in _FIELD_BYTES},
        }

    @staticmethod
    def from_value(value: Any) -> SignedCommit:
        if not isinstance(value, dict) or set(value) != set(_FIELDS):
            raise RepoFormatError(f"a signed commit has exactly the fields {', '.join(_FIELDS)}")
        if type(value["ver"]) is not int or value["ver"] != COMMIT_VERSION:
            raise RepoFormatError(f"unsupported commit version {value['ver']!r}")
        if not isinstance(value["rev"], str) or not value["rev"] or len(value["rev"].encode()) > 0xFFFF:
            raise RepoFormatError("commit rev must be a non-empty string")
        for name, size in _FIELD_BYTES.items():
            if not isinstance(value[name], bytes) or len(value[name]) != size:
                raise RepoFormatError(f"commit {name} must be {size} bytes")
        return SignedCommit(value["rev"], value["hash"], value["ikm"], value["sig"], value["mac"])

    @staticmethod
    def from_cbor(data: bytes) -> SignedCommit:
        commit = SignedCommit.from_value(decode_block(data))
        if commit.to_cbor() != data:  # canonical form only, so one commit has one CID
            raise RepoFormatError("signed commit is not canonical DAG-CBOR")
        return commit

    @staticmethod
    def from_json(value: Any) -> SignedCommit:
        if not isinstance(value, dict):
            raise RepoFormatError("commit must be an object")
        return SignedCommit.from_value(from_json(value))


def encode_context(ctx: CommitContext, ikm: bytes) -> bytes:
    out = bytearray(CONTEXT_DOMAIN)
    for field in (ctx.space.encode(), ctx.author.encode(), ctx.rev.encode(), ikm):
        if len(field) > 0xFFFF:
            raise RepoFormatError("commit context field longer than 65535 bytes")
        out += len(field).to_bytes(2, "big") + field
    return bytes(out)


def commit_mac(ikm: bytes, context: bytes, set_hash: bytes) -> bytes:
    key = HKDFExpand(algorithm=hashes.SHA256(), length=32, info=context).derive(ikm)
    mac = crypto_hmac.HMAC(key, hashes.SHA256())
    mac.update(set_hash)
    return mac.finalize()


def sign_commit(
    set_hash: bytes, ctx: CommitContext, key: PrivateKey, *, ikm: bytes | None = None
) -> SignedCommit:
    """Sign a repo state (``set_hash`` = `LtHash.digest()`) with a fresh ikm (or the given one, for tests)."""
    if len(set_hash) != 32:
        raise RepoFormatError("set hash must be 32 bytes")
    ikm = ikm if ikm is not None else os.urandom(32)
    context = encode_context(ctx, ikm)
    return SignedCommit(ctx.rev, set_hash, ikm, key.sign(context), commit_mac(ikm, context, set_hash))


def verify_commit(
    commit: SignedCommit, ctx: CommitContext, key: PublicKey | str, set_hash: bytes | None = None
) -> None:
    """Raise CommitVerificationError unless ``commit`` is the author's signed commit for ``ctx``: rev, mac,
    signature (strict low-S) and, when given, the locally recomputed ``set_hash``."""
    if commit.ver != COMMIT_VERSION:
        raise CommitVerificationError(f"unsupported commit version {commit.ver}")
    if commit.rev != ctx.rev:
        raise CommitVerificationError(f"commit rev {commit.rev!r} is not the expected {ctx.rev!r}")
    context = encode_context(ctx, commit.ikm)
    if not hmac.compare_digest(commit_mac(commit.ikm, context, commit.hash), commit.mac):
        raise CommitVerificationError("commit mac does not match its hash")
    try:
        public_key = PublicKey.from_did_key(key) if isinstance(key, str) else key
    except KeyFormatError as e:
        raise CommitVerificationError(f"author key is unusable: {e}") from None
    if not public_key.verify(context, commit.sig, strict_low_s=True):
        raise CommitVerificationError("commit signature does not verify with the author's key")
    if set_hash is not None and not hmac.compare_digest(set_hash, commit.hash):
        raise CommitVerificationError("the repo's records do not add up to the signed commit hash")
