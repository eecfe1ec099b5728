"""Domain errors: what went wrong, by a stable name, with no wire shape attached.

Everything below the API (store, search, auth, services, sync) raises these. Each front door maps them to
its own wire shape: the XRPC runtime to ``{"error", "message"}`` with a status per ``kind``
(``engram/xrpc/errors.py``), each REST shim to its upstream API's envelope (``engram/compat/*/errors.py``).
``name`` is the stable error name (for XRPC it is the lexicon's error name, e.g. ``UnknownSpace``);
``kind`` is the family a front door maps to a status code.

    EngramError                 kind        default name
     ├── InvalidInput           invalid     InvalidRequest
     ├── NotAuthenticated       auth        AuthRequired
     ├── NotAllowed             forbidden   Forbidden
     ├── NotFound               not_found   NotFound
     ├── Conflict               conflict    Conflict
     ├── TooLarge               too_large   PayloadTooLarge
     ├── RateLimited            rate_limited RateLimitExceeded   (retry_after, and RateLimit-* hints)
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
        self.retry_after = retry_after
        # Protocol-level hints a front door may pass on (RateLimit-* fields); never required to render.
        self.headers = dict(headers or {})
        if retry_after is not None and "Retry-After" not in self.headers:
            self.headers["Retry-After"] = str(max(1, int(-(-retry_after // 1))))

    @property
    def error(self) -> str:
        """The XRPC spelling of ``name`` (kept so XRPC-facing code reads naturally)."""
        return self.name

    def payload(self) -> dict[str, str]:
        return {"error": self.name, "message": self.message}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.kind}, {self.name!r}, {self.message!r})"


class InvalidInput(EngramError):
    kind = "invalid"
    default_name = "InvalidRequest"


class NotAuthenticated(EngramError):
    kind = "auth"
    default_name = "AuthRequired"


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
    kind = "rate_limited"
    default_name = "RateLimitExceeded"


class Unavailable(EngramError):
    kind = "unavailable"
    default_name = "ServiceUnavailable"


class NotImplementedYet(EngramError):
    kind = "not_implemented"
    default_name = "MethodNotImplemented"


class InternalFailure(EngramError):
    kind = "internal"
    default_name = "InternalServerError"
