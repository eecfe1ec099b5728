"""The Memory Bank routes, all under PREFIX (plus the plugin manifest at the root's /.well-known/):

    POST /upsert-action, /upsert     {documents: [Document]} -> {ids: [document id]}        write:documents
    POST /upsert-file                multipart file, metadata?, user_id? -> {ids: [one id]}  write:documents
    POST /query-action, /query       {queries: [Query]}      -> {results: [QueryResult]}    read:documents
    DELETE /delete                   {user_id, ids?, filter?, delete_all?} -> {success}     write:documents
    GET /openapi.json, /.well-known/openapi.yaml, /.well-known/ai-plugin.json
    GET|POST /login, POST /exchange  the OAuth2 server (engram/oauth), mounted by oauth_routes.py

Handlers only translate: parse the body (models.py), authenticate (keyauth.py), call `MemoryBank`.
"""

from __future__ import annotations

import json
from importlib import resources

import orjson
from aiohttp import web

from ...context import AppContext
from ...errors import TooLarge
from ..requests import json_response
from ..uploads import read_upload
from .documents import MAX_UPSERT_DOCUMENTS, MemoryBank
from .keyauth import TokenResolver, authenticate
from .models import (
    DeleteRequest,
    QueryRequest,
    RequestInvalid,
    UploadFields,
    UpsertRequest,
    field_error,
    parse,
)
from .oauth_routes import access_token_resolver, add_oauth_routes, oauth_server

PREFIX = "/memorybank"
SEARCH_PATHS = (PREFIX + "/query-action", PREFIX + "/query")  # the paths that search an index
# One document request's body (docs/memorybank.md "Limits"): 2,000 chunks of text fit with room to spare.
MAX_REQUEST_BYTES = 4 * 1024 * 1024
LOOP_DECODE_BYTES = 256 * 1024  # bodies this small are decoded on the loop (a few ms at most)


def _schema_template() -> str:
    return resources.files("engram.compat.memorybank").joinpath("openapi.json").read_text(encoding="utf-8")


def openapi_document(base: str) -> dict:
    """The shipped schema (engram/compat/memorybank/openapi.json) with engram's URLs: `base` is where the routes live (absolute, or just PREFIX)."""
    return orjson.loads(_schema_template().replace("{{base_url}}", base))


def base_url(ctx: AppContext) -> str:
    return ctx.settings.public_url + PREFIX


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


async def _read_bounded(request: web.Request) -> bytes:
    """The body, refused with a 413 naming the limit as soon as it is known to exceed MAX_REQUEST_BYTES:
    by its Content-Length before anything is read, else while it streams in (docs/memorybank.md "Limits")."""
    too_large = TooLarge(
        f"a Memory Bank request body may be at most {MAX_REQUEST_BYTES} bytes; split it", "BodyTooLarge"
    )
    if request.content_length is not None and request.content_length > MAX_REQUEST_BYTES:
        raise too_large
    if request.content_length is not None:
        return await request.read()  # aiohttp's own client_max_size also applies
    chunks, size = [], 0
    async for chunk in request.content.iter_chunked(64 * 1024):
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def _refuse_constant(name: str):
    raise orjson.JSONDecodeError(f"{name} is not JSON", name, 0)


