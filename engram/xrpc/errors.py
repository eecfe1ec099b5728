"""XRPC errors: every non-2xx answer is ``{"error": Name, "message": text}``.

The errors are the domain errors of `engram/errors.py`, under their own class names (there is no second,
XRPC name for a class); the wire name is each error's `name`, the lexicon's error name, and the status
comes from its `kind` (`STATUS_BY_KIND`). 500s always carry a generic message on the wire.
"""

from __future__ import annotations

import math

from engram.errors import (
    EngramError,
    RateLimited,
)

# The XRPC wire status of each domain error family (engram/errors.py). This table is the XRPC runtime's
# half of the domain-error contract; each REST shim has its own.
STATUS_BY_KIND = {
    "invalid": 400,
    "auth": 401,
    "forbidden": 403,
    "not_found": 404,
    "conflict": 409,
    "too_large": 413,
    "rate_limited": 429,
    "internal": 500,
    "not_implemented": 501,
    "unavailable": 503,
}


def http_status(err: EngramError) -> int:
    return STATUS_BY_KIND.get(err.kind, 500)


def rate_limit_headers(limit: int, remaining: int, reset: int) -> dict[str, str]:
    """The RateLimit-* header fields of one bucket (docs/protocol.md#rate-limit-headers)."""
    return {
        "RateLimit-Limit": str(limit),
        "RateLimit-Remaining": str(remaining),
        "RateLimit-Reset": str(reset),
    }


def wire_headers(err: EngramError) -> dict[str, str]:
    """The headers an XRPC error answer carries: Retry-After (whole seconds, rounded up) and, for a rate
    limit with a bucket, its RateLimit-* fields; the error's extra headers pass through unchanged."""
    out = dict(err.headers)
    if isinstance(err, RateLimited) and err.limit is not None:
        out.update(rate_limit_headers(err.limit, err.remaining or 0, err.reset or 0))
    if err.retry_after is not None:
        out["Retry-After"] = str(max(1, math.ceil(err.retry_after)))
    return out


# Error names the runtime and auth layers may raise on any method without the lexicon declaring them
# (the atproto convention: these are transport-level, not method-level, errors).
GENERIC_ERROR_NAMES = frozenset(
    {
        "InvalidRequest",
        "AuthRequired",
        "InvalidToken",
        "BadSpaceSignature",
        "BadJwt",
        "JwtExpired",
        "BadJwtAudience",
        "BadJwtLexiconMethod",
        "BadJwtSignature",
        "JwtReplayed",
        "BadAdminSignature",
        "Forbidden",
        "PayloadTooLarge",
        "RateLimitExceeded",
        "InternalServerError",
        "MethodNotImplemented",
    }
)
