"""API keys, for the operator: create (the token is shown once, on the answer to the POST), list, revoke.

Grants for hosted spaces belong on this page too once the space-host work lands (see keys.html)."""

from __future__ import annotations

from aiohttp import web

from ...errors import InvalidInput
from ...service import apikeys
from ..access import require_operator, viewer_key, visible_spaces
from ..render import render, see_other
from ..state import console_state_key
from . import forms

SCOPES = ("read", "write")


async def _page(request: web.Request, *, created=None, token=None, status: int = 200) -> web.StreamResponse:
    ctx = request.app[console_state_key].ctx
    viewer = request[viewer_key]
    require_operator(viewer)
    hosted = [s for s in await visible_spaces(ctx, viewer) if s.kind == "hosted"]
    return render(request, "keys.html", {
        "keys": await apikeys.list_api_keys(ctx.store), "hosted": hosted, "scopes": SCOPES,
        "created": created, "token": token, "revoked": request.query.get("revoked", ""),
    }, status=status)  # fmt: skip


async def keys_page(request: web.Request) -> web.StreamResponse:
    return await _page(request)


async def create_key(request: web.Request) -> web.StreamResponse:
    require_operator(request[viewer_key])
    ctx = request.app[console_state_key].ctx
    form = await request.post()
    scopes = [s for s in form.getall("scope", []) if s in SCOPES]
    key, token = await apikeys.create_api_key(
        ctx.store, forms.text(form, "space", 2000), scopes, forms.text(form, "label", 200)
    )
    # Rendered on the POST's own answer (no redirect): the token never appears in a URL or a later page.
    return await _page(request, created=key, token=token, status=201)


async def revoke_key(request: web.Request) -> web.StreamResponse:
    require_operator(request[viewer_key])
    ctx = request.app[console_state_key].ctx
    form = await request.post()
    key_id = forms.integer(form, "id", 0, 1, 2**62)
    if not key_id:
        raise InvalidInput("which key? the form carries no id")
    key = await apikeys.revoke_api_key(ctx.store, key_id)
    await request.app[console_state_key].sessions.end_key(key.id)
    return see_other(str(request.app.router["keys"].url_for().with_query(revoked=str(key.id))))
