"""The token endpoint over HTTP (docs/oauth.md#grants): form or JSON body, client auth by Basic or body."""

from __future__ import annotations

import base64
import binascii
from urllib.parse import unquote

import orjson
from aiohttp import web

from .server import OAuthError, OAuthServer

_NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def oauth_error(err: OAuthError) -> web.Response:
    headers = dict(_NO_STORE)
    if err.status == 401:
        headers["WWW-Authenticate"] = 'Basic realm="oauth"'
    body = orjson.dumps({"error": err.error, "error_description": err.description})
    return web.Response(status=err.status, body=body, content_type="application/json", headers=headers)


def basic_credentials(header: str | None) -> tuple[str | None, str | None]:
    """(client_id, secret) from `Authorization: Basic`, each form-urldecoded (docs/oauth.md#clients)."""
    if not header or not header.lower().startswith("basic "):
        return None, None
    try:
        decoded = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise OAuthError("invalid_client", "malformed Basic credentials", 401) from None
    client_id, sep, secret = decoded.partition(":")
    if not sep:
        raise OAuthError("invalid_client", "malformed Basic credentials", 401)
    return unquote(client_id), unquote(secret)


async def read_form(request: web.Request) -> dict[str, str]:
    if request.content_type == "application/json":
        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError:
            raise OAuthError("invalid_request", "the body is not valid JSON") from None
        if not isinstance(body, dict):
            raise OAuthError("invalid_request", "the body must be an object")
        return {str(k): str(v) for k, v in body.items() if isinstance(v, str | int)}
    form = await request.post()
    return {k: v for k, v in form.items() if isinstance(v, str)}


def token_handler(server: OAuthServer):
    async def token(request: web.Request) -> web.Response:
        try:
            form = await read_form(request)
            client_id, secret = basic_credentials(request.headers.get("Authorization"))
            if client_id is None:
                client_id, secret = form.get("client_id"), form.get("client_secret")
            answer = await server.token(form, client_id, secret)
        except OAuthError as err:
            return oauth_error(err)
        return web.Response(body=orjson.dumps(answer), content_type="application/json", headers=_NO_STORE)

    return token
