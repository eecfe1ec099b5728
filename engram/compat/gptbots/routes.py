"""`POST /v1/vector/match`: authenticate the key, build the scope from group_ids/data_ids, run the
hybrid search, answer in GPTBots' shape. No reranker model runs; the `X-Engram-Reranker: none` header
says so whatever `rerank_version` named (the order is the fused score's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from ...auth.api_key_grants import KeyGrant, authenticate_key
from ...errors import InvalidInput
from ...service.hybrid import Scope, TextSearch
from ...store import documents as store_documents
from ..requests import json_response, read_json_object
from .translate import MatchRequest, match_item, match_response, parse_match, unknown_groups

if TYPE_CHECKING:
    from ...context import AppContext

PATH = "/v1/vector/match"
RERANKER_HEADER = "X-Engram-Reranker"


async def search_scopes(ctx: AppContext, grant: KeyGrant, request: MatchRequest) -> list[Scope]:
    """The union of the given group_ids (whole spaces) and data_ids (those documents in any of the key's
    spaces); every knowledge base of the key when neither is given."""
    unknown = unknown_groups(request, grant.spaces)
    if unknown:
        raise InvalidInput(f"group_ids: {', '.join(unknown)} is not a knowledge base of this key")
    if request.group_ids is None and request.data_ids is None:
        wanted_spaces = list(grant.spaces.values())
    else:
        wanted_spaces = [grant.spaces[g] for g in request.group_ids or ()]
    # No stored id holds U+0000 (docs/protocol.md#memory-records): such a data_id names no document, and is
    # not sent to a database that cannot take it (PostgreSQL) or compares it cut short (SQLite).
    data_ids = [i for i in request.data_ids or () if "\x00" not in i]
    scopes = []
    for uri in grant.spaces.values():
        space = await ctx.services.spaces.find(uri)
        if space is None or space.deleted:  # a bound space deleted since: the others still answer
            continue
        if uri in wanted_spaces:
            scopes.append(Scope(space))
        elif data_ids:
            rows = await ctx.store.read(store_documents.document_rows, uri, data_ids)
            if rows:
                scopes.append(Scope(space, tuple(rows)))
    return scopes


def add_routes(router: web.UrlDispatcher, ctx: AppContext) -> None:
    async def match(request: web.Request) -> web.Response:
        grant = await authenticate_key(ctx.store, request, "read")
        body = parse_match(await read_json_object(request))
        scopes = await search_scopes(ctx, grant, body)
        query = TextSearch(body.prompt, limit=body.top_k, weight=body.embedding_rate)
        # engram's one ranking pipeline at every rate, as MCP recall and the console (engram/service/ranking.py)
        rate = body.embedding_rate
        mode = "vector" if rate == 1.0 else "keyword" if rate == 0.0 else "hybrid"
        hits = (await ctx.services.ranking.run(scopes, query, mode, rate if mode == "hybrid" else None)).hits
        items = [match_item(h) for h in hits]
        return json_response(match_response(items, body.doc_correlation), headers={RERANKER_HEADER: "none"})

    router.add_post(PATH, match)
