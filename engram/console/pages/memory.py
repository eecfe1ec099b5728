"""One memory: its text, attrs, URI, CID, dates, and its nearest neighbours in the space."""

from __future__ import annotations

import orjson
from aiohttp import web

from ...errors import EngramError
from ...service.overview import nearest_neighbours
from ..access import require_space, viewer_key
from ..render import render
from ..state import console_state_key
from . import forms

NEIGHBOURS = 8


async def memory_page(request: web.Request) -> web.StreamResponse:
    ctx = request.app[console_state_key].ctx
    space = await require_space(ctx, request[viewer_key], request.query.get("space"))
    memory = await ctx.services.memories.get(space.uri, forms.text(request.query, "uri", 2000))
    neighbours, neighbours_error = [], None
    try:
        neighbours = await nearest_neighbours(ctx.store, ctx.services.search, space, memory, NEIGHBOURS)
    except EngramError as err:  # a busy or loading index: the memory itself still shows
        if err.kind not in ("rate_limited", "unavailable"):
            raise
        neighbours_error = err
    return render(request, "memory.html", {
        "space": space, "memory": memory, "neighbours": neighbours, "neighbours_error": neighbours_error,
        "attrs_json": orjson.dumps(memory.attrs, option=orjson.OPT_INDENT_2).decode() if memory.attrs else "",
    })  # fmt: skip
