"""Save and load a `SpaceIndex` under the data dir, so a restart does not rebuild HNSW graphs.

Layout: ONE file per space and model slot, `<data_dir>/indexes/<h[:2]>/<h>.<model_key_hash>.idx` with
h = sha256(space uri): 10,000 small spaces cost 10,000 files in at most 256 folders (the first format used
four files and a folder per space). The file is

    b"ENGRAMIX" | u32 little-endian header length | header (JSON) | body

where the header holds the manifest (space, model key, dims, rows, generation, high-water mark), the body's
sha256, the vocabularies (author DIDs, tags) and each section's (offset, length, dtype); the body is the
FAISS serializations of the stored and coarse indexes plus the raw column arrays. A load reads the file
once, checks the digest and slices arrays out with `np.frombuffer` - no zip or pickle parsing, so a cold
load of a small space holds the GIL for very little time. FAISS's own serializer is used for the indexes;
never pickle. The file is written to a temp name, fsynced and renamed: a crash mid-save leaves the old file
(or none), and any damage is caught by the digest (-> rebuild from the store, the source of truth).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import struct
import uuid
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from engram.search.filters import FilterColumns
from engram.search.index import IndexTuning, SpaceIndex

FORMAT_VERSION = 3  # 3: attrs filter postings (engram/search/filters.py); older files rebuild once
MAGIC = b"ENGRAMIX"
_HEADER_LEN = struct.Struct("<I")
log = logging.getLogger(__name__)


def _space_hash(space: str) -> str:
    return hashlib.sha256(space.encode()).hexdigest()


def space_hash(space: str) -> str:
    """The name a space's index files (and snapshot objects) are filed under."""
    return _space_hash(space)


def shard_dir(data_dir: Path | str, space: str) -> Path:
    return Path(data_dir) / "indexes" / _space_hash(space)[:2]


def model_key_hash(model_key: str) -> str:
    return hashlib.sha256(model_key.encode()).hexdigest()[:32]


def index_path(data_dir: Path | str, space: str, model_key: str) -> Path:
    return shard_dir(data_dir, space) / f"{_space_hash(space)}.{model_key_hash(model_key)}.idx"


def space_files(data_dir: Path | str, space: str) -> list[Path]:
    """Every index file of the space (one per model slot)."""
    directory = shard_dir(data_dir, space)
    return sorted(directory.glob(f"{_space_hash(space)}.*.idx")) if directory.exists() else []


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")  # unique: saves may overlap
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk or a failed rename must not leave temp files behind
        raise


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def row_checksum(row_ids: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(row_ids, dtype="<i8").tobytes()).hexdigest()


def _sections(index: SpaceIndex) -> tuple[dict[str, np.ndarray], list[str], list[str], list[str]]:
    cols = index.columns
    authors = sorted(cols.author_vocab, key=cols.author_vocab.__getitem__)
    tags = list(cols.tag_postings)
    postings = [cols.tag_postings[t] for t in tags]
    attr_tokens = list(cols.attrs.postings)
    attr_postings = [cols.attrs.postings[t] for t in attr_tokens]
    arrays = {
        "store": faiss.serialize_index(index.store),
        "row_ids": np.ascontiguousarray(index.row_ids, dtype="<i8"),
        "live": np.ascontiguousarray(index.live, dtype=np.bool_),
        "author_codes": np.ascontiguousarray(cols.author_codes, dtype="<i4"),
        "created_at": np.ascontiguousarray(cols.created_at, dtype="<i8"),
        "tag_offsets": np.cumsum([0] + [len(p) for p in postings]).astype("<i8"),
        "tag_positions": (np.concatenate(postings) if postings else np.zeros(0)).astype("<i8"),
        "attr_offsets": np.cumsum([0] + [len(p) for p in attr_postings]).astype("<i8"),
        "attr_positions": (np.concatenate(attr_postings) if attr_postings else np.zeros(0)).astype("<i8"),
    }
    if index.coarse is not None:
        arrays["coarse"] = faiss.serialize_index(index.coarse)
    return arrays, authors, tags, attr_tokens


