"""Hosted spaces: create, configure, list, inspect and delete."""

from __future__ import annotations

import builtins
import time
from typing import TYPE_CHECKING

from ..embed.hosted import members
from ..errors import InvalidInput, UnknownSpace
from ..identifiers import is_did, is_record_key, space_authority
from ..store import ModelSpec, Space, SpaceStatus, memory_reads
from ..store import notify_registrations as store_registrations
from ..store import spaces as store_spaces
from ..store.uris import space_uri

# Spaces `find` remembers (a few hundred bytes each); past it the oldest is dropped. Any write anywhere
# invalidates them all at once, so the cache only ever saves reads between writes.
_FOUND_MAX = 4096

if TYPE_CHECKING:
    from ..embed.base import Embedder
    from ..search.manager import IndexManager
    from ..spacehost.write_notifier import WriteNotifier
    from ..store.database import Store
    from ..store.direct_reads import DirectReader

SPACE_TYPE = "garden.engram.space"


class SpaceService:
    def __init__(
        self,
        store: Store,
        direct_reads: DirectReader,
        index: IndexManager | None,
        *,
        service_did: str,
        embedder: Embedder | None,
        notifier: WriteNotifier | None = None,
    ):
        self.store = store
        self.direct_reads = direct_reads
        self.index = index
        self.service_did = service_did  # the authority of spaces named by a bare name
        self.embedder = embedder  # its model is a new space's default
        self.notifier = notifier  # tells registered syncers of a hosted space's deletion (server only)
        # `find`'s answers by URI, each with the store's change count read before it (SQLite only)
        self._found: dict[str, tuple[int, Space | None]] = {}
        # `require_for_write`'s, each with the count that space-scoped writes leave alone (`keys_value`)
        self._settled: dict[str, tuple[int, Space]] = {}

    def default_model(self) -> ModelSpec | None:
        embedder = self.embedder
        return ModelSpec(embedder.name, embedder.digest, embedder.dims) if embedder is not None else None

    def hosted_model(self, name: str) -> ModelSpec:
        """The model of the loaded embedder called `name` (one of ENGRAM_EMBEDDER's list), for a space
        created or configured with a model name only (docs/embedders.md#several-models)."""
        found = next((e for e in members(self.embedder) if e.name == name), None)
        if found is None:
            names = ", ".join(e.name for e in members(self.embedder)) or "none"
            raise InvalidInput(f"this service runs no model named {name!r} (it runs: {names}); "
                               "give --digest and --dims for a model embedded elsewhere", "ModelNotHosted")  # fmt: skip
        return ModelSpec(found.name, found.digest, found.dims)

    def resolve_uri(self, space: str) -> str:
        """A space URI, or a bare name (skey) of a hosted space under engram's own DID."""
        if space.startswith("at://"):
            if space_authority(space) is None:
                raise InvalidInput(f"not a space URI: {space[:200]!r}")
            return space
        if not is_record_key(space):
            raise InvalidInput(f"not a space URI or space name: {space!r}")
        return space_uri(self.service_did, space)

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
        authority = authority or self.service_did
        if not is_did(authority):
            raise InvalidInput(f"authority must be a DID, got {authority!r}")
        if not is_record_key(name):
            raise InvalidInput(
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
        model: ModelSpec | None = None,
        *,
        next: ModelSpec | None = None,
        clear_next: bool = False,
        document_prefix: str | None = None,
        query_prefix: str | None = None,
    ) -> Space:
        """Merge a change into the space's config; whatever is not given keeps its current value.

        `model` replaces the active model, `next` sets the model being migrated to, `clear_next` drops a
        pending next model (with `model` too: switch the active model and drop the migration). The one
        merge every front door uses (configureSpace, `engram space config`), read and written in one
        transaction so two concurrent changes cannot lose each other's fields."""
        if clear_next and next is not None:
            raise InvalidInput("give next or clearNext, not both")

        def merge(conn) -> Space:
            current = store_spaces.require_space(conn, uri).config
            active = model or (current.active if current else None)
            if active is None:
                raise InvalidInput("the space has no model yet: set its model first", "NoModel")
            return store_spaces.set_config(
                conn,
                uri,
                active,
                document_prefix=_given_or(document_prefix, current.document_prefix if current else ""),
                query_prefix=_given_or(query_prefix, current.query_prefix if current else ""),
                next=None if clear_next else next or (current.next if current else None),
            )

        return await self.store.write(merge)

    # The space getter: `find` (the space, deleted or not, or None) and `require` (the live space or
    # `UnknownSpace`), both answered from one cache that the store's change counter keeps live.

    async def find(self, uri: str) -> Space | None:
        """The space `uri` (live or deleted), or None. A point read inline where it is cheaper than a thread
        hop (SQLite: one statement, so no BEGIN/ROLLBACK around it, each of which released and re-took the
        GIL on the loop; docs/benchmarks.md#throughput), on a reader thread where it is a network round trip
        (PostgreSQL, docs/scale-out.md#the-store-on-postgresql). The answer is remembered until the store's
        change counter moves (docs/internals.md#space-cache): on SQLite any process's commit moves it,
        and there is then no SQLite call on the loop, whose GIL release let worker threads in ahead of the
        request; on PostgreSQL this process's commits and the notifications of every other process's
        changes to spaces and API keys move it (docs/scale-out.md#point-reads)."""
        changes = self.store.changes
        version = -1 if changes is None else changes.value()  # read before the row: change_counter.py
        if version >= 0:
            cached = self._found.get(uri)
            if cached is not None and cached[0] == version:
                return cached[1]
        if self.store.point_reads_on_loop:
            space = self.direct_reads.statement(store_spaces.get_space, uri)
        else:  # PostgreSQL: its counter is fed by notifications (docs/scale-out.md#point-reads)
            space = await self.store.read_statement(store_spaces.get_space, uri)
        if version >= 0:
            if len(self._found) >= _FOUND_MAX:
                del self._found[next(iter(self._found))]  # the oldest entry
            self._found[uri] = (version, space)
        return space

    async def require_for_write(self, uri: str) -> Space:
        """`require` for preparing a memory write before its transaction (embedding it with the space's
        model): the answer is remembered across space-scoped writes (the change counter's `keys_value`,
        engram/store/change_counter.py), so under a write load it is not read again per request, and its
        `generation` and tombstone watermark may be older than the store's. Everything else in it (kind,
        authority, model, deletion) only changes by unscoped writes, which do move that count. The write's
        own transaction reads the space again."""
        changes = self.store.changes
        version = -1 if changes is None else changes.keys_value()  # read before the row
        if version >= 0:
            cached = self._settled.get(uri)
            if cached is not None and cached[0] == version:
                return cached[1]
        space = await self.require(uri)
        if version >= 0:
            if len(self._settled) >= _FOUND_MAX:
                del self._settled[next(iter(self._settled))]  # the oldest entry
            self._settled[uri] = (version, space)
        return space

    async def require(self, uri: str, *, kind: str | None = None, refusal: str | None = None) -> Space:
        """The live space `uri` (of `kind`, when given), from `find`; otherwise `UnknownSpace` (the one
        error for "no such live space", every door's), with `refusal` as its message when given."""
        space = await self.find(uri)
        if space is None or space.deleted or (kind is not None and space.kind != kind):
            raise UnknownSpace(refusal or f"unknown space: {uri}")
        return space

    async def list(self) -> list[Space]:
        return await self.store.read(store_spaces.list_spaces)

    async def page(self, after: str = "", limit: int = 100) -> builtins.list[SpaceStatus]:  # `list`: a method
        """One page of live spaces with their counts (one query), after the space URI `after`."""
        return await self.store.read(memory_reads.space_page, after, limit)

    async def status(self, uri: str) -> SpaceStatus:
        return await self.store.read(memory_reads.space_status, uri)

    async def delete(self, uri: str) -> bool:
        notifier = self.notifier
        space = await self.find(uri) if notifier is not None else None
        registrations = (
            await self.store.read(store_registrations.live_registrations, uri, time.time())
            if space is not None and space.kind == "hosted"
            else []
        )
        deleted = await self.store.write(store_spaces.delete_space, uri)
        if self.index is not None:
            await self.index.drop(uri)
        # its syncers drop their copy (docs/space-host.md); registrations imply a notifier and the space
        if deleted and registrations and notifier is not None and space is not None:
            notifier.space_deleted(uri, space.authority, registrations)
        return deleted


def _given_or(value: str | None, current: str) -> str:
    return current if value is None else value
