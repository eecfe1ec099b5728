"""The space export format (exportSpace, `engram export`) and reading it back (`engram import`).

A tar with two members, in this order:
  manifest.json    {"format": "engram-export/1", "space", "authority", "config", "memories", "exportedAt",
                    "generator"}
  memories.jsonl   one memory per line: author, rkey, text, tags, source?, createdAt, attrs?, cid, and the
                   vectors as garden.engram embeddings ({model, modelDigest, dims, encoding: "f16le",
                   vector: {"$bytes": base64}}), so a space moves between services with its vectors intact.
JSON lines rather than binary index segments (docs/architecture.md#data-model): the store is the truth and indexes
are rebuilt on import, so the export only has to carry records, and JSON lines stay readable and diffable.
"""

from __future__ import annotations

import base64
import io
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

import orjson

from .. import __version__
from ..errors import InvalidInput
from ..store import Embedding, Memory, MemoryWrite
from ..store.attrs import check_attrs
from ..store.memory_reads import import_keys_of, iter_export
from ..views import config_view

if TYPE_CHECKING:
    from ..store.database import Store
    from ..workers import WorkerPool
    from .spaces import SpaceService

FORMAT = "engram-export/1"
MANIFEST = "manifest.json"
MEMORIES = "memories.jsonl"
MAX_MANIFEST_BYTES = 1 << 20


def split_model_key(key: str) -> tuple[str, str, int]:
    """'{model}@{digest}/{dims}' → (model, digest, dims)."""
    head, dims = key.rsplit("/", 1)
    model, digest = head.split("@", 1)
    return model, digest, int(dims)


def _embedding_json(key: str | None, vector: bytes | None) -> dict[str, Any] | None:
    if key is None or vector is None:
        return None
    model, digest, dims = split_model_key(key)
    return {
        "model": model,
        "modelDigest": digest,
        "dims": dims,
        "encoding": "f16le",
        "vector": {"$bytes": base64.b64encode(vector).decode().rstrip("=")},
    }


def memory_line(memory: Memory, import_key: str | None = None) -> bytes:
    """One export line; `import_key`: the idempotency key an import wrote the memory under, if one did."""
    line: dict[str, Any] = {
        "author": memory.author,
        "rkey": memory.rkey,
        "text": memory.text,
        "tags": list(memory.tags),
        "createdAt": memory.created_at,
        "cid": memory.cid,
    }
    if import_key is not None:
        line["key"] = import_key
    if memory.source is not None:
        line["source"] = memory.source
    if memory.attrs:
        line["attrs"] = memory.attrs
    for name, key, vector in (
        ("embedding", memory.model_key, memory.vector),
        ("nextEmbedding", memory.next_model_key, memory.next_vector),
    ):
        embedding = _embedding_json(key, vector)
        if embedding is not None:
            line[name] = embedding
    return orjson.dumps(line) + b"\n"


async def write_export(
    store: Store, spaces: SpaceService, pool: WorkerPool, space_uri: str, out: IO[bytes]
) -> int:
    """Write the export tar of `space_uri` to `out`; returns the number of memories. File I/O runs in the
    worker pool, the store is read in batches, so a big space never blocks the loop or fills RAM."""
    space = await spaces.require(space_uri)
    spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the finally below, after the tar is written
    count = 0
    try:
        async for batch in iter_export(store, space_uri):
            keys = await store.read(import_keys_of, space_uri, batch)
            chunk = b"".join(memory_line(m, keys.get((m.author, m.rkey))) for m in batch)
            await pool.run(spool.write, chunk)
            count += len(batch)
        config = config_view(space)
        manifest = orjson.dumps(
            {
                "format": FORMAT,
                "space": space.uri,
                "authority": space.authority,
                "config": config,
                "memories": count,
                "exportedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "generator": f"engram {__version__}",
            },
            option=orjson.OPT_INDENT_2,
        )
        await pool.run(_write_tar, out, manifest, spool)
    finally:
        spool.close()
    return count


def _write_tar(out: IO[bytes], manifest: bytes, spool: IO[bytes]) -> None:
    now = time.time()
    with tarfile.open(fileobj=out, mode="w|") as tar:
        info = tarfile.TarInfo(MANIFEST)
        info.size, info.mtime, info.mode = len(manifest), now, 0o644
        tar.addfile(info, io.BytesIO(manifest))
        info = tarfile.TarInfo(MEMORIES)
        info.size, info.mtime, info.mode = spool.tell(), now, 0o644
        spool.seek(0)
        tar.addfile(info, spool)


