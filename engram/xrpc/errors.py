"""XRPC errors: every non-2xx answer is ``{"error": Name, "message": text}``.

    XrpcError(status, error, message)
     ├── InvalidRequestError      400  (also the lexicon's own 400 names: UnknownSpace, NoModel, ...)
     ├── AuthRequiredError        401  (AuthRequired, InvalidToken, BadSpaceSignature, BadJwt*, ...)
     ├── ForbiddenError           403
     ├── NotFoundError            404
     ├── PayloadTooLargeError     413
     ├── RateLimitExceededError   429  (carries RateLimit-* and Retry-After headers)
     ├── InternalServerError      500  (message is always generic on the wire)
     ├── MethodNotImplementedError 501
     └── UnavailableError         503  (IndexLoading, EmbedderBusy, ...)
"""

from __future__ import annotations

from collections.abc import Mapping


class XrpcError(Exception):
    status = 500
    default_error = "InternalServerError"

    def __init__(self, message: str, error: str | None = None, *, headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.error = error or self.default_error
        self.message = message
        self.headers = dict(headers or {})

    def payload(self) -> dict[str, str]:
        return {"error": self.error, "message": self.message}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.status}, {self.error!r}, {self.message!r})"


class InvalidRequestError(XrpcError):
    status = 400
    default_error = "InvalidRequest"


class AuthRequiredError(XrpcError):
    status = 401
    default_error = "AuthRequired"


class ForbiddenError(XrpcError):
    status = 403
    default_error = "Forbidden"


class NotFoundError(XrpcError):
    status = 404
    default_error = "NotFound"


class PayloadTooLargeError(XrpcError):
    status = 413
    default_error = "PayloadTooLarge"


class RateLimitExceededError(XrpcError):
    status = 429
    default_error = "RateLimitExceeded"


class InternalServerError(XrpcError):
    status = 500
    default_error = "InternalServerError"


class MethodNotImplementedError(XrpcError):
    status = 501
    default_error = "MethodNotImplemented"


class UnavailableError(XrpcError):
    status = 503
    default_error = "ServiceUnavailable"


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
