"""The memory graph: a page with the controls, and the JSON the page's script draws (getMemoryGraph's
service function, so the picture shows exactly what the XRPC method answers)."""

from __future__ import annotations

from aiohttp import web

from ..access import require_space, viewer_key
from ..render import render
from ..state import console_state_key
from . import forms

DEFAULT_NODES, MAX_NODES = 150, 500  # getMemoryGraph's own bound
DEFAULT_MIN_SIMILARITY = 0.4  # getMemoryGraph's default
NEIGHBOURS = 3


def _controls(params) -> tuple[int, float]:
    limit = forms.integer(params, "limit", DEFAULT_NODES, 1, MAX_NODES)
    min_similarity = forms.decimal(params, "minSimilarity", DEFAULT_MIN_SIMILARITY, 0.01, 1.0)
    return limit, min_similarity


async def graph_page(request: web.Request) -> web.StreamResponse:
    ctx = request.app[console_state_key].ctx
    space = await require_space(ctx, request[viewer_key], request.query.get("space"))
    limit, min_similarity = _controls(request.query)
    return render(request, "graph.html", {
        "space": space, "limit": limit, "min_similarity": f"{min_similarity:g}", "max_nodes": MAX_NODES,
    })  # fmt: skip


async def graph_data(request: web.Request) -> web.StreamResponse:
    ctx = request.app[console_state_key].ctx
    space = await require_space(ctx, request[viewer_key], request.query.get("space"))
    limit, min_similarity = _controls(request.query)
    graph = await ctx.services.search.graph(
        space, limit=limit, neighbors=NEIGHBOURS, min_similarity=min_similarity
    )
    memory_url = request.app.router["memory"].url_for()
    nodes = [
        {
            "id": str(i),
            "text": m.text,
            "tags": list(m.tags),
            "createdAt": m.created_at,
            "href": str(memory_url.with_query(space=space.uri, uri=m.uri)),
        }
        for i, m in enumerate(graph.nodes)
    ]
    edges = [{"source": str(a), "target": str(b), "similarity": s} for a, b, s in graph.edges]
    return web.json_response({"nodes": nodes, "edges": edges})
