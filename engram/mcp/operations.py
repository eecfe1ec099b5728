"""The MCP tools' work: thin calls into the service layer, answers as plain JSON-able dicts (docs/mcp.md).

No MCP SDK here: `server.py` wraps these in tool functions; tests call them to check the tools' answers
against the service layer. Every operation takes the caller's `McpAccess` first; arguments only narrow it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ..errors import InvalidInput, NotFound
from ..service.documents.service import citation
from ..service.filter_spec import parse_where
from ..service.hybrid import Scope, TextSearch
from ..service.ranking import RankedMemory
from ..service.supersession import supersedes_attrs
from ..store import Memory, MemoryWrite, memory_reads
from ..store.uris import parse_memory_uri
from .access import McpAccess

if TYPE_CHECKING:
    from ..context import AppContext

MODES = ("vector", "hybrid", "keyword")
MAX_RECALL = 50
MAX_PAGE = 100
DEDUP_KEY_PREFIX = "mcp-sha256:"  # an import idempotency key: the same text twice is one memory


def content_key(text: str) -> str:
    return DEDUP_KEY_PREFIX + hashlib.sha256(text.encode("utf-8")).hexdigest()


def memory_view(memory: Memory, access: McpAccess, space_uri: str) -> dict[str, Any]:
    return {
        "uri": memory.uri,
        "space": access.short_id(space_uri),
        "text": memory.text,
        "tags": list(memory.tags),
        "source": memory.source,
        "author": memory.author,
        "createdAt": memory.created_at,
    }


@dataclass(frozen=True)
class Narrowing:
    """recall's filters beyond author/tags/since, and its current-truth and confidence options."""

    until: str | None = None
    any_tags: list[str] | None = None
    exclude_tags: list[str] | None = None
    where: dict[str, Any] | None = None  # attrs predicates (engram/service/filter_spec.py)
    current: bool = False
    min_confidence: float | None = None


def hit_facts(hit: RankedMemory) -> dict[str, Any]:
    """A hit's supersession and explanation as the MCP answer carries them (docs/mcp.md#recall)."""
    why = hit.why
    return {
        "supersedes": [{"uri": r.uri, "basis": r.basis} for r in hit.supersedes],
        "supersededBy": None
        if hit.replaced_by is None
        else {"uri": hit.replaced_by.uri, "basis": hit.replaced_by.basis},
        "why": {
            "similarity": None if why is None or why.similarity is None else round(why.similarity, 4),
            "keyword": None if why is None or why.keyword is None else round(why.keyword, 4),
            "terms": {} if why is None else why.terms,
            "rule": None if why is None else why.rule,
            "confidence": 0.0 if why is None else round(why.confidence, 4),
            "context": None
            if why is None or why.context is None
            else {"uri": why.context.uri, "position": why.context.position, "share": why.context.share},
            "speaker": None
            if why is None or why.speaker is None
            else {"saidBy": why.speaker.said_by, "factor": why.speaker.factor},
        },
    }