def save(index: SpaceIndex, data_dir: Path | str, space: str, model_key: str) -> None:
    path = index_path(data_dir, space, model_key)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays, authors, tags, attr_tokens = _sections(index)
    layout, offset, parts = {}, 0, []
    for name, array in arrays.items():
        raw = array.tobytes()
        layout[name] = {"offset": offset, "length": len(raw), "dtype": array.dtype.str}
        parts.append(raw)
        offset += len(raw)
    body = b"".join(parts)
    header = {
        "format": FORMAT_VERSION,
        "space": space,
        "model_key": model_key,
        "dims": index.dims,
        "rows": len(index),
        "high_water": index.high_water,
        "generation": index.generation,
        "body_sha256": hashlib.sha256(body).hexdigest(),
        "sections": layout,
        "authors": authors,
        "tags": tags,
        "attrs": attr_tokens,
    }
    head = json.dumps(header, sort_keys=True).encode()
    if path.is_dir() and not path.is_symlink():
        # The name is engram's own (<space hash>.<model hash>.idx): a directory there is debris that would
        # fail every save and every load; the rebuilt index replaces it.
        shutil.rmtree(path)
    _write_atomic(path, MAGIC + _HEADER_LEN.pack(len(head)) + head + body)
    _fsync_dir(path.parent)
    _remove_legacy(data_dir, space)


def load(
    data_dir: Path | str, space: str, model_key: str, dims: int, tuning: IndexTuning
) -> SpaceIndex | None:
    """The persisted index, or None when absent, damaged, or made for another model/dims/format."""
    path = index_path(data_dir, space, model_key)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:  # a directory in its place, no permission, an I/O error: rebuild from the store
        log.warning("cannot read persisted index for %s: %s", space, exc.strerror or type(exc).__name__)
        return None
    try:
        return _decode(data, space, model_key, dims, tuning)
    except Exception as exc:  # noqa: BLE001 - any damage means "rebuild from the store", never a crash
        log.warning("discarding persisted index for %s: %s", space, exc)
        return None


def header_size(prefix: bytes) -> int:
    """How many leading bytes of an index file hold its magic, length and header (from its first 12)."""
    if prefix[: len(MAGIC)] != MAGIC or len(prefix) < len(MAGIC) + _HEADER_LEN.size:
        raise ValueError("not an engram index file")
    (head_len,) = _HEADER_LEN.unpack_from(prefix, len(MAGIC))
    return len(MAGIC) + _HEADER_LEN.size + int(head_len)


def parse_header(data: bytes) -> dict[str, Any]:
    """The header of an index file from its first `header_size` bytes (or more)."""
    header: dict[str, Any] = json.loads(data[len(MAGIC) + _HEADER_LEN.size : header_size(data)])
    return header


def local_generation(data_dir: Path | str, space: str, model_key: str) -> int:
    """The store generation the local index file reflects; -1 when there is none or it is unreadable."""
    try:
        return int(read_header(index_path(data_dir, space, model_key))["generation"])
    except (OSError, ValueError, KeyError, TypeError):
        return -1


def read_file(data_dir: Path | str, space: str, model_key: str) -> bytes | None:
    """The local index file's bytes as saved (a snapshot upload sends exactly these), or None."""
    try:
        return index_path(data_dir, space, model_key).read_bytes()
    except OSError:  # absent, or unreadable (a directory in its place): nothing to upload
        return None


