"""Errors raised by the repo primitives. Both are client-input errors (a peer sent us something wrong)."""

from __future__ import annotations

from engram.errors import InvalidInput


class RepoFormatError(InvalidInput):
    """Bytes or JSON that do not decode as a signed commit, repo index, record or CAR export."""

    default_name = "InvalidRepo"


class CommitVerificationError(InvalidInput):
    """A well-formed commit or repo that does not verify (signature, mac, set hash or record CID)."""

    default_name = "InvalidCommit"
