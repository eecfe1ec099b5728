"""The web console: server-rendered pages under `/console/` over the same services as the API.

`install_console(app, ctx)` mounts it as a sub-application (its middleware and headers apply to its own
pages only) and sends `/` there. Pages never call engram's HTTP API: they call `ctx.services` directly,
so a page costs what the service call behind it costs. See README "Web console".
"""

from __future__ import annotations

from aiohttp import web

from ..context import AppContext
from .routes import build_console_app
from .state import console_state_key

PREFIX = "/console"


def install_console(app: web.Application, ctx: AppContext) -> None:
    async def to_console(request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(PREFIX + "/")

    app.router.add_get("/", to_console)
    app.router.add_get(PREFIX, to_console)
    console = build_console_app(ctx)
    app[console_state_key] = console[console_state_key]  # the same state, reachable from the main app
    app.add_subapp(PREFIX, console)
