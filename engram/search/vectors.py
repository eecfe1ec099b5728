"""The `vector` query parameter: base64url (no padding) of little-endian float16, decoded to a unit float32
(docs/protocol.md#vector-encoding).

`base64.urlsafe_b64decode` silently accepts `+`, `/`, padding and junk, so the
alphabet, padding and length are checked by hand first; every rejection names what is wrong.
"""

from __future__ import annotations

import base64
import binascii
import math
import re

import numpy as np

from engram.errors import InvalidInput

MAX_DIMS = 16_000  # the protocol's bound, 1..16000 entries (docs/protocol.md#vector-encoding)
_NOT_B64URL = re.compile(r"[^A-Za-z0-9_-]")


def decode_query_vector(text: str, *, max_dims: int = MAX_DIMS) -> np.ndarray:
    """Decode and validate a query vector; returns a float32 unit vector of shape (dims,)."""
    if not text:
        raise InvalidInput("vector is empty")
    # Bound the work before decoding anything: 3 bytes per 4 characters, 2 bytes per value.
    if len(text) > (max_dims * 2 * 4 + 2) // 3 + 1:
        raise InvalidInput(f"vector has more than {max_dims} dimensions")
    # The alphabet check as one C pass (deleting every allowed byte must leave nothing); the regex that
    # finds the position for the message runs only for a bad vector.
    bad = _NOT_B64URL.search(text) if not text.isascii() or text.encode().translate(None, _ALPHABET) else None
    if bad is not None:
        if bad.group() == "=":
            raise InvalidInput(
                f"vector: padding '=' at position {bad.start()} is not allowed (base64url without padding)"
            )
        raise InvalidInput(f"vector: invalid base64url character at position {bad.start()}")
    if len(text) % 4 == 1:
        raise InvalidInput(f"vector: {len(text)} characters is not a valid base64url length")
    raw = bytes_from_base64url(text)
    if len(raw) % 2:
        raise InvalidInput(f"vector: {len(raw)} bytes is not a whole number of float16 values")
    values = np.frombuffer(raw, dtype="<f2").astype(np.float32)  # one copy, straight to float32
    if values.shape[0] > max_dims:
        raise InvalidInput(f"vector has more than {max_dims} dimensions")
    # One dot product checks both: a float16 squared is at most 65504² and 16000 of them stay far below
    # float32's range, so the sum is non-finite exactly when some value is NaN or infinite. Nothing here can
    # raise a floating-point flag (no overflow, and a sum of squares never computes inf - inf; NaN and inf
    # only propagate), so no np.errstate around it: entering one cost more than the dot product.
    squares = float(np.vdot(values, values))  # vdot: BLAS only, no ufunc error check (a signaling NaN)
    if not math.isfinite(squares):
        raise InvalidInput("vector contains NaN or infinity")
    if squares == 0.0:
        raise InvalidInput("vector has zero norm (all values are zero)")
    return values / np.float32(math.sqrt(squares))


def bytes_from_base64url(text: str) -> bytes:
    """Strict base64url without padding (alphabet already checked by the caller or trusted)."""
    try:
        # What base64.urlsafe_b64decode does, without its str/bytes dispatch: ~1 µs less per search.
        raw = binascii.a2b_base64(text.encode("ascii").translate(_URL_TO_STANDARD) + b"=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise InvalidInput(f"vector: not valid base64url ({exc})") from None
    # Non-zero leftover bits mean two different strings decode to the same bytes; refuse the non-canonical
    # one. Only the last character can carry them (4 bits of it when len % 4 == 2, 2 when == 3).
    unused = {2: 0b1111, 3: 0b11}.get(len(text) % 4, 0)
    if unused and _B64URL_VALUE[text[-1]] & unused:
        raise InvalidInput("vector: non-canonical base64url (unused trailing bits are not zero)")
    return raw


_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_URL_TO_STANDARD = bytes.maketrans(b"-_", b"+/")
_B64URL_VALUE = {
    c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
}


def encode_base64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def encode_query_vector(values: np.ndarray) -> str:
    """The client side: any float array -> base64url of little-endian float16 (for clients and tests)."""
    return encode_base64url(array_to_f16_bytes(values))


def array_to_f16_bytes(values: np.ndarray) -> bytes:
    return np.asarray(values, dtype="<f2").tobytes()


def f16_bytes_to_array(raw: bytes) -> np.ndarray:
    """Little-endian float16 bytes -> float16 array (a copy, so callers may modify it)."""
    return np.frombuffer(raw, dtype="<f2").astype(np.float16)


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length in float32; zero rows stay zero (they score 0 against everything)."""
    x = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    unit: np.ndarray = x / norms
    return unit


def similarities_permille(cosines: np.ndarray) -> list[int]:
    """`similarity_permille` of every score (the same float64 arithmetic, truncated alike). A search's
    k scores are few: ten cost ~3 us as Python floats (`tolist` widens float32 exactly), ~7-9 us through
    numpy's clip and casts."""
    return [
        int(c * 1000) if 0.0 <= c <= 1.0 else (1000 if c > 1.0 else 0) for c in np.asarray(cosines).tolist()
    ]


def similarity_permille(cosine: float) -> int:
    """API similarity: int(clamp(cos, 0, 1) * 1000), truncated as the reference does (docs/protocol.md#similarity)."""
    return int(min(max(float(cosine), 0.0), 1.0) * 1000)
