"""`Shim`: one REST compatibility API (its paths, routes, error renderer and OpenAPI description)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from ..context import AppContext
    from ..errors import EngramError
    from ..space_scopes import SpaceOf, SpaceScopes


@dataclass(frozen=True)
class Shim:
    name: str  # short, lowercase: also the OpenAPI path /compat/<name>/openapi.json
    paths: tuple[str, ...]  # exact paths or prefixes this shim owns ("/v1/vector" owns "/v1/vector/...")
    add_routes: Callable[[web.UrlDispatcher, AppContext], None]
    # Turns any failure on the shim's paths into the upstream API's error answer. HTTP-level failures
    # arrive as domain errors too (404 -> NotFound, 405 -> MethodNotAllowed, 413 -> TooLarge, ...).
    render_error: Callable[[EngramError], web.StreamResponse]
    openapi: Callable[[], dict[str, Any]] | None = None
    # The shim's paths whose requests are for one space, and how to find it before authentication (a
    # cluster serves them on the space's holder: engram/space_scopes.py).
    space_scoped: Callable[[AppContext], Mapping[str, SpaceOf]] | None = None

    @property
    def openapi_path(self) -> str:
        return f"/compat/{self.name}/openapi.json"

    @cached_property
    def _owned(self) -> tuple[frozenset[str], tuple[str, ...]]:
        """The exact paths and the prefixes `owns` matches, built once: the walk ran on every request."""
        return frozenset((*self.paths, self.openapi_path)), tuple(p.rstrip("/") + "/" for p in self.paths)

    def owns(self, path: str) -> bool:
        exact, prefixes = self._owned
        return path in exact or path.startswith(prefixes)

    def mount(self, app: web.Application, ctx: AppContext, scopes: SpaceScopes) -> None:
        self.add_routes(app.router, ctx)
        if self.space_scoped is not None:
            for path, space_of in self.space_scoped(ctx).items():
                scopes.declare(path, space_of)
        if self.openapi is not None:
            describe = self.openapi

            async def openapi(request: web.Request) -> web.Response:
                return web.json_response(describe())

            app.router.add_get(self.openapi_path, openapi)
