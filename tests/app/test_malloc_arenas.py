"""engram/serving/malloc_arenas.py: `engram serve` caps glibc's malloc arenas at one, read back from glibc
itself (malloc_info lists one <heap> per arena) in a fresh interpreter whose threads all allocate."""

import os
import platform
import subprocess
import sys

import pytest

from engram.serving.malloc_arenas import limit_malloc_arenas

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc malloc arenas only"
)

# Eight threads each malloc while the others hold their blocks: glibc hands each new thread an arena of its
# own up to its limit. Then malloc_info's XML has one <heap nr=...> element per arena.
COUNT_ARENAS = """
import ctypes, sys, tempfile, threading
from engram.serving.malloc_arenas import limit_malloc_arenas
applied = limit_malloc_arenas() if sys.argv[1] == "limit" else None
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
libc.fopen.restype = ctypes.c_void_p
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
barrier = threading.Barrier(8)

def allocate():
    blocks = [libc.malloc(4096) for _ in range(64)]
    barrier.wait()
    for block in blocks:
        libc.free(block)

threads = [threading.Thread(target=allocate) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
with tempfile.NamedTemporaryFile(suffix=".xml") as out:
    fp = libc.fopen(out.name.encode(), b"w")
    libc.malloc_info(0, fp)
    libc.fclose(fp)
    print(applied, open(out.name).read().count("<heap nr="))
"""


def _arenas(mode: str, **env: str) -> tuple[str, int]:
    base = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    out = subprocess.run(
        [sys.executable, "-c", COUNT_ARENAS, mode], env=base | env, capture_output=True, text=True, check=True
    ).stdout.split()
    return out[0], int(out[1])


def test_the_cap_leaves_one_arena_where_threads_would_otherwise_get_their_own():
    assert _arenas("limit") == ("1", 1)
    applied, default_arenas = _arenas("none")
    assert applied == "None" and default_arenas > 1  # the readback can tell the difference


def test_a_malloc_arena_max_set_by_the_user_is_left_alone():
    assert limit_malloc_arenas({"MALLOC_ARENA_MAX": "4"}) is None
    applied, arenas = _arenas("limit", MALLOC_ARENA_MAX="4")
    assert applied == "None" and 1 < arenas <= 4
