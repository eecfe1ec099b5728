"""The aiohttp middleware that sends a space's requests to the node serving the space.

Which requests: the XRPC methods whose answer comes from the space's index or that act on it
(`SPACE_METHODS`), and the notifications of a synced space's host, since the holder syncs it. Writes are
not among them: any node writes to the shared store and the owner catches up
(docs/scale-out.md#writes-from-any-node). Memory Bank searches are routed by their credential's space
(`shim_routing.py`); the other shims and MCP are served where they arrive (documented).

Where the space comes from: routing happens *before* auth, from the `space` query parameter (queries) or
the `space` field of the JSON body (procedures), because only the owner should verify the caller: it has
the replay caches and rate-limit buckets of the space, and the verified credential names the same space the
request does (a credential for another space is refused by the owner exactly as it would be by any node).
A request with no parseable space is served here, so the usual error answers it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson
from aiohttp import web

from engram.cluster.forwarding import FORWARDED_BY, forward, verified_hop
from engram.cluster.shim_routing import SEARCH_PATHS, bearer_space
from engram.compat.keys import bearer_token
from engram.xrpc.server import RAW_BODY

if TYPE_CHECKING:
    from engram.cluster.node import ClusterNode
    from engram.context import AppContext

QUERY_METHODS = frozenset(
    {
        "garden.engram.searchMemories",
        "garden.engram.listMemories",
        "garden.engram.getMemory",
        "garden.engram.getMemoryGraph",
        "garden.engram.getSpaceStatus",
        "garden.engram.exportSpace",
    }
)
PROCEDURE_METHODS = frozenset(
    {
        "garden.engram.warmSpace",
        "garden.engram.admin.reindexSpace",
        # A synced space is synced by its holder (engram/sync/syncer.py): its host's notifications go there.
        "com.atproto.space.notifyWrite",
        "com.atproto.space.notifySpaceDeleted",
    }
)
SPACE_METHODS = QUERY_METHODS | PROCEDURE_METHODS
SERVED_BY = "X-Engram-Node"
_MAX_ROUTED_BODY = 64 * 1024  # warmSpace/reindexSpace bodies are a few hundred bytes


def cluster_middleware(ctx: AppContext):
    @web.middleware
    async def route_to_owner(request: web.Request, handler) -> web.StreamResponse:
        node: ClusterNode | None = ctx.cluster
        if node is None:
            return await handler(request)
        if request.path in SEARCH_PATHS:
            return await _route_shim_search(ctx, node, request, handler)
        nsid = request.path[len("/xrpc/") :] if request.path.startswith("/xrpc/") else ""
        if nsid not in SPACE_METHODS:
            return await handler(request)
        body = b""
        if nsid in PROCEDURE_METHODS:
            if request.method != "POST" or (request.content_length or 0) > _MAX_ROUTED_BODY:
                return await handler(request)  # the XRPC runtime answers the wrong method or size
            body = await request.read()
            request[RAW_BODY] = body  # the pipeline reads the body from here (the stream is consumed)
            space = _space_in_body(body)
        else:
            space = request.query.get("space")
        if not space:
            return await handler(request)
        return await _serve_or_forward(node, request, handler, space, body, nsid)

    return route_to_owner


async def _route_shim_search(ctx: AppContext, node: ClusterNode, request: web.Request, handler):
    """A Memory Bank search goes to the holder of its key's primary space (engram/cluster/shim_routing.py)."""
    token = bearer_token(request)
    space = await ctx.store.point_read(bearer_space, token) if token and request.method == "POST" else None
    if space is None:
        return await handler(request)  # no usable credential: the shim's own 401 answers it here
    body = await request.read()  # aiohttp keeps it: the handler reads the same bytes again if served here
    return await _serve_or_forward(node, request, handler, space, body, request.path)


async def _serve_or_forward(
    node: ClusterNode, request: web.Request, handler, space: str, body: bytes, label: str
) -> web.StreamResponse:
    # Only a hop another node signed counts as forwarded: a client's own header must not pin an unleased
    # space to the node it chose (docs/scale-out.md#forwarding).
    hop = verified_hop(
        node.hop_key, request.headers.get(FORWARDED_BY), request.method, request.raw_path, body
    )
    route = await node.ownership.route(space, forwarded=hop is not None)
    if route.local:
        response = await handler(request)
        if not response.prepared:  # which node answered, for operators (and the cluster tests)
            response.headers[SERVED_BY] = node.ownership.node_id
        return response
    node.metrics.forwards.labels(label).inc()
    try:
        return await forward(node.session, route.url, request, body, node.ownership.node_id, node.hop_key)
    except Exception:
        node.metrics.forward_failures.inc()
        node.ownership.forget_holder(space)
        raise


def _space_in_body(body: bytes) -> str | None:
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    space = parsed.get("space") if isinstance(parsed, dict) else None
    return space if isinstance(space, str) else None
