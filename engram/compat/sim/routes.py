"""Sim memory routes, both generations side by side, chosen by the request's shape (docs/compat.md "Sim"):

    a `workspaceId` (body field or query parameter)  -> the current generation (current.py)
    otherwise                                         -> the first, `workflowId`-scoped one (translate.py)

    POST   /api/memory                  add messages (append to the conversation with that key)
    GET    /api/memory                  list conversations
    GET    /api/memory/{key}            one conversation, by its key (Sim's `eq(memory.key, id)`)
    DELETE /api/memory/{key}            delete it
    DELETE /api/memory?workspaceId=&conversationId=   delete by query (current generation only)
    PUT    /api/memory/{key}            replace its data (current generation only)

Unlike Sim, every route requires an engram API key: `write` to add, replace or delete, `read` to get or list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web

from ...auth.api_key_grants import authenticate_key
from ...errors import InvalidInput, NotFound
from ..requests import json_response, read_json_object
from . import current, operations
from . import translate as v1
from .params import like_matcher

if TYPE_CHECKING:
    from ...context import AppContext

PATH = "/api/memory"


def _current_query(request: web.Request) -> bool:
    return "workspaceId" in request.query


def _key(request: web.Request) -> str:
    key = request.match_info["key"]
    v1.refuse_nul(key, "id")
    return key


async def _put_body(request: web.Request) -> Any:
    """PUT's body as any JSON value: its contract check comes after, with the route's own messages."""
    try:
        return orjson.loads(await request.read())
    except orjson.JSONDecodeError:
        raise InvalidInput("Invalid JSON in request body") from None


def add_routes(router: web.UrlDispatcher, ctx: AppContext) -> None:
    async def add(request: web.Request) -> web.Response:
        grant = await authenticate_key(ctx.store, request, "write")
        body = await read_json_object(request)
        if "workspaceId" in body:
            parsed = current.parse_add(body)
            messages, _ = await operations.append(
                ctx, grant.primary_space, parsed.scope, parsed.key, parsed.messages
            )
            return json_response(v1.ok(current.record(messages)))
        first = v1.parse_add(body)
        messages, created = await operations.append(
            ctx, grant.primary_space, first.scope, first.key, [first.message]
        )
        return json_response(v1.ok(v1.memory_row(messages)), 201 if created else 200)

    async def list_memories(request: web.Request) -> web.Response:
        grant = await authenticate_key(ctx.store, request, "read")
        if _current_query(request):
            query = request.query
            workspace_id = current.query_text({k: query.getall(k) for k in query}, "workspaceId")
            text = current.query_text({k: query.getall(k) for k in query}, "query")
            limit = current.parse_limit(request.query.get("limit"))
            if not workspace_id:
                raise InvalidInput("workspaceId parameter is required")
            scope = current.item_scope(workspace_id)
            found = await operations.list_all(
                ctx, grant.primary_space, scope, like_matcher(text) if text else None, limit
            )
            return json_response(v1.ok({"memories": [current.record(m) for m in found]}))
        scope = v1.list_scope(request.query.get("workflowId"))
        limit = v1.parse_limit(request.query.get("limit"))
        wanted_type = request.query.get("type")
        text = request.query.get("query")
        rows = []
        if not wanted_type or wanted_type == "agent":  # `if (type) eq(memory.type, type)`: all rows are agent
            found = await operations.list_all(
                ctx, grant.primary_space, scope, like_matcher(text) if text else None, limit
            )
            rows = [v1.memory_row(messages) for messages in found]
        return json_response(v1.ok({"memories": rows}))

    async def get_memory(request: web.Request) -> web.Response:
        grant = await authenticate_key(ctx.store, request, "read")
        key = _key(request)
        if _current_query(request):
            scope = current.item_scope(request.query.get("workspaceId"))
            messages = await operations.get(ctx, grant.primary_space, scope, key)
            return json_response(v1.ok(current.record(messages) if messages else None))
        scope = v1.item_scope(request.query.get("workflowId"))
        messages = await operations.get(ctx, grant.primary_space, scope, key)
        if not messages:
            raise NotFound("Memory not found")
        return json_response(v1.ok(v1.memory_row(messages)))

    async def delete_memory(request: web.Request) -> web.Response:
        grant = await authenticate_key(ctx.store, request, "write")
        key = _key(request)
        if _current_query(request):
            scope = current.item_scope(request.query.get("workspaceId"))
        else:
            scope = v1.item_scope(request.query.get("workflowId"))
        if not await operations.delete(ctx, grant.primary_space, scope, key):
            raise NotFound("Memory not found")
        return json_response(v1.ok({"message": "Memory deleted successfully"}))

    async def delete_by_query(request: web.Request) -> web.Response:
        grant = await authenticate_key(ctx.store, request, "write")
        query = {k: request.query.getall(k) for k in request.query}
        workspace_id = current.query_text(query, "workspaceId")
        conversation_id = current.query_text(query, "conversationId")
        if not workspace_id:
            raise InvalidInput("workspaceId parameter is required")
        if not conversation_id:
            raise InvalidInput("conversationId must be provided")
        scope = current.item_scope(workspace_id)
        count = await operations.delete(ctx, grant.primary_space, scope, conversation_id)
        return json_response(v1.ok(current.delete_answer(count)))

    async def put_memory(request: web.Request) -> web.Response:
        grant = await authenticate_key(ctx.store, request, "write")
        key = _key(request)
        scope, data = current.parse_put(await _put_body(request))
        if not await operations.get(ctx, grant.primary_space, scope, key):
            raise NotFound("Memory not found")
        message = current.agent_message(data)
        messages = await operations.replace_data(ctx, grant.primary_space, scope, key, message)
        if messages is None:  # deleted between the check and the write
            raise NotFound("Memory not found")
        return json_response(v1.ok(current.record(messages)))

    router.add_post(PATH, add)
    router.add_get(PATH, list_memories)
    router.add_delete(PATH, delete_by_query)
    router.add_get(PATH + "/{key}", get_memory)
    router.add_delete(PATH + "/{key}", delete_memory)
    router.add_put(PATH + "/{key}", put_memory)
