"""Why a sync step failed. All are `Unavailable` (the far side, not the caller, is at fault)."""

from __future__ import annotations

from engram.errors import Unavailable


class UpstreamError(Unavailable):
    """A PDS or space host answered with an error, garbage, or not in time."""

    default_name = "UpstreamFailure"

    def __init__(
        self, message: str, name: str | None = None, *, xrpc_error: str | None = None, status: int = 0
    ):
        super().__init__(message, name)
        self.xrpc_error = xrpc_error  # the far side's own error name, e.g. "ExpiredToken", "SpaceDeleted"
        self.status = status


class MalformedAnswer(UpstreamError):
    """A far side answered, but not with the JSON object the call returns (not JSON, nested past the
    parser's limit, another type). For a repo's oplog this is read like an oplog that does not verify: the
    pull falls back to the full export (engram/sync/space_pass.py)."""


class SpaceNotHeldThere(UpstreamError):
    """The space host answered `SpaceNotFound`: it does not hold the space. The far side's error names are
    read once, in engram/sync/http.py (`upstream_error`); callers branch on these types."""


class SpaceDeletedThere(SpaceNotHeldThere):
    """The space host answered `SpaceDeleted`."""


def upstream_error(message: str, xrpc_error: str | None, status: int) -> UpstreamError:
    """The error for a far side's non-200 answer, typed by its error name where engram acts on it."""
    kind = {"SpaceNotFound": SpaceNotHeldThere, "SpaceDeleted": SpaceDeletedThere}.get(xrpc_error or "")
    return (kind or UpstreamError)(message, xrpc_error=xrpc_error, status=status)


class AccessError(Unavailable):
    """engram could not obtain read access (sign-in, delegation token or credential exchange failed)."""

    default_name = "NoReadAccess"
