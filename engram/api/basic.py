"""Routes outside the lexicons: health and the service's did:web document."""

from __future__ import annotations

from aiohttp import web

from .. import __version__
from ..context import AppContext
from ..errors import Unavailable


def did_document(ctx: AppContext) -> dict:
    """engram's did:web document: the `#atproto` key it signs with and its syncer/engram service entries.

    The keyring builds the same document it answers with locally, so what engram publishes and what it
    verifies its own signatures against can never differ."""
    return ctx.keyring.document(ctx.settings.service_did).to_json()


def install_basic_routes(app: web.Application, ctx: AppContext) -> None:
    async def health(request: web.Request) -> web.Response:
        if not ctx.ready:
            raise Unavailable("engram is starting or stopping", "NotReady")
        return web.json_response({"version": __version__})

    async def did_json(request: web.Request) -> web.Response:
        return web.json_response(did_document(ctx))

    # _health is registered before the generic /xrpc/{nsid} route so it is not taken for an NSID.
    app.router.add_get("/xrpc/_health", health)
    app.router.add_get("/.well-known/did.json", did_json)
