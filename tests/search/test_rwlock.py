import asyncio

from engram.search.rwlock import ReadWriteLock


async def test_readers_share_writers_exclude_and_are_preferred():
    lock = ReadWriteLock()
    events: list[str] = []
    first_reader_in = asyncio.Event()
    release_first = asyncio.Event()

    async def reader(name, hold=None):
        async with lock.read():
            events.append(f"{name}+")
            if hold is not None:
                first_reader_in.set()
                await hold.wait()
            events.append(f"{name}-")

    async def writer():
        async with lock.write():
            events.append("w+")
            await asyncio.sleep(0.01)
            events.append("w-")

    r1 = asyncio.create_task(reader("r1", release_first))
    await first_reader_in.wait()
    w = asyncio.create_task(writer())
    await asyncio.sleep(0.01)
    r2 = asyncio.create_task(reader("r2"))  # arrives while a writer waits: must queue behind it
    await asyncio.sleep(0.01)
    assert events == ["r1+"]
    release_first.set()
    await asyncio.gather(r1, w, r2)
    assert events == ["r1+", "r1-", "w+", "w-", "r2+", "r2-"]


async def test_cancelled_waiting_writer_releases_readers():
    lock = ReadWriteLock()
    hold = asyncio.Event()

    async def long_reader():
        async with lock.read():
            await hold.wait()

    r1 = asyncio.create_task(long_reader())
    await asyncio.sleep(0)
    w = asyncio.create_task(lock.write().__aenter__())
    await asyncio.sleep(0.01)
    w.cancel()
    await asyncio.gather(w, return_exceptions=True)
    async with asyncio.timeout(30):  # a hang, not a slow machine, fails this
        async with lock.read():
            pass
    hold.set()
    await r1
