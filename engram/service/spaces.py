"""Hosted spaces: create, configure, list, inspect and delete."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..store import ModelSpec, Space, SpaceStatus
from ..store import queries as store_queries
from ..store import spaces as store_spaces
from ..store.uris import is_did, is_record_key, space_uri
from ..xrpc.errors import InvalidRequestError

if TYPE_CHECKING:
    from ..context import AppContext

SPACE_TYPE = "garden.engram.space"


class SpaceService:
    def __init__(self, ctx: AppContext):
        self.ctx = ctx

    @property
    def store(self):
        return self.ctx.store

    def default_model(self) -> ModelSpec | None:
        embedder = self.ctx.embedder
        return ModelSpec(embedder.name, embedder.digest, embedder.dims) if embedder is not None else None

    def resolve_uri(self, space: str) -> str:
        """A space URI, or a bare name (skey) of a hosted space under engram's own DID."""
        if space.startswith("at://"):
            return space
        if not is_record_key(space):
            raise InvalidRequestError(f"not a space URI or space name: {space!r}")
        return space_uri(self.ctx.settings.service_did, space)

    async def create_hosted(
        self,
        name: str,
        *,
        authority: str | None = None,
        model: ModelSpec | None = None,
        document_prefix: str = "",
        query_prefix: str = "",
    ) -> Space:
        """A hosted space under `authority` (default: engram's own DID), configured with `model` (default:
        the hosted embedder's model, so text search works out of the box)."""
        authority = authority or self.ctx.settings.service_did
        if not is_did(authority):
            raise InvalidRequestError(f"authority must be a DID, got {authority!r}")
        if not is_record_key(name):
            raise InvalidRequestError(
                f"space name {name!r} is not a valid record key (letters, digits and . _ : ~ -, up to 512)"
            )
        uri = space_uri(authority, name)
        model = model or self.default_model()

        def create(conn):
            space = store_spaces.create_space(conn, uri, "hosted")
            if model is not None:
                space = store_spaces.set_config(
                    conn, uri, model, document_prefix=document_prefix, query_prefix=query_prefix
                )
            return space

        return await self.store.write(create)

    async def configure(
        self,
        uri: str,
        model: ModelSpec,
        *,
        document_prefix: str = "",
        query_prefix: str = "",
        next: ModelSpec | None = None,
    ) -> Space:
        return await self.store.write(
            store_spaces.set_config,
            uri,
            model,
            document_prefix=document_prefix,
            query_prefix=query_prefix,
            next=next,
        )

    async def get(self, uri: str) -> Space | None:
        return await self.store.read(store_spaces.get_space, uri)

    def lookup(self, uri: str) -> Space | None:
        """The same as `get`, as a point read on the calling thread (the per-request auth step uses it:
        a unique-key lookup is cheaper than the thread hop `get` pays)."""
        return self.ctx.direct_reads.run(store_spaces.get_space, uri)

    async def require(self, uri: str) -> Space:
        """The live space or 400 `UnknownSpace`."""
        return await self.store.read(store_spaces.require_space, uri)

    async def list(self) -> list[Space]:
        return await self.store.read(store_spaces.list_spaces)

    async def status(self, uri: str) -> SpaceStatus:
        return await self.store.read(store_queries.space_status, uri)

    async def delete(self, uri: str) -> bool:
        deleted = await self.store.write(store_spaces.delete_space, uri)
        if self.ctx.index is not None:
            await self.ctx.index.drop(uri)
        return deleted
