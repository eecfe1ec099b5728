"""Dynamic client registration (RFC 7591) over HTTP: a client that has never met this server registers its
redirect URIs and gets a client id (and a secret, unless it asks to be a public client).

Open registration is safe here because a registered client is worth nothing by itself: every grant still
needs a person to approve it on the consent page with an engram API key (docs/oauth.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import orjson
from aiohttp import web

from ..identifiers import is_display_text
from ..search.limits import TokenBuckets
from .redirects import RedirectRefused, parse_redirect
from .server import OAuthServer

MAX_BODY_BYTES = 16 * 1024
# Registration needs no credential, so each address may add clients only at a modest pace: enough for
# any real client (one registration per install), too slow to fill the table.
REGISTRATIONS_PER_S = 0.2
REGISTRATION_BURST = 20
MAX_REDIRECT_URIS = 10
MAX_NAME_CHARS = 200
AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post")
GRANT_TYPES = frozenset({"authorization_code", "refresh_token"})
_NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


class RegistrationError(Exception):
    def __init__(self, error: str, description: str):
        super().__init__(description)
        self.error = error
        self.description = description


def _answer(body: dict, status: int) -> web.Response:
    return web.Response(
        body=orjson.dumps(body), status=status, content_type="application/json", headers=_NO_STORE
    )


def _string_list(metadata: dict, name: str, default: list[str]) -> list[str]:
    value = metadata.get(name, default)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RegistrationError("invalid_client_metadata", f"{name} must be a list of strings")
    return value


def parse_metadata(metadata: object, scopes: Iterable[str]) -> dict:
    """The client metadata this server keeps, validated (docs/oauth.md#dynamic-client-registration); RegistrationError otherwise."""
    if not isinstance(metadata, dict):
        raise RegistrationError("invalid_client_metadata", "the body must be a JSON object")
    uris = _string_list(metadata, "redirect_uris", [])
    if not uris or len(uris) > MAX_REDIRECT_URIS:
        raise RegistrationError("invalid_redirect_uri", f"send 1 to {MAX_REDIRECT_URIS} redirect_uris")
    for uri in uris:
        try:
            parse_redirect(uri)
        except RedirectRefused as exc:
            raise RegistrationError("invalid_redirect_uri", f"{exc} (docs/oauth.md#redirect-uris)") from None
    method = metadata.get("token_endpoint_auth_method", "client_secret_basic")
    if method not in AUTH_METHODS:
        raise RegistrationError(
            "invalid_client_metadata", f"token_endpoint_auth_method must be one of {AUTH_METHODS}"
        )
    grants = _string_list(metadata, "grant_types", ["authorization_code"])
    if not set(grants) <= GRANT_TYPES or "authorization_code" not in grants:
        raise RegistrationError(
            "invalid_client_metadata", "grant_types: authorization_code (and refresh_token)"
        )
    if _string_list(metadata, "response_types", ["code"]) != ["code"]:
        raise RegistrationError("invalid_client_metadata", 'response_types must be ["code"]')
    name = metadata.get("client_name", "")
    if not isinstance(name, str) or len(name) > MAX_NAME_CHARS:
        raise RegistrationError(
            "invalid_client_metadata", f"client_name: a string of at most {MAX_NAME_CHARS}"
        )
    if not is_display_text(name):  # the consent page shows it to the person deciding
        raise RegistrationError(
            "invalid_client_metadata", "client_name: no control or text-direction characters"
        )
    scope = metadata.get("scope")
    if scope is not None and (not isinstance(scope, str) or not set(scope.split()) <= set(scopes)):
        raise RegistrationError("invalid_client_metadata", "scope names a scope this server does not have")
    return {
        "redirect_uris": uris,
        "token_endpoint_auth_method": method,
        "grant_types": grants,
        "response_types": ["code"],
        "client_name": name,
        **({"scope": scope} if scope else {}),
    }


def registration_handler(server: OAuthServer, limiter: TokenBuckets | None = None, processes: int = 1):
    """The endpoint; `limiter` (keyed by the caller's address) bounds how fast one host can add clients.
    With several serving processes each keeps 1/N of the budget, so the sum is the budget
    (docs/internals.md#using-every-core)."""
    limiter = limiter or TokenBuckets(
        REGISTRATIONS_PER_S / processes, max(1, math.ceil(REGISTRATION_BURST / processes))
    )

    async def register(request: web.Request) -> web.Response:
        decision = limiter.take(request.remote or "")
        if not decision.allowed:
            body = {
                "error": "temporarily_unavailable",
                "error_description": "too many registrations; retry later",
            }
            return web.Response(
                body=orjson.dumps(body),
                status=429,
                content_type="application/json",
                headers={**_NO_STORE, "Retry-After": str(max(1, decision.retry_after_s))},
            )
        try:
            if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
                raise RegistrationError("invalid_client_metadata", "the registration request is too large")
            raw = await request.content.read(MAX_BODY_BYTES + 1)
            if len(raw) > MAX_BODY_BYTES:
                raise RegistrationError("invalid_client_metadata", "the registration request is too large")
            try:
                body = orjson.loads(raw)
            except orjson.JSONDecodeError:
                raise RegistrationError("invalid_client_metadata", "the body is not valid JSON") from None
            metadata = parse_metadata(body, server.scope_map)
        except RegistrationError as err:
            return _answer({"error": err.error, "error_description": err.description}, 400)
        confidential = metadata["token_endpoint_auth_method"] != "none"
        client, secret = await server.register_client(
            metadata["client_name"] or "MCP client", metadata["redirect_uris"], confidential
        )
        answer = {"client_id": client.client_id, "client_id_issued_at": server.now(), **metadata}
        if secret is not None:
            answer |= {"client_secret": secret, "client_secret_expires_at": 0}
        return _answer(answer, 201)

    return register