def _decode(raw: bytes):
    """JSON as upstream's FastAPI reads it: orjson, or the standard library for the integers orjson cannot
    hold (beyond 64 bits; upstream's json module takes them). Neither accepts NaN or Infinity
    (docs/memorybank.md)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            return json.loads(raw, parse_constant=_refuse_constant)
        except (ValueError, RecursionError):
            pass
        raise


async def _json_body(ctx: AppContext, request: web.Request):
    raw = await _read_bounded(request)
    try:
        # A body near the limit takes ~40 ms to decode (70k tiny documents): off the loop, in the pool.
        return _decode(raw) if len(raw) < LOOP_DECODE_BYTES else await ctx.pool.run(_decode, raw)
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


def upload_fields(fields: dict[str, str]) -> UploadFields:
    """user_id (its own field, else `metadata.user_id`) and the metadata JSON, as 422s in FastAPI's shape.
    Upstream drops metadata it cannot parse and stores the file anyway; engram refuses it, as it refuses an
    unreadable date, rather than file a document under metadata the client did not mean."""
    metadata = None
    raw = fields.get("metadata")
    if raw:
        try:
            metadata = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise field_error(
                ["metadata"], f"JSON decode error: {exc.msg}", "value_error.jsondecode"
            ) from None
        if not isinstance(metadata, dict):
            raise field_error(["metadata"], "value is not a valid dict", "type_error.dict")
    user_id = fields.get("user_id")
    if user_id is None and metadata is not None:
        user_id = metadata.get("user_id")
    body = {"user_id": user_id} if user_id is not None else {}
    if metadata is not None:
        body["metadata"] = metadata
    return parse(UploadFields, body)


def add_routes(router: web.UrlDispatcher, ctx: AppContext) -> None:
    server = oauth_server(ctx)
    add_document_routes(router, ctx, access_token_resolver(server))
    add_oauth_routes(router, ctx, PREFIX, server)


def add_document_routes(
    router: web.UrlDispatcher, ctx: AppContext, oauth: TokenResolver | None = None
) -> None:
    bank = MemoryBank(ctx)

    async def upsert(request: web.Request) -> web.Response:
        grant = await authenticate(ctx, request, ("write",), oauth)
        raw = await _json_body(ctx, request)
        documents = raw.get("documents") if isinstance(raw, dict) else None
        if isinstance(documents, list) and len(documents) > MAX_UPSERT_DOCUMENTS:  # before validating each
            raise TooLarge(
                f"this upsert has {len(documents)} documents; at most {MAX_UPSERT_DOCUMENTS} per request,"
                " split it",
                "TooManyDocuments",
            )
        body = parse(UpsertRequest, raw)
        return json_response({"ids": await bank.upsert(grant, body.documents)})

    async def upsert_file(request: web.Request) -> web.Response:
        grant = await authenticate(ctx, request, ("write",), oauth)
        upload = await read_upload(request, "file", ctx.services.documents.limits.max_bytes)
        if upload.file is None:
            raise field_error(["file"], "field required", "value_error.missing")
        fields = upload_fields(upload.fields)
        return json_response({"ids": await bank.upsert_file(grant, upload, fields.metadata, fields.user_id)})

    async def query(request: web.Request) -> web.Response:
        # openapi.json gives /query-action the write:documents scope: either scope may query (docs/memorybank.md)
        grant = await authenticate(ctx, request, ("read", "write"), oauth)
        body = parse(QueryRequest, await _json_body(ctx, request))
        return json_response({"results": await bank.query(grant, body.queries)})

    async def delete(request: web.Request) -> web.Response:
        grant = await authenticate(ctx, request, ("write",), oauth)
        body = parse(DeleteRequest, await _json_body(ctx, request))
        return json_response({"success": await bank.delete(grant, body)})

    async def openapi(request: web.Request) -> web.Response:
        return json_response(openapi_document(base_url(ctx)))

    async def openapi_yaml(request: web.Request) -> web.Response:
        # JSON is valid YAML 1.2, so the plugin's openapi.yaml can be the same document.
        return web.Response(body=orjson.dumps(openapi_document(base_url(ctx))), content_type="text/yaml")

    async def manifest(request: web.Request) -> web.Response:
        return json_response(plugin_manifest(ctx))

    for path in ("/upsert-action", "/upsert"):
        router.add_post(PREFIX + path, upsert)
    router.add_post(PREFIX + "/upsert-file", upsert_file)
    for path in SEARCH_PATHS:
        router.add_post(path, query)
    router.add_delete(PREFIX + "/delete", delete)
    router.add_get(PREFIX + "/openapi.json", openapi)
    router.add_get(PREFIX + "/.well-known/openapi.yaml", openapi_yaml)
    router.add_get(PREFIX + "/.well-known/ai-plugin.json", manifest)
    router.add_get("/.well-known/ai-plugin.json", manifest)
