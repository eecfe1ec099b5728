"""`SnapshotSync`: keeps the local index files and the shared snapshot store in step, for `IndexManager`.

Two hooks (docs/scale-out.md#index-snapshots):
- `fetch`, before a cold load reads the local file: when the store holds a snapshot newer than the local
  file (or there is no local file), download it, check it (format, model, dims, body sha256) and keep it as
  the local file. The manager then catches it up with the store's delta as it does any loaded file; one
  older than the store's tombstone watermark gets `DeltaUnavailable` and is rebuilt, as today.
- `upload`, after a save: send the saved file. Uploads of one slot are coalesced (a save during an upload
  queues one more upload of the newest file, never a pile of them), and skipped when the store already
  holds a snapshot at least as new (a former owner must not overwrite its successor's work).

A snapshot is an optimisation: every store error is logged and counted, and the caller carries on as if
there were no snapshot store (build from the database, keep the local file). Nothing here raises.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.search import persist
from engram.search.index import IndexTuning, SpaceIndex
from engram.search.snapshots import SnapshotStore
from engram.workers import WorkerPool

log = logging.getLogger(__name__)


def _brief(exc: BaseException) -> str:
    """obstore's errors carry a multi-line debug dump after the first line; a log line wants the first."""
    lines = str(exc).splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


# A hung store (say, a blackholed endpoint) must hold a cold load hardly longer than a refused connection
# does: bounds on top of obstore's own connect and request timeouts. A header is one small ranged GET; a
# download's bound grows with the snapshot's size, at 10 MB/s at the least.
HEADER_TIMEOUT_S = 1.0
REMOVE_TIMEOUT_S = 10.0


def _transfer_timeout(header: dict[str, Any]) -> float:
    body = sum(int(section.get("length", 0)) for section in header.get("sections", {}).values())
    return 10.0 + body / 10e6


@dataclass
class SnapshotStats:
    """Monotonic counters, exported on /metrics (engram/metrics.py)."""

    uploads: int = 0
    downloads: int = 0
    upload_failures: int = 0
    download_failures: int = 0
    rejected: int = 0  # downloaded but damaged, or made for another store's history
    bytes_uploaded: int = 0
    bytes_downloaded: int = 0


class SnapshotSync:
    def __init__(self, store: SnapshotStore, data_dir: Path, pool: WorkerPool) -> None:
        self.store = store
        self.data_dir = data_dir
        self.pool = pool  # file reads, writes and checks (the manager's load pool)
        self.stats = SnapshotStats()
        self._uploading: dict[tuple[str, str], asyncio.Event] = {}  # set when that slot's upload ends
        self._again: set[tuple[str, str]] = set()
        # Slots whose snapshot was refused (damaged, or ahead of this store): the next upload replaces it
        # even though its generation may not be newer.
        self._distrusted: set[tuple[str, str]] = set()
        self._behind: set[tuple[str, str]] = set()  # the store's snapshot is older than the local file

    async def fetch(
        self, space: str, model_key: str, dims: int, tuning: IndexTuning | None, store_generation: int
    ) -> SpaceIndex | None:
        """The snapshot as a loaded index when it is newer than the local file; else None (use the file)."""
        try:
            remote = await asyncio.wait_for(self.store.header(space, model_key), HEADER_TIMEOUT_S)
        except ValueError as exc:  # a damaged header: replace the snapshot with the next upload
            self.stats.rejected += 1
            self._distrusted.add((space, model_key))
            log.warning("index snapshot of %s is damaged: %s", space, exc)
            return None
        except Exception as exc:  # noqa: BLE001 - an unreachable or odd store means "no snapshot"
            self.stats.download_failures += 1
            log.warning("index snapshot store unavailable for %s: %s", space, _brief(exc))
            return None
        if remote is None:
            self._behind.add((space, model_key))  # an upload only happens if a local file turns out to exist
            return None
        generation = int(remote.get("generation", -1))
        if generation > store_generation:
            # Ahead of the database: written against another database (or a restored one); its row ids
            # may mean other memories here. The store is the truth, so ignore it.
            self.stats.rejected += 1
            self._distrusted.add((space, model_key))
            log.warning(
                "index snapshot of %s is ahead of the store (%d > %d)", space, generation, store_generation
            )
            return None
        local = await self.pool.run(persist.local_generation, self.data_dir, space, model_key)
        if local > generation:
            self._behind.add((space, model_key))
        if local >= generation:
            return None
        try:
            data = await asyncio.wait_for(self.store.get(space, model_key), _transfer_timeout(remote))
        except Exception as exc:  # noqa: BLE001 - a failed or cut-off download: build instead
            self.stats.download_failures += 1
            log.warning("index snapshot download failed for %s: %s", space, _brief(exc))
            return None
        if data is None:  # removed between the header read and the download
            return None
        self.stats.downloads += 1
        self.stats.bytes_downloaded += len(data)
        index = await self.pool.run(persist.adopt, data, self.data_dir, space, model_key, dims, tuning)
        if index is None:
            self.stats.rejected += 1
            self._distrusted.add((space, model_key))
        return index

    def behind(self, space: str, model_key: str) -> bool:
        """Whether the last `fetch` found the store's snapshot older than the local file (or none): then
        the loaded file is worth uploading even though no save is due (a node that joins the snapshot
        store with files of its own, a save whose upload failed before a restart)."""
        return (space, model_key) in self._behind

    async def upload(self, space: str, model_key: str) -> None:
        """Send the slot's saved file; returns at once when an upload of the slot is already running (that
        one sends the newest file once more when it finishes)."""
        key = (space, model_key)
        self._behind.discard(key)
        if key in self._uploading:
            self._again.add(key)
            return
        done = self._uploading[key] = asyncio.Event()
        try:
            while True:
                self._again.discard(key)
                await self._upload_once(space, model_key)
                if key not in self._again:
                    return
        finally:
            del self._uploading[key]
            done.set()

    async def _upload_once(self, space: str, model_key: str) -> None:
        data = await self.pool.run(persist.read_file, self.data_dir, space, model_key)
        if data is None:
            return  # removed meanwhile (space dropped, reindex)
        try:
            header = persist.parse_header(data)  # our own file: trusted
            generation = int(header["generation"])
            if (space, model_key) not in self._distrusted:
                try:
                    remote = await asyncio.wait_for(self.store.header(space, model_key), HEADER_TIMEOUT_S)
                except ValueError:  # damaged header: ours replaces it
                    remote = None
                if remote is not None and int(remote.get("generation", -1)) >= generation:
                    return
            await asyncio.wait_for(self.store.put(space, model_key, data), _transfer_timeout(header))
            self._distrusted.discard((space, model_key))
        except Exception as exc:  # noqa: BLE001 - retried with the next save; never fails a request
            self.stats.upload_failures += 1
            log.warning("index snapshot upload failed for %s: %s", space, _brief(exc))
            return
        self.stats.uploads += 1
        self.stats.bytes_uploaded += len(data)

    async def remove(self, space: str, model_key: str | None = None) -> None:
        """Forget the snapshots of a deleted space, or of a slot being rebuilt from scratch (reindex).

        The caller removed the local files first; an upload already under way is waited for, so it cannot
        put the snapshot back after the removal."""
        for (upload_space, upload_model), done in list(self._uploading.items()):
            if upload_space == space and model_key in (None, upload_model):
                self._again.discard((upload_space, upload_model))
                await done.wait()
        try:
            await asyncio.wait_for(self.store.remove(space, model_key), REMOVE_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001
            log.warning("could not remove index snapshots of %s: %s", space, _brief(exc))
