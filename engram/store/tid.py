"""AT Protocol TIDs: 13 characters of base32-sortable encoding a 64-bit integer whose top bit is 0, then
53 bits of microseconds since the epoch, then a 10-bit clock id.

Hand-written because it is a dozen lines and the installed atproto packages only ship a validation regex
(inside the heavy pydantic models), not a generator.
"""

from __future__ import annotations

import re
import secrets
import threading
import time

_ALPHABET = "234567abcdefghijklmnopqrstuvwxyz"
_TID_RE = re.compile(r"[234567abcdefghij][234567abcdefghijklmnopqrstuvwxyz]{12}")
_CLOCK_ID = secrets.randbelow(1024)  # one per process, so two processes rarely mint the same TID

_lock = threading.Lock()
_last_micros = 0


def encode_tid(micros: int, clock_id: int) -> str:
    if not 0 <= micros < 2**53 or not 0 <= clock_id < 1024:
        raise ValueError("TID timestamp or clock id out of range")
    value = (micros << 10) | clock_id
    return "".join(_ALPHABET[(value >> shift) & 31] for shift in range(60, -1, -5))


def decode_tid(tid: str) -> tuple[int, int]:
    """(microseconds since the epoch, clock id) of a valid TID."""
    if not is_valid_tid(tid):
        raise ValueError(f"not a TID: {tid!r}")
    value = 0
    for char in tid:
        value = (value << 5) | _ALPHABET.index(char)
    return value >> 10, value & 1023


def is_valid_tid(tid: object) -> bool:
    return isinstance(tid, str) and _TID_RE.fullmatch(tid) is not None


def new_tid() -> str:
    """A TID for now; strictly increasing within this process even if the wall clock steps back."""
    global _last_micros
    with _lock:
        micros = max(time.time_ns() // 1000, _last_micros + 1)
        _last_micros = micros
    return encode_tid(micros, _CLOCK_ID)
