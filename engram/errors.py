"""Domain errors: what went wrong, by a stable name, with no wire shape attached.

Everything below the API (store, search, auth, services, sync) raises these. Each front door maps them to
its own wire shape: the XRPC runtime to ``{"error", "message"}`` with a status per ``kind``
(``engram/xrpc/errors.py``), each REST shim to its upstream API's envelope (``engram/compat/*/errors.py``).
``name`` is the stable error name (for XRPC it is the lexicon's error name, e.g. ``UnknownSpace``);
``kind`` is the family a front door maps to a status code.

    EngramError                 kind        default name
     ├── InvalidInput           invalid     InvalidRequest
     │    └── UnknownSpace      invalid     UnknownSpace        (no such live space)
     ├── NotAuthenticated       auth        AuthRequired
     │    └── Replayed          auth        JwtReplayed         (a token's id was already used)
     ├── NotAllowed             forbidden   Forbidden
     ├── NotFound               not_found   NotFound
     ├── Conflict               conflict    Conflict
     ├── TooLarge               too_large   PayloadTooLarge
     ├── RateLimited            rate_limited RateLimitExceeded   (retry_after, limit, remaining, reset)
     ├── Unavailable            unavailable ServiceUnavailable  (retry_after)
     ├── NotImplementedYet      not_implemented MethodNotImplemented
     └── InternalFailure        internal    InternalServerError (message is never shown to clients)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar


class EngramError(Exception):
    kind: ClassVar[str] = "internal"
    default_name: ClassVar[str] = "InternalServerError"

    def __init__(
        self,
        message: str,
        name: str | None = None,
        *,
        retry_after: float | None = None,
        headers: Mapping[str, str] | None = None,
    ):
        super().__init__(message)
        self.name = name or self.default_name
        self.message = message
        # Seconds until a retry may succeed (RateLimited, Unavailable); each front door renders it its own
        # way (XRPC: a Retry-After header, `engram/xrpc/errors.py` wire_headers).
        self.retry_after = retry_after
        # Extra wire headers a front door may pass on as they are; domain code sets numbers, not headers.
        self.headers = dict(headers or {})

    def payload(self) -> dict[str, str]:
        return {"error": self.name, "message": self.message}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.kind}, {self.name!r}, {self.message!r})"


class InvalidInput(EngramError):
    kind = "invalid"
    default_name = "InvalidRequest"


class UnknownSpace(InvalidInput):
    """No live space by that URI (never created, or deleted). A type of its own so callers can tell "the
    space is gone" from "this item is bad" without comparing names."""

    default_name = "UnknownSpace"


class NotAuthenticated(EngramError):
    kind = "auth"
    default_name = "AuthRequired"


class Replayed(NotAuthenticated):
    """A signed token (or request) whose id was already used once: a type of its own so a verifier's caller
    can answer a replay differently (as the syncer's notification step does) without comparing names."""

    default_name = "JwtReplayed"


class NotAllowed(EngramError):
    kind = "forbidden"
    default_name = "Forbidden"


class NotFound(EngramError):
    kind = "not_found"
    default_name = "NotFound"


class Conflict(EngramError):
    kind = "conflict"
    default_name = "Conflict"


class TooLarge(EngramError):
    kind = "too_large"
    default_name = "PayloadTooLarge"


class RateLimited(EngramError):
    """A token bucket said no. `limit` (the burst), `remaining` (whole tokens left) and `reset` (whole
    seconds until the bucket is full) describe the bucket, when there is one, for the front door to render
    (XRPC: the RateLimit-* header fields)."""

    kind = "rate_limited"
    default_name = "RateLimitExceeded"

    def __init__(
        self,
        message: str,
        name: str | None = None,
        *,
        retry_after: float | None = None,
        limit: int | None = None,
        remaining: int | None = None,
        reset: int | None = None,
        headers: Mapping[str, str] | None = None,
    ):
        super().__init__(message, name, retry_after=retry_after, headers=headers)
        self.limit = limit
        self.remaining = remaining
        self.reset = reset


class Unavailable(EngramError):
    kind = "unavailable"
    default_name = "ServiceUnavailable"


class NotImplementedYet(EngramError):
    kind = "not_implemented"
    default_name = "MethodNotImplemented"


class InternalFailure(EngramError):
    kind = "internal"
    default_name = "InternalServerError"
