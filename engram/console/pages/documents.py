"""A space's ingested documents, and one document's chunks with their citations (docs/documents.md)."""

from __future__ import annotations

from aiohttp import web

from ..access import require_space, viewer_key
from ..render import render
from ..state import console_state_key
from . import forms

PAGE = 100


async def documents_page(request: web.Request) -> web.StreamResponse:
    ctx = request.app[console_state_key].ctx
    space = await require_space(ctx, request[viewer_key], request.query.get("space"))
    after = forms.text(request.query, "cursor", 512) or None
    rows = await ctx.services.documents.list(space.uri, limit=PAGE, after=after)
    cursor = rows[-1].document_id if len(rows) == PAGE else None
    return render(request, "documents.html", {"space": space, "documents": rows, "cursor": cursor})


async def document_page(request: web.Request) -> web.StreamResponse:
    ctx = request.app[console_state_key].ctx
    space = await require_space(ctx, request[viewer_key], request.query.get("space"))
    document_id = forms.text(request.query, "id", 512)
    document = await ctx.services.documents.get(space.uri, document_id)
    chunks = await ctx.services.documents.chunks(space.uri, document_id)
    return render(request, "document.html", {"space": space, "document": document, "chunks": chunks})
