"""The Memory Bank sub-application: the plugin's routes under one prefix, with its own error shape.

    POST /upsert-action, /upsert     {documents: [Document]} -> {ids: [document id]}        write:documents
    POST /query-action, /query       {queries: [Query]}      -> {results: [QueryResult]}    read:documents
    DELETE /delete                   {user_id, ids?, filter?, delete_all?} -> {success}     write:documents
    GET /openapi.json, /.well-known/openapi.yaml, /.well-known/ai-plugin.json
    GET|POST /login, POST /exchange  the OAuth2 server (engram/oauth)

Handlers only translate: parse the body (models.py), authenticate (keyauth.py), call `MemoryBank`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import resources

import orjson
from aiohttp import web

from ...context import AppContext
from ...errors import NotAuthenticated
from .documents import MemoryBank
from .errors import error_middleware
from .keyauth import Principal, bearer_token, principal_for_key
from .models import DeleteRequest, QueryRequest, RequestInvalid, UpsertRequest, parse

PREFIX = "/memorybank"
TokenResolver = Callable[[str], Awaitable[Principal | None]]


def _schema_template() -> str:
    return resources.files("engram.compat.memorybank").joinpath("openapi.json").read_text(encoding="utf-8")


def base_url(ctx: AppContext) -> str:
    return ctx.settings.public_url + PREFIX


def openapi_document(ctx: AppContext) -> dict:
    return orjson.loads(_schema_template().replace("{{base_url}}", base_url(ctx)))


def plugin_manifest(ctx: AppContext) -> dict:
    """The retrieval plugin's ai-plugin.json, pointing at engram's own OAuth endpoints and schema."""
    base = base_url(ctx)
    return {
        "schema_version": "v1",
        "name_for_model": "memory_bank",
        "name_for_human": "Memory Bank",
        "description_for_model": "Save and search the user's memories (documents) by natural language.",
        "description_for_human": "Long-term memory for your chats, stored in engram.",
        "auth": {
            "type": "oauth",
            "client_url": f"{base}/login",
            "authorization_url": f"{base}/exchange",
            "authorization_content_type": "application/x-www-form-urlencoded",
            "scope": "read:documents write:documents",
        },
        "api": {"type": "openapi", "url": f"{base}/.well-known/openapi.yaml"},
        "logo_url": f"{ctx.settings.public_url}/favicon.ico",
        "contact_email": "admin@example.invalid",
        "legal_info_url": f"{ctx.settings.public_url}/",
    }


async def _json_body(request: web.Request):
    raw = await request.read()
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise RequestInvalid(
            [
                {
                    "loc": ["body", exc.pos],
                    "msg": f"JSON decode error: {exc.msg}",
                    "type": "value_error.jsondecode",
                }
            ]
        ) from None


def build_memorybank_app(ctx: AppContext, resolvers: list[TokenResolver] | None = None) -> web.Application:
    """The sub-app to mount at PREFIX. `resolvers` turn other bearer tokens (OAuth access tokens) into a
    principal; an engram API key is always accepted."""
    bank = MemoryBank(ctx)
    extra = list(resolvers or [])

    async def authenticate(request: web.Request, scope: str) -> Principal:
        token = bearer_token(request.headers.get("Authorization"))
        principal = None
        for resolve in [*extra, lambda t: principal_for_key(ctx, t)]:
            principal = await resolve(token)
            if principal is not None:
                break
        if principal is None:
            raise NotAuthenticated("Invalid or missing token", "InvalidToken")
        principal.require(scope)
        return principal

    async def upsert(request: web.Request) -> web.Response:
        principal = await authenticate(request, "write")
        body = parse(UpsertRequest, await _json_body(request))
        return web.json_response({"ids": await bank.upsert(principal, body.documents)}, dumps=_dumps)

    async def query(request: web.Request) -> web.Response:
        principal = await authenticate(request, "read")
        body = parse(QueryRequest, await _json_body(request))
        return web.json_response({"results": await bank.query(principal, body.queries)}, dumps=_dumps)

    async def delete(request: web.Request) -> web.Response:
        principal = await authenticate(request, "write")
        body = parse(DeleteRequest, await _json_body(request))
        return web.json_response({"success": await bank.delete(principal, body)}, dumps=_dumps)

    async def openapi(request: web.Request) -> web.Response:
        return web.json_response(openapi_document(ctx), dumps=_dumps)

    async def openapi_yaml(request: web.Request) -> web.Response:
        # JSON is valid YAML 1.2, so the plugin's openapi.yaml can be the same document.
        return web.Response(body=_dumps(openapi_document(ctx)), content_type="text/yaml")

    async def manifest(request: web.Request) -> web.Response:
        return web.json_response(plugin_manifest(ctx), dumps=_dumps)

    app = web.Application(middlewares=[error_middleware])
    for path in ("/upsert-action", "/upsert"):
        app.router.add_post(path, upsert)
    for path in ("/query-action", "/query"):
        app.router.add_post(path, query)
    app.router.add_delete("/delete", delete)
    app.router.add_get("/openapi.json", openapi)
    app.router.add_get("/.well-known/openapi.yaml", openapi_yaml)
    app.router.add_get("/.well-known/ai-plugin.json", manifest)
    return app


def install_memorybank(
    app: web.Application, ctx: AppContext, resolvers: list[TokenResolver] | None = None
) -> None:
    sub = build_memorybank_app(ctx, resolvers)
    app.add_subapp(PREFIX, sub)

    async def root_manifest(request: web.Request) -> web.Response:
        return web.json_response(plugin_manifest(ctx), dumps=_dumps)

    app.router.add_get("/.well-known/ai-plugin.json", root_manifest)


def _dumps(value) -> str:
    return orjson.dumps(value).decode()
