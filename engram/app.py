"""`await create_app(settings)`: the composition root, an async app factory.

Opens every part first (`engram.lifecycle.open_context`: in order, closed in reverse when the app is
cleaned up), then registers the XRPC handlers, the plain routes and the other doors over the whole context,
and installs the middlewares. Nothing here is global: tests build as many apps as they like, each with its
own data dir.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING

from aiohttp import web

from . import __version__
from .api import register_all
from .api.basic import install_basic_routes
from .app_keys import context_key, xrpc_key
from .compat import install_shims
from .config import Settings
from .console import install_console
from .lifecycle import open_context
from .metrics import Metrics
from .serving import runner as serving
from .serving.body_deadline import body_deadline_middleware
from .space_scopes import SpaceScopes, space_scopes_key
from .xrpc.lexicons import LEXICON_DIR, LexiconRegistry
from .xrpc.middleware import install_http_basics
from .xrpc.server import XrpcServer
from .xrpc.validate import precompile

if TYPE_CHECKING:
    from aiohttp.abc import AbstractResolver

log = logging.getLogger("engram")


async def create_app(
    settings: Settings,
    *,
    lexicon_dir: Path | Traversable = LEXICON_DIR,
    outbound_resolver: AbstractResolver | None = None,
) -> web.Application:
    """Open every part, build the context whole, then register the doors over it; the parts close when
    the app is cleaned up, after every door's own cleanup. `outbound_resolver`: name resolution for the
    outbound client (tests point names at their loopback fakes, docs/security.md#outbound-requests)."""
    registry = LexiconRegistry.load(lexicon_dir)
    precompile(registry)  # build every method's checks now, not on the first request
    metrics = Metrics(set(registry.methods()))
    parts = contextlib.AsyncExitStack()
    try:
        ctx = await parts.enter_async_context(
            open_context(
                settings,
                registry=registry,
                metrics=metrics,
                network=True,
                outbound_resolver=outbound_resolver,
            )
        )
        if settings.cluster:
            # Cluster mode (engram/cluster, docs/scale-out.md): requests for a space go to the node holding
            # its lease. The node starts after the service's parts (it needs the index manager) and stops
            # before them.
            from .cluster.node import ClusterNode

            ctx.cluster = await parts.enter_async_context(ClusterNode.running(ctx))
    except BaseException:
        await parts.aclose()
        raise

    http = settings.serving  # ENGRAM_MAX_BODY_BYTES, the timeouts, the connection cap (engram/serving)
    app = web.Application(
        client_max_size=http.max_body_bytes, handler_args=serving.handler_args(http, registry)
    )
    app.cleanup_ctx.append(_serving(parts))  # first, so closed last: the doors' cleanups run before it
    app.middlewares.append(metrics.middleware())  # outermost: sees the final status of every answer
    install_http_basics(app)
    app.middlewares.append(body_deadline_middleware(http.body_timeout_ms / 1000))  # inside the errors
    xrpc = XrpcServer(
        registry, max_body_bytes=http.max_body_bytes, validate_every_output=settings.validate_output
    )
    # Each door declares the requests that are for one space as it registers them (engram/space_scopes.py).
    scopes = app[space_scopes_key] = SpaceScopes()
    app[context_key] = ctx
    app[xrpc_key] = xrpc
    register_all(xrpc, ctx)
    install_basic_routes(app, ctx)
    # REST compatibility shims (engram/compat/): their routes, and their own error shapes on their paths.
    install_shims(app, ctx, scopes)
    xrpc.install(app, scopes)
    install_console(app, ctx)  # the web console under /console/ (engram/console/)
    # MCP (engram/mcp/): streamable HTTP at /mcp and its OAuth endpoints. Imported here: the SDK takes
    # ~0.5 s to import, which the local CLI commands (which build no app) should not pay.
    from .mcp.http import install_mcp

    install_mcp(app, ctx)
    if ctx.cluster is not None:
        from .cluster.middleware import cluster_middleware

        # inside the error middleware: errors get their shape; reads the doors' declarations
        app.middlewares.append(cluster_middleware(ctx.cluster, scopes))
    return app


def _serving(parts: contextlib.AsyncExitStack) -> Callable[[web.Application], AsyncIterator[None]]:
    async def serving(app: web.Application) -> AsyncIterator[None]:
        ctx = app[context_key]
        try:
            ctx.ready = True
            log.info(
                "engram ready",
                extra={
                    "fields": {
                        "version": __version__,
                        "did": ctx.settings.service_did,
                        "unbuilt": sorted(app[xrpc_key].unbuilt()),
                        # uvloop or asyncio (ENGRAM_EVENT_LOOP): which one really runs, not what was asked for
                        "event_loop": type(asyncio.get_running_loop()).__module__.partition(".")[0],
                    }
                },
            )
            yield
            ctx.ready = False
        finally:
            await parts.aclose()

    return serving
