"""REST compatibility shims: other memory APIs served over the same store (docs/compat.md).

Each shim is a subpackage of `engram.compat` whose `__init__` defines ``SHIM = Shim(...)``
(`engram.compat.shim.Shim`); `install_shims(app, ctx, scopes)` finds them all and mounts them. Adding a shim:

1. Create ``engram/compat/<name>/`` with pure translate functions (request body -> service call ->
   response body; no aiohttp in them, so golden tests can call them directly) and thin aiohttp handlers.
2. In its ``__init__``: ``SHIM = Shim(name, paths=("/v1/thing",), add_routes=..., render_error=...,
   openapi=...)``. Every request whose path is one of ``paths`` (or below one) gets the shim's own error
   shape for *everything*: domain errors, aiohttp's 404/405/413, bad JSON, and unexpected exceptions
   (a generic 500 in the shim's shape). No XRPC ``{"error", "message"}`` ever leaves a shim's paths.
3. Authenticate with ``grant = await authenticate_key(ctx.store, request, "read")`` (or "write"): a
   `KeyGrant(key_id, primary_space, spaces, scopes)`; ``spaces`` maps each of the key's short space ids
   (what the CLI shows, e.g. a GPTBots ``group_id``) to a hosted space URI. Writes go to
   ``grant.primary_space``. Keys are checked against the store on every request, so a revoked key stops
   at once. A body field naming a space or tenant outside the grant is refused or matches nothing.
4. Call the service layer (``ctx.services...``); raise `engram.errors` domain errors and let the shim's
   ``render_error`` give them the upstream shape. Never call engram's own HTTP API.
5. The OpenAPI description is served at ``/compat/<name>/openapi.json``.
6. Tags a shim files its memories under (to find a tenant's rows) belong to a namespace registered in
   ``engram/store/reserved_tags.py``: no other door may write them, and search text leaves them out.
7. A request that answers an error writes nothing: check everything first, then write in one store
   transaction (``tests/compat/test_atomic_writes.py`` checks every shim write route).
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING

from ..auth.api_key_grants import KeyGrant, authenticate_key
from .errors import shim_error_middleware
from .shim import Shim

if TYPE_CHECKING:
    from aiohttp import web

    from ..context import AppContext
    from ..space_scopes import SpaceScopes

__all__ = ["KeyGrant", "Shim", "authenticate_key", "discover_shims", "install_shims"]


def discover_shims() -> list[Shim]:
    """Every ``engram.compat.<pkg>.SHIM``, by package name (subpackages without one are skipped)."""
    shims = []
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module.ispkg:
            shim = getattr(importlib.import_module(f"{__name__}.{module.name}"), "SHIM", None)
            if isinstance(shim, Shim):
                shims.append(shim)
    return shims


def install_shims(app: web.Application, ctx: AppContext, scopes: SpaceScopes) -> list[Shim]:
    """Mount every shim's routes and the one middleware that gives each shim's paths its own error shape.

    Call after `install_http_basics`: the middleware must sit inside the XRPC error middleware so it
    sees a shim's failures first."""
    shims = discover_shims()
    for shim in shims:
        shim.mount(app, ctx, scopes)
    app.middlewares.append(shim_error_middleware(shims))
    return shims
