"""The spaces page: each visible space with its model, counts, skipped vectors and index state."""

from __future__ import annotations

from aiohttp import web

from ...service.overview import space_overview
from ..access import viewer_key, visible_spaces
from ..render import render
from ..state import console_state_key


async def spaces_page(request: web.Request) -> web.StreamResponse:
    ctx = request.app[console_state_key].ctx
    spaces = await visible_spaces(ctx, request[viewer_key])
    overviews = [await space_overview(ctx.services.spaces, ctx.index, space) for space in spaces]
    return render(request, "spaces.html", {"overviews": overviews})