def adopt(
    data: bytes, data_dir: Path | str, space: str, model_key: str, dims: int, tuning: IndexTuning
) -> SpaceIndex | None:
    """Decode an index file obtained elsewhere (a snapshot) and, when it checks out, keep it as the local
    file, so a restart starts from it. Damaged or foreign data gives None and leaves the local file alone."""
    try:
        index = _decode(data, space, model_key, dims, tuning)
    except Exception as exc:  # noqa: BLE001 - any damage means "rebuild from the store", never a crash
        log.warning("discarding index snapshot for %s: %s", space, exc)
        return None
    if index is not None:
        path = index_path(data_dir, space, model_key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_atomic(path, data)
            _fsync_dir(path.parent)
        except OSError as exc:  # a full disk costs the local copy, not the load: the index is good
            log.warning("could not keep the index snapshot of %s locally: %s", space, exc)
    return index


def read_header(path: Path) -> dict[str, Any]:
    """An index file's header (manifest, section layout, vocabularies), without reading its body."""
    with open(path, "rb") as fh:
        prefix = fh.read(len(MAGIC) + _HEADER_LEN.size)
        if prefix[: len(MAGIC)] != MAGIC:
            raise ValueError(f"{path}: not an engram index file")
        (head_len,) = _HEADER_LEN.unpack_from(prefix, len(MAGIC))
        header: dict[str, Any] = json.loads(fh.read(head_len))
        return header


def _decode(data: bytes, space: str, model_key: str, dims: int, tuning: IndexTuning) -> SpaceIndex | None:
    if data[: len(MAGIC)] != MAGIC:
        raise ValueError("not an engram index file")
    (head_len,) = _HEADER_LEN.unpack_from(data, len(MAGIC))
    start = len(MAGIC) + _HEADER_LEN.size
    header = json.loads(data[start : start + head_len])
    expected = {"format": FORMAT_VERSION, "space": space, "model_key": model_key, "dims": dims}
    if any(header.get(key) != value for key, value in expected.items()):
        log.info("persisted index for %s is for another format/model/dims; rebuilding", space)
        return None
    body = memoryview(data)[start + head_len :]
    if hashlib.sha256(body).hexdigest() != header["body_sha256"]:
        raise ValueError("checksum mismatch")

    def section(name: str) -> np.ndarray:
        spec = header["sections"][name]
        raw = body[spec["offset"] : spec["offset"] + spec["length"]]
        return np.frombuffer(raw, dtype=np.dtype(spec["dtype"]))

    index = SpaceIndex(dims, tuning)
    store = faiss.deserialize_index(section("store").copy())
    if not isinstance(store, faiss.IndexScalarQuantizer):  # the exact scan reads its codes directly
        raise TypeError("store section is not a scalar-quantiser index")
    index.store = store
    if "coarse" in header["sections"]:
        index.coarse = faiss.deserialize_index(section("coarse").copy())
    index.row_ids = section("row_ids").astype(np.int64)
    index.live = section("live").copy()
    cols = FilterColumns()
    cols.author_codes = section("author_codes").astype(np.int32)
    cols.author_vocab = {name: code for code, name in enumerate(header["authors"])}
    cols.created_at = section("created_at").astype(np.int64)
    offsets, positions = section("tag_offsets"), section("tag_positions").astype(np.int64)
    cols.tag_postings = {tag: positions[offsets[i] : offsets[i + 1]] for i, tag in enumerate(header["tags"])}
    offsets, positions = section("attr_offsets"), section("attr_positions").astype(np.int64)
    cols.attrs.postings = {t: positions[offsets[i] : offsets[i + 1]] for i, t in enumerate(header["attrs"])}
    index.columns = cols
    n = len(index)
    if not (
        index.store.ntotal == n == header["rows"] == len(cols) == index.live.shape[0]
        and index.store.d == dims
    ):
        raise ValueError("row counts disagree between sections")
    if index.coarse is not None and index.coarse.ntotal != n:
        raise ValueError("coarse index row count disagrees")
    index.generation = int(header["generation"])
    index.high_water = int(header["high_water"])
    return index


def remove(data_dir: Path | str, space: str, model_key: str | None = None) -> None:
    """Delete the persisted index of one model slot, or every one of the space (the space was deleted)."""
    if model_key is not None:
        index_path(data_dir, space, model_key).unlink(missing_ok=True)
        return
    for path in space_files(data_dir, space):
        path.unlink(missing_ok=True)
    _remove_legacy(data_dir, space)


def _remove_legacy(data_dir: Path | str, space: str) -> None:
    """The first format's per-space folder (four files per model slot): superseded, never read."""
    legacy = shard_dir(data_dir, space) / _space_hash(space)
    if legacy.is_dir():
        shutil.rmtree(legacy, ignore_errors=True)