class MemoryOperations:
    def __init__(self, ctx: AppContext):
        self.ctx = ctx

    @property
    def services(self):
        return self.ctx.services

    async def remember(
        self,
        access: McpAccess,
        text: str,
        tags: list[str] | None = None,
        source: str | None = None,
        space: str | None = None,
        supersedes: str | None = None,
    ) -> dict[str, Any]:
        if not text or not text.strip():
            raise InvalidInput("text must not be empty", "InvalidText")
        attrs = supersedes_attrs(supersedes)  # an explicit update (engram/service/supersession.py)
        uri = access.write_space(space)
        target = await self.services.spaces.require(uri)
        if supersedes is not None:
            await self._require_replaced(access, uri, supersedes)
        write = MemoryWrite(
            author=target.authority,
            text=text,
            tags=tuple(tags or ()),
            source=source,
            attrs=attrs,
            idempotency_key=content_key(text),
        )
        [record] = await self.services.memories.write(uri, [write])
        return {
            "uri": record.uri,
            "space": access.short_id(uri),
            "duplicate": record.status != "created",
            "status": record.status,
            "indexed": record.indexed,
        }

    async def recall(
        self,
        access: McpAccess,
        query: str,
        spaces: list[str] | None = None,
        tags: list[str] | None = None,
        author: str | None = None,
        since: str | None = None,
        limit: int = 10,
        mode: str = "hybrid",
        narrow: Narrowing | None = None,
    ) -> dict[str, Any]:
        narrow = narrow or Narrowing()
        if mode not in MODES:
            raise InvalidInput(f"mode must be one of {', '.join(MODES)}", "InvalidMode")
        if not 1 <= limit <= MAX_RECALL:
            raise InvalidInput(f"limit must be in 1..{MAX_RECALL}", "InvalidLimit")
        if not query.strip():
            raise InvalidInput("query must not be empty", "InvalidQuery")
        uris = access.read_spaces(spaces)
        found = [await self.services.spaces.find(u) for u in uris]
        targets = [s for s in found if s is not None and not s.deleted]
        if not spaces:
            targets = [s for s in targets if s.config is not None]  # all of them: skip spaces without a model
        # The one engram-chosen ranking, as GPTBots and the console get it (engram/service/ranking.py).
        search = TextSearch(
            query, limit=limit, author=author, tags=tuple(tags or ()), since=since, until=narrow.until,
            tags_any=tuple(narrow.any_tags or ()), tags_none=tuple(narrow.exclude_tags or ()),
            attrs=parse_where(narrow.where), current=narrow.current, min_confidence=narrow.min_confidence,
        )  # fmt: skip
        ranking = await self.services.ranking.run([Scope(s) for s in targets], search, mode)
        results = []
        for hit in ranking.hits:
            view = memory_view(hit.memory, access, parse_memory_uri(hit.memory.uri)[0])
            view["similarity"] = None if hit.similarity is None else round(hit.similarity, 4)
            view["score"] = round(hit.score, 4)
            view.update(hit_facts(hit))
            cited = citation(hit.memory.attrs)
            if cited:
                view["citation"] = cited
            results.append(view)
        facts = ranking.facts
        return {
            "results": results, "spaces": [access.short_id(s.uri) for s in targets], "mode": mode,
            "memories": facts.live, "allowed": facts.allowed, "droppedSuperseded": facts.dropped_superseded,
            "empty": facts.empty,
        }  # fmt: skip

    async def _require_replaced(self, access: McpAccess, space_uri: str, named: str) -> None:
        """The memory `supersedes` names exists and is the caller's: an at:// URI in one of its spaces,
        or a record key in the space written to. MemoryNotFound otherwise, and nothing is written."""
        if named.startswith("at://"):
            await self.services.memories.get(access.memory_space(named), named)
        elif not await self.ctx.store.read(memory_reads.memory_uris_with_rkey, space_uri, named):
            raise NotFound(f"no memory with record key {named!r} in the space written to", "MemoryNotFound")

    async def get_memory(self, access: McpAccess, uri: str) -> dict[str, Any]:
        space = access.memory_space(uri)
        memory = await self.services.memories.get(space, uri)
        return memory_view(memory, access, space)

    async def memory_resource(self, access: McpAccess, decoded_uri: str) -> dict[str, Any]:
        """`get_memory` for a resource read. The SDK hands the URI over percent-decoded, and a did:web with
        a port spells its colon `%3A`, so the canonical URI is found among the memories with its rkey."""
        rkey = decoded_uri.rsplit("/", 1)[-1]
        for uri in access.readable.values():
            if decoded_uri.startswith(unquote(uri) + "/"):
                for candidate in await self.ctx.store.read(memory_reads.memory_uris_with_rkey, uri, rkey):
                    if unquote(candidate) == decoded_uri:
                        return await self.get_memory(access, candidate)
        raise NotFound("no such memory among your spaces", "MemoryNotFound")

    async def list_memories(
        self,
        access: McpAccess,
        space: str | None = None,
        tags: list[str] | None = None,
        author: str | None = None,
        since: str | None = None,
        cursor: str | None = None,
        limit: int = 25,
    ) -> dict[str, Any]:
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidInput(f"limit must be in 1..{MAX_PAGE}", "InvalidLimit")
        uri = access.read_space(space)
        memories, next_cursor = await self.services.memories.list(
            uri, limit=limit, cursor=cursor, author=author, tags=list(tags or ()), since=since
        )
        return {"memories": [memory_view(m, access, uri) for m in memories], "cursor": next_cursor}

    async def forget(self, access: McpAccess, uri: str) -> dict[str, Any]:
        space = access.memory_space(uri, write=True)
        _, author, rkey = parse_memory_uri(uri)
        deleted = await self.services.memories.delete(space, author, rkey)
        return {"uri": uri, "deleted": deleted}

    async def list_spaces(self, access: McpAccess) -> dict[str, Any]:
        spaces = []
        for short, uri in access.visible.items():
            space = await self.services.spaces.find(uri)
            if space is None or space.deleted:
                continue
            status = await self.services.spaces.status(uri)
            model = space.config.active if space.config else None
            spaces.append(
                {
                    "id": short,
                    "name": space.skey,
                    "uri": uri,
                    "model": None
                    if model is None
                    else {"name": model.model, "digest": model.digest, "dims": model.dims},
                    "memories": status.memories,
                    "read": uri in access.readable.values(),
                    "write": uri in access.writable,
                    "default": uri == access.default_write,
                }
            )
        return {"spaces": spaces}
