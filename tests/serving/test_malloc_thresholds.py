"""engram/serving/malloc_thresholds.py: `engram serve` fixes glibc's mmap threshold, read back from glibc
itself in a fresh interpreter: after a 1 MiB block is freed, a 256 KiB one is still mmapped (by default
the freed block raises the threshold, and the 256 KiB block comes from the heap)."""

import os
import platform
import re
import subprocess
import sys

import pytest

from engram.serving.malloc_thresholds import fix_malloc_thresholds

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc malloc only"
)

MMAPPED_AFTER_A_LARGE_FREE = """
import ctypes, sys, tempfile
from engram.serving.malloc_thresholds import fix_malloc_thresholds
applied = fix_malloc_thresholds() if sys.argv[1] == "fix" else None
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
libc.fopen.restype = ctypes.c_void_p
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]

def info():
    with tempfile.NamedTemporaryFile(suffix=".xml") as out:
        fp = libc.fopen(out.name.encode(), b"w")
        libc.malloc_info(0, fp)
        libc.fclose(fp)
        return open(out.name).read()

libc.free(libc.malloc(1024 * 1024))
before = info()
block = libc.malloc(256 * 1024)
after = info()
print(applied)
print(before)
print(after)
"""


def _mmapped_blocks(xml: str) -> int:
    return int(re.search(r'<total type="mmap" count="(\d+)"', xml).group(1))


def _new_mmapped_block(mode: str, **env: str) -> tuple[str, int]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run(
        [sys.executable, "-c", MMAPPED_AFTER_A_LARGE_FREE, mode],
        env=base | env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    applied, rest = out.split("\n", 1)
    before, after = rest.split("</malloc>", 1)
    return applied, _mmapped_blocks(after) - _mmapped_blocks(before)


def test_the_fixed_threshold_keeps_large_blocks_mmapped_after_a_large_free():
    assert _new_mmapped_block("fix") == ("131072", 1)
    assert _new_mmapped_block("none") == ("None", 0)  # glibc's dynamic threshold: the readback can tell


def test_a_threshold_set_by_the_user_is_left_alone():
    assert fix_malloc_thresholds({"MALLOC_MMAP_THRESHOLD_": "4194304"}) is None
    # the user's 4 MiB threshold stands (had engram fixed its own 128 KiB, the block would be mmapped)
    assert _new_mmapped_block("fix", MALLOC_MMAP_THRESHOLD_="4194304") == ("None", 0)
