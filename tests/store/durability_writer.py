"""Run by test_store_durability.py: write memories one acknowledged batch at a time and print each rkey
only after `store.write` has returned, until killed."""

import asyncio
import sys

from engram.store import MemoryWrite, Store, database_path
from engram.store.memories import put_memories
from engram.store.spaces import create_space, get_space


async def main(data_dir: str, space: str) -> None:
    store = await Store.open(database_path(data_dir))
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
