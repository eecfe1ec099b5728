"""Importing memories into a space: JSONL files, export tars and the admin importMemories batches.

One loop for every caller (`engram import`, `garden.engram.admin.importMemories`): each line becomes a
`MemoryWrite` with a stable idempotency key, lines are written in batches through `MemoryService.write`
(which embeds what lacks a vector when engram hosts the space's model), and a line that cannot be
imported is reported with its line number and the reason instead of stopping the import.

Idempotency: the key is the line's `key`, else `{author}/{rkey}` when it names its record, else the
sha256 of the line's canonical JSON. Re-running an import after a crash or with the same file therefore
rewrites nothing (the store answers "unchanged") and never duplicates a memory. Within one import a key
is used once: a later line with the key of an earlier one (or the same line again) is skipped and
reported, since two lines writing one memory would rewrite it on every run.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import orjson

from ..errors import EngramError, InvalidInput, UnknownSpace
from ..store import Embedding, MemoryWrite, memory_reads
from .embedding import embed_missing, hosts_model
from .export import memory_write_from_json

if TYPE_CHECKING:
    from ..store.database import Store
    from .memories import MemoryService
    from .spaces import SpaceService

BATCH = 256  # lines per store transaction: embedding batches stay small and a crash loses little work
MAX_LINE_BYTES = 1 << 20
# Fields that identify a memory's content; `cid` and `indexedAt` in an export line are derived, not content.
_DERIVED = ("cid", "indexedAt")


@dataclass
class ImportReport:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    not_indexed: int = 0  # stored, but their vector is not of the space's model (or none could be made)
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (line number, reason)

    @property
    def written(self) -> int:
        return self.created + self.updated + self.unchanged

    def add(self, other: ImportReport) -> None:
        self.created += other.created
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.not_indexed += other.not_indexed
        self.skipped.extend(other.skipped)


def stable_key(obj: dict[str, Any], author: str) -> str:
    """The line's idempotency key (see the module docstring)."""
    if isinstance(obj.get("key"), str) and obj["key"]:
        return obj["key"]
    if isinstance(obj.get("rkey"), str) and obj["rkey"]:
        return f"{author}/{obj['rkey']}"
    content = {k: v for k, v in obj.items() if k not in _DERIVED}
    return "sha256:" + hashlib.sha256(orjson.dumps(content, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _key_digest(key: str | None) -> bytes:
    return hashlib.blake2b((key or "").encode(), digest_size=16).digest()


def parse_line(obj: Any, default_author: str) -> MemoryWrite:
    """One JSON value as a keyed MemoryWrite; raises InvalidInput with a human reason."""
    write = memory_write_from_json(obj, default_author=default_author)
    return replace(write, idempotency_key=stable_key(obj, write.author))


def decode_lines(lines: Iterable[tuple[int, bytes]]) -> Iterator[tuple[int, Any]]:
    """(line number, bytes) → (line number, JSON value); an undecodable line yields an InvalidInput."""
    for number, raw in lines:
        if len(raw) > MAX_LINE_BYTES:
            yield number, InvalidInput(f"line is longer than {MAX_LINE_BYTES} bytes")
            continue
        try:
            yield number, orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            yield number, InvalidInput(f"not valid JSON ({exc})")


async def import_values(
    store: Store,
    spaces: SpaceService,
    memories: MemoryService,
    space_uri: str,
    values: Iterable[tuple[int, Any]],
    *,
    batch_size: int = BATCH,
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Import (line number, JSON value) pairs into a space; a value that is an exception is reported as
    a skipped line. `progress(n)` is called after each batch with the number of lines it consumed."""
    space = await spaces.require(space_uri)
    report = ImportReport()
    batch: list[tuple[int, MemoryWrite]] = []
    # Pipelined: the next batch is embedded (on every worker) while the one before it is written, and
    # batches are still written one at a time in file order (docs/benchmarks.md#throughput).
    ahead: asyncio.Task | None = None

    async def write_ahead() -> None:
        nonlocal ahead
        if ahead is not None:
            embedded = await ahead
            ahead = None
            report.add(await _write_batch(store, spaces, memories, space_uri, embedded))
            if progress:
                progress(len(embedded))

    # the line that first used each idempotency key (a digest of it: bounded memory for any file); a later
    # line with the same key is skipped, so the file imports the same way every time it is run
    first_line: dict[bytes, int] = {}
    try:
        for number, value in values:
            if isinstance(value, InvalidInput):
                report.skipped.append((number, value.message))
            else:
                try:
                    write = parse_line(value, space.authority)
                except InvalidInput as exc:
                    report.skipped.append((number, exc.message))
                else:
                    seen = first_line.setdefault(_key_digest(write.idempotency_key), number)
                    if seen != number:
                        report.skipped.append((number, f"the same key (or the same line) as line {seen}"))
                    else:
                        batch.append((number, write))
            if len(batch) >= batch_size:
                embedding = asyncio.ensure_future(_embedded(store, memories, space, batch))
                await write_ahead()
                ahead, batch = embedding, []
        if batch:
            embedding = asyncio.ensure_future(_embedded(store, memories, space, batch))
            await write_ahead()
            ahead = embedding
        await write_ahead()
    finally:
        if ahead is not None:  # an error (the space went away) left one batch embedding: stop it
            ahead.cancel()
    report.skipped.sort()
    return report


async def _embedded(
    store: Store, memories: MemoryService, space, batch: list[tuple[int, MemoryWrite]]
) -> list[tuple[int, MemoryWrite]]:
    """The batch with vectors for the lines that lack one, when engram runs the space's model; lines it
    cannot embed are left as they are, and the write reports them as before."""
    if any(write.embedding is None for _, write in batch):  # unchanged lines need no embedding
        hosted = hosts_model(memories.embedder, space)
        reused = await store.read(_reuse_stored, space, [write for _, write in batch], hosted)
        batch = [(number, write) for (number, _), write in zip(batch, reused, strict=True)]
    try:
        writes = await embed_missing(
            memories.embedder,
            memories.pool,
            space,
            [write for _, write in batch],
            parallel=memories.pool.size,
        )
    except EngramError:
        return batch  # the write embeds them itself and reports what fails, line by line
    return [(number, write) for (number, _), write in zip(batch, writes, strict=True)]


def _reuse_stored(conn, space, writes: list[MemoryWrite], reuse_vectors: bool) -> list[MemoryWrite]:
    """What an earlier import of the same lines stored, read for the whole batch in one statement before
    anything is embedded:

    - a line without `createdAt` is stamped "now" on its first import; a re-import keeps that stamp, or the
      memory's CID would change and the re-import would rewrite it instead of answering "unchanged";
    - when engram runs the space's model (`reuse_vectors`: it would embed the line), a line without a
      vector whose text, tags and source are those of the stored memory, which holds a vector of the
      space's model, gets that vector: embedding the same text with the same model gives it again, so
      nothing is embedded (nor the model loaded) and the store answers "unchanged" (or writes only what
      else changed, attrs say)."""
    keys = [w.idempotency_key for w in writes if w.idempotency_key is not None]
    stored = memory_reads.imported_memories(conn, space.uri, keys)
    active = space.config.active if space.config is not None and reuse_vectors else None
    out = []
    for write in writes:
        found = stored.get(write.idempotency_key) if write.idempotency_key is not None else None
        if found is not None:
            if write.created_at is None:
                write = replace(write, created_at=found.created_at)
            if (
                active is not None
                and write.embedding is None
                and write.next_embedding is None
                and found.vector is not None
                and found.model_key == active.key
                and found.next_model_key is None
                and (found.text, found.tags, found.source)
                == (write.text, tuple(write.tags or ()), write.source)
                and found.created_at == write.created_at
            ):
                vector = Embedding(active.model, active.digest, active.dims, found.vector)
                write = replace(write, embedding=vector)
        out.append(write)
    return out


async def _write_batch(
    store: Store,
    spaces: SpaceService,
    memories: MemoryService,
    space_uri: str,
    batch: list[tuple[int, MemoryWrite]],
) -> ImportReport:
    report = ImportReport()
    try:
        # Again at write time: the batch before this one (written after this one was read ahead) may have
        # stamped a createdAt a line here repeats.
        space = await spaces.require(space_uri)
        hosted = hosts_model(memories.embedder, space)
        writes = await store.read(_reuse_stored, space, [write for _, write in batch], hosted)
        records = await memories.write(space_uri, writes)
    except UnknownSpace:
        raise  # the space went away mid-import: no line of it can succeed
    except InvalidInput as exc:
        if len(batch) == 1:
            report.skipped.append((batch[0][0], _strip_index(exc.message)))
            return report
        # One bad item fails the whole transaction: retry one by one so only that line is skipped.
        for item in batch:
            report.add(await _write_batch(store, spaces, memories, space_uri, [item]))
        return report
    for record in records:
        setattr(report, record.status, getattr(report, record.status) + 1)
        report.not_indexed += not record.indexed
    return report


def _strip_index(message: str) -> str:
    """put_memories prefixes item errors with `memories[i]: `; for a single line that is noise."""
    return message.split(": ", 1)[1] if message.startswith("memories[") and ": " in message else message
