"""Why a sync step failed. All are `Unavailable` (the far side, not the caller, is at fault)."""

from __future__ import annotations

import email.utils

from engram.errors import Unavailable


class UpstreamError(Unavailable):
    """A PDS or space host answered with an error, garbage, or not in time."""

    default_name = "UpstreamFailure"

    def __init__(
        self,
        message: str,
        name: str | None = None,
        *,
        xrpc_error: str | None = None,
        status: int = 0,
        retry_after_s: float | None = None,
    ):
        super().__init__(message, name)
        self.xrpc_error = xrpc_error  # the far side's own error name, e.g. "ExpiredToken", "SpaceDeleted"
        self.status = status
        self.retry_after_s = retry_after_s  # the far side's Retry-After (429, 503), in seconds


class MalformedAnswer(UpstreamError):
    """A far side answered, but not with the JSON object the call returns (not JSON, nested past the
    parser's limit, another type). For a repo's oplog this is read like an oplog that does not verify: the
    pull falls back to the full export (engram/sync/space_pass.py)."""


class SpaceNotHeldThere(UpstreamError):
    """The space host answered `SpaceNotFound`: it does not hold the space. The far side's error names are
    read once, in engram/sync/http.py (`upstream_error`); callers branch on these types."""


class SpaceDeletedThere(SpaceNotHeldThere):
    """The space host answered `SpaceDeleted`."""


def upstream_error(
    message: str, xrpc_error: str | None, status: int, retry_after_s: float | None = None
) -> UpstreamError:
    """The error for a far side's non-200 answer, typed by its error name where engram acts on it."""
    kind = {"SpaceNotFound": SpaceNotHeldThere, "SpaceDeleted": SpaceDeletedThere}.get(xrpc_error or "")
    return (kind or UpstreamError)(message, xrpc_error=xrpc_error, status=status, retry_after_s=retry_after_s)


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """A Retry-After header in seconds (delay-seconds or an HTTP-date, docs/sync.md#concurrency-and-failures);
    None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now) if when.tzinfo is not None else None


class AccessError(Unavailable):
    """engram could not obtain read access (sign-in, delegation token or credential exchange failed)."""

    default_name = "NoReadAccess"
