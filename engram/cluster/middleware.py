"""The aiohttp middleware that sends a space's requests to the node serving the space.

Which requests: those their door declared space-scoped when it registered them (engram/space_scopes.py):
the XRPC methods whose answer comes from the space's index or that act on it, the notifications of a synced
space's host (the holder syncs it), and Memory Bank's searches, routed by their credential's space. Writes
are not among them: any node writes to the shared store and the owner catches up
(docs/scale-out.md#writes-from-any-node); the other shims and MCP are served where they arrive.

Where the space comes from: routing happens *before* auth, from what the declaration finds (the `space`
query parameter, the `space` field of a procedure's JSON body, a shim's credential), because only the owner
should verify the caller: it has the replay caches and rate-limit buckets of the space, and the verified
credential names the same space the request does (a credential for another space is refused by the owner
exactly as it would be by any node). A request with no space found is served here, so the usual error
answers it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from engram.cluster.forwarding import FORWARDED_BY, forward, verified_hop

if TYPE_CHECKING:
    from engram.cluster.node import ClusterNode
    from engram.space_scopes import SpaceScopes

SERVED_BY = "X-Engram-Node"


def cluster_middleware(node: ClusterNode, scopes: SpaceScopes):
    @web.middleware
    async def route_to_owner(request: web.Request, handler) -> web.StreamResponse:
        scope = scopes.get(request.path)
        if scope is None:
            return await handler(request)
        space = await scope.space_of(request)
        if not space:
            return await handler(request)
        # aiohttp keeps a body once read: the handler reads the same bytes again if served here
        body = await request.read() if request.method == "POST" else b""
        return await _serve_or_forward(node, request, handler, space, body, scope.label)

    return route_to_owner


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
