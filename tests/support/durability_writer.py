"""Run by test_store_durability.py: write memories one acknowledged batch at a time and print each rkey
only after `store.write` has returned, until killed. The target is a data dir (SQLite) or a
postgresql:// URL."""

import asyncio
import sys
from pathlib import Path

from engram.store import MemoryWrite
from engram.store.backends import open_store
from engram.store.memory_writes import put_memories
from engram.store.spaces import create_space, get_space


async def main(target: str, space: str) -> None:
    url = target if target.startswith("postgresql://") else None
    store = await open_store(Path(target), url)
    if await store.read(get_space, space) is None:
        await store.write(create_space, space, "hosted")
    print("ready", flush=True)
    i = 0
    while True:
        [record] = await store.write(put_memories, space, [MemoryWrite("did:plc:writer", f"memory {i}")])
        print(record.rkey, flush=True)
        i += 1


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
