"""LtHash: the order-independent set hash a space repo commits to (docs/sync.md, "Verifying commits").

Each element (a record's ``{collection}/{rkey}/{cid}``) is expanded with the BLAKE3 XOF to 2048 bytes, read as
1024 little-endian uint16 lanes and added to (or subtracted from) the state lane-wise modulo 2^16. The state
therefore depends only on the multiset of elements, so a syncer can fold ops one by one and end where a
full recount would. The commit carries ``sha256(state)``. Hand-written because no library implements this
exact construction; BLAKE3 comes from the ``blake3`` package and the lane arithmetic from numpy.
"""

from __future__ import annotations

import hashlib

import numpy as np
from blake3 import blake3

STATE_BYTES = 2048
_LANES = STATE_BYTES // 2
_LANE = np.dtype("<u2")


def _expand(element: str) -> np.ndarray:
    return np.frombuffer(blake3(element.encode("utf-8")).digest(length=STATE_BYTES), dtype=_LANE)


class LtHash:
    __slots__ = ("_lanes",)

    def __init__(self, state: bytes | None = None):
        if state is None:
            self._lanes = np.zeros(_LANES, dtype=_LANE)
        elif len(state) != STATE_BYTES:
            raise ValueError(f"LtHash state must be {STATE_BYTES} bytes, got {len(state)}")
        else:
            self._lanes = np.frombuffer(state, dtype=_LANE).copy()

    def add(self, element: str) -> LtHash:
        self._lanes += _expand(element)  # uint16 arithmetic wraps modulo 2^16, which is the definition
        return self

    def remove(self, element: str) -> LtHash:
        self._lanes -= _expand(element)
        return self

    def copy(self) -> LtHash:
        return LtHash(self.state)

    @property
    def state(self) -> bytes:
        return self._lanes.astype(_LANE, copy=False).tobytes()

    def digest(self) -> bytes:
        return hashlib.sha256(self.state).digest()

    def is_empty(self) -> bool:
        return not self._lanes.any()


def record_element(collection: str, rkey: str, cid: str) -> str:
    """The element a record contributes: ``{collection}/{rkey}/{cid}`` (cid in its base32 string form)."""
    return f"{collection}/{rkey}/{cid}"