@dataclass
class ExportReader:
    manifest: dict[str, Any]
    lines: Iterator[tuple[int, bytes]]  # (line number, raw JSON line) of memories.jsonl


def open_export(fileobj: IO[bytes]) -> ExportReader:
    """Read an export tar: the manifest first, then memories line by line (streamed, not loaded whole)."""
    try:
        # The tar outlives this call: the returned line iterator streams from it.
        tar = tarfile.open(fileobj=fileobj, mode="r|*")  # noqa: SIM115
        member = tar.next()
        if (
            member is None
            or member.name != MANIFEST
            or not member.isfile()
            or member.size > MAX_MANIFEST_BYTES
        ):
            raise InvalidInput(f"not an engram export: the first member must be {MANIFEST}")
        manifest = orjson.loads(tar.extractfile(member).read())
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            raise InvalidInput(f"unsupported export format {manifest.get('format')!r}, expected {FORMAT}")
        member = tar.next()
        if member is None or member.name != MEMORIES or not member.isfile():
            raise InvalidInput(f"not an engram export: the second member must be {MEMORIES}")
        stream = tar.extractfile(member)
    except (tarfile.TarError, orjson.JSONDecodeError) as exc:
        raise InvalidInput(f"not a readable engram export: {exc}") from None

    def lines() -> Iterator[tuple[int, bytes]]:
        for number, line in enumerate(stream, start=1):
            if line.strip():
                yield number, line

    return ExportReader(manifest, lines())


def decode_embedding(value: Any, what: str = "embedding") -> Embedding:
    """A garden.engram embedding from JSON: vector as {"$bytes": base64} or a base64(url) string."""
    if not isinstance(value, dict):
        raise InvalidInput(f"{what} must be an object")
    try:
        model, digest, dims = value["model"], value["modelDigest"], value["dims"]
        raw = value["vector"]
    except KeyError as missing:
        raise InvalidInput(f"{what} is missing {missing.args[0]}") from None
    if value.get("encoding", "f16le") != "f16le":
        raise InvalidInput(f"{what}.encoding must be f16le")
    if isinstance(raw, dict):
        raw = raw.get("$bytes")
    if not isinstance(raw, str) or not isinstance(model, str) or not isinstance(digest, str):
        raise InvalidInput(f"{what} needs string model, modelDigest and a base64 vector")
    if not isinstance(dims, int) or isinstance(dims, bool):
        raise InvalidInput(f"{what}.dims must be an integer")
    padded = raw + "=" * (-len(raw) % 4)
    try:
        data = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except ValueError:
        raise InvalidInput(f"{what}.vector is not valid base64") from None
    return Embedding(model, digest, dims, data)


def memory_write_from_json(obj: Any, *, default_author: str) -> MemoryWrite:
    """One memory (an export line or a JSONL import line) as a store write; raises InvalidInput."""
    if not isinstance(obj, dict):
        raise InvalidInput("each line must be a JSON object")
    text = obj.get("text")
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput("text is required and must be a non-empty string")
    tags = obj.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise InvalidInput("tags must be a list of strings")
    for name in ("source", "createdAt", "rkey", "author", "key"):
        if obj.get(name) is not None and not isinstance(obj[name], str):
            raise InvalidInput(f"{name} must be a string")
    attrs = obj.get("attrs")
    check_attrs(attrs)  # before anything serialises the line (its idempotency key hashes it)
    embedding = decode_embedding(obj["embedding"]) if obj.get("embedding") is not None else None
    next_embedding = (
        decode_embedding(obj["nextEmbedding"], "nextEmbedding")
        if obj.get("nextEmbedding") is not None
        else None
    )
    return MemoryWrite(
        author=obj.get("author") or default_author,
        text=text,
        rkey=obj.get("rkey"),
        tags=tuple(tags),
        source=obj.get("source"),
        created_at=obj.get("createdAt"),
        attrs=attrs,
        embedding=embedding,
        next_embedding=next_embedding,
        idempotency_key=obj.get("key"),
    )
