"""Sim memory routes: `POST|GET /api/memory`, `GET|DELETE /api/memory/{id}` (v1 shapes, key required)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from ..keys import authenticate_key
from ..requests import json_response, read_json_object
from . import operations
from .translate import memory_row, ok, parse_add, parse_limit, require_workflow

if TYPE_CHECKING:
    from ...context import AppContext

PATH = "/api/memory"


def add_routes(router: web.UrlDispatcher, ctx: AppContext) -> None:
    async def add(request: web.Request) -> web.Response:
        grant = await authenticate_key(ctx, request, "write")
        body = parse_add(await read_json_object(request))
        messages, created = await operations.append(ctx, grant.primary_space, body)
        return json_response(ok(memory_row(messages)), 201 if created else 200)

    async def list_memories(request: web.Request) -> web.Response:
        grant = await authenticate_key(ctx, request, "read")
        workflow_id = require_workflow(request.query.get("workflowId"))
        limit = parse_limit(request.query.get("limit"))
        wanted_type = request.query.get("type")
        rows = []
        if wanted_type in (None, "", "agent"):  # every memory this shim writes is of type agent
            found = await operations.list_all(
                ctx, grant.primary_space, workflow_id, request.query.get("query"), limit
            )
            rows = [memory_row(messages) for messages in found]
        return json_response(ok({"memories": rows}))

    async def get_memory(request: web.Request) -> web.Response:
        grant = await authenticate_key(ctx, request, "read")
        workflow_id = require_workflow(request.query.get("workflowId"))
        messages = await operations.get(ctx, grant.primary_space, workflow_id, request.match_info["id"])
        return json_response(ok(memory_row(messages)))

    async def delete_memory(request: web.Request) -> web.Response:
        grant = await authenticate_key(ctx, request, "write")
        workflow_id = require_workflow(request.query.get("workflowId"))
        await operations.delete(ctx, grant.primary_space, workflow_id, request.match_info["id"])
        return json_response(ok({"message": "Memory deleted successfully"}))

    router.add_post(PATH, add)
    router.add_get(PATH, list_memories)
    router.add_get(PATH + "/{id}", get_memory)
    router.add_delete(PATH + "/{id}", delete_memory)
