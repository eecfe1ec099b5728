"""create_app(settings): the composition root.

Builds every part in one cleanup context (opened in order, closed in reverse), registers the XRPC handlers
and the plain routes, and installs the middlewares. Nothing here is global: tests build as many apps as
they like, each with its own data dir.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from importlib.resources.abc import Traversable
from pathlib import Path

from aiohttp import web

from . import __version__
from .api import register_all
from .api.basic import install_basic_routes
from .app_keys import context_key, xrpc_key
from .compat import install_shims
from .config import Settings
from .console import install_console
from .context import AppContext
from .metrics import Metrics
from .serving import runner as serving
from .serving.body_deadline import body_deadline_middleware
from .workers import WorkerPool
from .xrpc.lexicons import LEXICON_DIR, LexiconRegistry
from .xrpc.middleware import install_http_basics
from .xrpc.server import XrpcServer
from .xrpc.validate import precompile

log = logging.getLogger("engram")


def create_app(settings: Settings, *, lexicon_dir: Path | Traversable = LEXICON_DIR) -> web.Application:
    registry = LexiconRegistry.load(lexicon_dir)
    precompile(registry)  # build every method's checks now, not on the first request
    app = web.Application(
        client_max_size=settings.max_body_bytes, handler_args=serving.handler_args(settings, registry)
    )
    ctx = AppContext(settings=settings, registry=registry, pool=WorkerPool(settings.workers))
    ctx.metrics = Metrics(set(registry.methods()))
    app.middlewares.append(ctx.metrics.middleware())  # outermost: sees the final status of every answer
    install_http_basics(app)
    app.middlewares.append(body_deadline_middleware(settings.body_timeout_ms / 1000))  # inside the errors
    xrpc = XrpcServer(
        registry, max_body_bytes=settings.max_body_bytes, validate_every_output=settings.validate_output
    )
    app[context_key] = ctx
    app[xrpc_key] = xrpc
    register_all(xrpc, ctx)
    install_basic_routes(app, ctx)
    # REST compatibility shims (engram/compat/): their routes, and their own error shapes on their paths.
    install_shims(app, ctx)
    xrpc.install(app)
    install_console(app, ctx)  # the web console under /console/ (engram/console/)
    app.cleanup_ctx.append(_lifecycle)
    # MCP (engram/mcp/): streamable HTTP at /mcp and its OAuth endpoints; installed after _lifecycle so
    # its sessions close before the store does. Imported here: the SDK takes ~0.5 s to import, which the
    # local CLI commands (which build no app) should not pay.
    from .mcp.http import install_mcp

    install_mcp(app, ctx)
    if settings.cluster:
        _install_cluster(app, ctx)
    return app


def _install_cluster(app: web.Application, ctx: AppContext) -> None:
    """Cluster mode (engram/cluster, docs/scale-out.md): requests for a space go to the node holding its
    lease. The node starts after the service's parts (it needs the index manager) and stops before them."""
    from .cluster.middleware import cluster_middleware
    from .cluster.node import ClusterNode

    app.middlewares.append(cluster_middleware(ctx))  # inside the error middleware: errors get their shape

    async def cluster_node(app: web.Application) -> AsyncIterator[None]:
        async with ClusterNode.running(ctx) as node:
            ctx.cluster = node
            yield
            ctx.cluster = None

    app.cleanup_ctx.append(cluster_node)


async def _lifecycle(app: web.Application) -> AsyncIterator[None]:
    from .lifecycle import open_parts

    ctx = app[context_key]
    async with open_parts(ctx):
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
