"""`SnapshotStore`: the latest index file of each space and model slot in a shared object store.

`ENGRAM_INDEX_STORE` names it: `file:///abs/dir` (a directory every node mounts) or `s3://bucket/prefix`
(docs/scale-out.md#index-snapshots). It is reached through obstore, the Python bindings of the Rust
`object_store` crate: one API over a local directory and S3 (and S3-compatible servers), async calls that
run on obstore's own Rust runtime, so moving a 100 MB snapshot occupies neither the event loop nor a worker
thread, and no hand-written S3 client or signing code. Its writes are atomic from a reader's view: S3 PUT
replaces an object whole, and the local backend writes a staged file and renames it over the object.

Layout: ONE object per space and model slot, `<prefix>/<h[:2]>/<h>/<model_key_hash>.idx` with h = sha256
(space uri), holding the very bytes of the local index file (engram/search/persist.py, format v2): its
header says which store generation it reflects and its body carries a sha256, so a reader can tell a stale
or damaged snapshot without trusting anything else. Old versions are not kept: an older snapshot is never
better than the newest one plus the store's delta. The per-space folder lets a deleted space's objects be
listed and removed together.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import obstore
from obstore.store import from_url

from engram.search import persist

if TYPE_CHECKING:  # obstore declares these for type checkers only
    from obstore.store import ClientConfig, ObjectStore, RetryConfig

# The header of an index file is small (manifest, section layout, vocabularies): one ranged GET of this
# many bytes usually holds it, a second one fetches the rest when a space has huge vocabularies.
_HEADER_PROBE = 64 * 1024

# Bounded retries: a snapshot is an optimisation, so an unreachable store must cost a cold load a couple of
# seconds at most before it builds from the database instead (obstore's default retries for 3 minutes).
_RETRY: RetryConfig = {
    "max_retries": 2,
    "backoff": {"init_backoff": timedelta(milliseconds=100), "max_backoff": timedelta(seconds=1), "base": 2},
    "retry_timeout": timedelta(seconds=10),
}


class SnapshotStore:
    """Raw access to the snapshot objects; store errors propagate (the caller decides they are harmless)."""

    def __init__(self, store: ObjectStore) -> None:
        self._store = store

    @classmethod
    def open(cls, url: str, s3_endpoint_url: str | None = None) -> SnapshotStore:
        scheme = urlsplit(url).scheme
        if scheme == "file":
            return cls(from_url(url, mkdir=True))
        options: ClientConfig = {"connect_timeout": "2s", "timeout": "120s"}
        # Credentials and region come from the standard AWS_* variables, which obstore reads itself.
        if s3_endpoint_url:
            options["allow_http"] = s3_endpoint_url.startswith("http://")  # S3-compatible servers on a LAN
            return cls(from_url(url, client_options=options, retry_config=_RETRY, endpoint=s3_endpoint_url))
        return cls(from_url(url, client_options=options, retry_config=_RETRY))

    @staticmethod
    def key(space: str, model_key: str) -> str:
        h = persist.space_hash(space)
        return f"{h[:2]}/{h}/{persist.model_key_hash(model_key)}.idx"

    @staticmethod
    def space_folder(space: str) -> str:
        h = persist.space_hash(space)
        return f"{h[:2]}/{h}"

    async def header(self, space: str, model_key: str) -> dict[str, Any] | None:
        """The snapshot's header (generation, rows, ...) from a ranged read, or None when there is none."""
        key = self.key(space, model_key)
        try:
            head = bytes(await obstore.get_range_async(self._store, key, start=0, length=_HEADER_PROBE))
        except FileNotFoundError:
            return None
        size = persist.header_size(head)
        if size > len(head):
            rest = await obstore.get_range_async(self._store, key, start=len(head), end=size)
            head += bytes(rest)
        return persist.parse_header(head)

    async def get(self, space: str, model_key: str) -> bytes | None:
        try:
            result = await obstore.get_async(self._store, self.key(space, model_key))
        except FileNotFoundError:
            return None
        return bytes(await result.bytes_async())

    async def put(self, space: str, model_key: str, data: bytes) -> None:
        await obstore.put_async(self._store, self.key(space, model_key), data)

    async def remove(self, space: str, model_key: str | None = None) -> None:
        """Delete one model slot's snapshot, or every snapshot of the space (it was deleted)."""
        if model_key is not None:
            keys = [self.key(space, model_key)]
        else:
            keys = []
            async for batch in obstore.list(self._store, self.space_folder(space)):
                keys.extend(item["path"] for item in batch)
        if keys:
            await obstore.delete_async(self._store, keys)
