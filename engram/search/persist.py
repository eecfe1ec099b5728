"""Save and load a `SpaceIndex` under the data dir, so a restart does not rebuild HNSW graphs.

Layout: `<data_dir>/indexes/<h[:2]>/<h>/<model_key_hash>.{faiss,hnsw.faiss,cols.npz,json}` with
h = sha256(space uri). Every file is written to a temp name, fsynced and renamed; the JSON manifest goes last
and lists each file's sha256, so a crash mid-save or a damaged file is detected on load (-> rebuild from the
store, which is the source of truth). FAISS's own serializer and numpy's npz (allow_pickle=False) are used;
never pickle.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import uuid
from pathlib import Path

import faiss
import numpy as np

from engram.search.filters import FilterColumns
from engram.search.index import IndexTuning, SpaceIndex

FORMAT_VERSION = 1
log = logging.getLogger(__name__)


def space_dir(data_dir: Path | str, space: str) -> Path:
    digest = hashlib.sha256(space.encode()).hexdigest()
    return Path(data_dir) / "indexes" / digest[:2] / digest


def model_key_hash(model_key: str) -> str:
    return hashlib.sha256(model_key.encode()).hexdigest()[:32]


def _paths(data_dir: Path | str, space: str, model_key: str) -> dict[str, Path]:
    base = space_dir(data_dir, space) / model_key_hash(model_key)
    return {
        "store": base.with_suffix(".faiss"),
        "coarse": base.with_suffix(".hnsw.faiss"),
        "columns": base.with_suffix(".cols.npz"),
        "manifest": base.with_suffix(".json"),
    }


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")  # unique: saves may overlap
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        # A full disk (or a failed rename) must not leave a partial temp file behind at every retry.
        tmp.unlink(missing_ok=True)
        raise


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _columns_bytes(index: SpaceIndex) -> bytes:
    cols = index.columns
    names = sorted(cols.author_vocab, key=cols.author_vocab.__getitem__)
    tags = list(cols.tag_postings)
    postings = [cols.tag_postings[t] for t in tags]
    buf = io.BytesIO()
    np.savez(
        buf,
        row_ids=index.row_ids,
        live=index.live,
        author_codes=cols.author_codes,
        author_names=np.array(names, dtype=str),
        created_at=cols.created_at,
        tag_names=np.array(tags, dtype=str),
        tag_offsets=np.cumsum([0] + [len(p) for p in postings]).astype(np.int64),
        tag_positions=np.concatenate(postings) if postings else np.zeros(0, dtype=np.int64),
    )
    return buf.getvalue()


def row_checksum(row_ids: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(row_ids, dtype="<i8").tobytes()).hexdigest()


def save(index: SpaceIndex, data_dir: Path | str, space: str, model_key: str) -> None:
    paths = _paths(data_dir, space, model_key)
    paths["manifest"].parent.mkdir(parents=True, exist_ok=True)
    blobs = {"store": faiss.serialize_index(index.store).tobytes(), "columns": _columns_bytes(index)}
    if index.coarse is not None:
        blobs["coarse"] = faiss.serialize_index(index.coarse).tobytes()
    for name, data in blobs.items():
        _write_atomic(paths[name], data)
    if index.coarse is None and paths["coarse"].exists():
        paths["coarse"].unlink()
    manifest = {
        "format": FORMAT_VERSION,
        "space": space,
        "model_key": model_key,
        "dims": index.dims,
        "rows": len(index),
        "high_water": index.high_water,
        "generation": index.generation,
        "row_ids_sha256": row_checksum(index.row_ids),
        "files": {name: hashlib.sha256(data).hexdigest() for name, data in blobs.items()},
    }
    _write_atomic(paths["manifest"], json.dumps(manifest, sort_keys=True).encode())
    _fsync_dir(paths["manifest"].parent)


def load(
    data_dir: Path | str, space: str, model_key: str, dims: int, tuning: IndexTuning | None = None
) -> SpaceIndex | None:
    """The persisted index, or None when absent, damaged, or made for another model/dims/format."""
    paths = _paths(data_dir, space, model_key)
    if not paths["manifest"].exists():
        return None
    try:
        return _load(paths, space, model_key, dims, tuning)
    except Exception as exc:  # noqa: BLE001 - any damage means "rebuild from the store", never a crash
        log.warning("discarding persisted index for %s: %s", space, exc)
        return None


def _load(
    paths: dict[str, Path], space: str, model_key: str, dims: int, tuning: IndexTuning | None
) -> SpaceIndex | None:
    manifest = json.loads(paths["manifest"].read_bytes())
    expected = {"format": FORMAT_VERSION, "space": space, "model_key": model_key, "dims": dims}
    if any(manifest.get(key) != value for key, value in expected.items()):
        log.info("persisted index for %s is for another format/model/dims; rebuilding", space)
        return None
    blobs = {}
    for name, digest in manifest["files"].items():
        data = paths[name].read_bytes()
        if hashlib.sha256(data).hexdigest() != digest:
            raise ValueError(f"{paths[name].name}: checksum mismatch")
        blobs[name] = data
    index = SpaceIndex(dims, tuning)
    index.store = faiss.deserialize_index(np.frombuffer(blobs["store"], dtype=np.uint8))
    if "coarse" in blobs:
        index.coarse = faiss.deserialize_index(np.frombuffer(blobs["coarse"], dtype=np.uint8))
    with np.load(io.BytesIO(blobs["columns"]), allow_pickle=False) as npz:
        index.row_ids = npz["row_ids"].astype(np.int64)
        index.live = npz["live"].astype(bool)
        cols = FilterColumns()
        cols.author_codes = npz["author_codes"].astype(np.int32)
        cols.author_vocab = {str(name): code for code, name in enumerate(npz["author_names"])}
        cols.created_at = npz["created_at"].astype(np.int64)
        offsets, positions = npz["tag_offsets"], npz["tag_positions"]
        cols.tag_postings = {
            str(tag): positions[offsets[i] : offsets[i + 1]].astype(np.int64)
            for i, tag in enumerate(npz["tag_names"])
        }
        index.columns = cols
    n = len(index)
    if not (
        index.store.ntotal == n == manifest["rows"] == len(cols) == index.live.shape[0]
        and index.store.d == dims
    ):
        raise ValueError("row counts disagree between files")
    if index.coarse is not None and index.coarse.ntotal != n:
        raise ValueError("coarse index row count disagrees")
    if row_checksum(index.row_ids) != manifest["row_ids_sha256"]:
        raise ValueError("row id checksum mismatch")
    index.generation = int(manifest["generation"])
    index.high_water = int(manifest["high_water"])
    return index


def remove(data_dir: Path | str, space: str, model_key: str | None = None) -> None:
    """Delete the persisted index of one model slot, or every one of the space (the space was deleted)."""
    directory = space_dir(data_dir, space)
    if not directory.exists():
        return
    if model_key is not None:
        for path in _paths(data_dir, space, model_key).values():
            path.unlink(missing_ok=True)
        return
    for path in directory.iterdir():
        path.unlink(missing_ok=True)
    directory.rmdir()
