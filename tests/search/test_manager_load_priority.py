"""Saved-index loads next to warm searches (engram/search/loader.py): a warm search finishes while a load is
held mid-way, loads give way to searches in flight, batches of loads are adopted with exact accounting, and
a failing or refused load reaches its callers. Real FAISS and files; ordering is proven with events that
the test holds, never with timings."""

import asyncio
import threading

import numpy as np
import pytest
from support.search_fakes import MODEL, MemorySource, spaces_with_rows

from engram.config import SearchConfig
from engram.search import persist
from engram.search.manager import IndexManager
from engram.workers import WorkerPool

D = 16
Q = np.ones(D, np.float32) / 4
WAIT_S = 60  # generous bound for polls on a busy machine; never a measured duration


async def saved(source: MemorySource, names: list[str], pool: WorkerPool, data_dir) -> None:
    """Build and save every space's index, so a fresh manager loads them from files."""
    builder = IndexManager(source, pool, data_dir, SearchConfig.of())
    for name in names:
        await builder.search(name, MODEL, D, Q, 3)
    await builder.close()


async def until(check, what: str) -> None:
    for _ in range(WAIT_S * 100):
        if check():
            return
        await asyncio.sleep(0.01)
    pytest.fail(f"timed out waiting for {what}")


@pytest.fixture
def loads():
    workers = WorkerPool(1, name="test-priority-loads")
    yield workers
    workers.close()


async def test_a_warm_search_finishes_while_a_load_is_held_mid_way(pool, loads, tmp_path, monkeypatch):
    source, names = spaces_with_rows(2, rows=12)
    await saved(source, names, pool, tmp_path)
    manager = IndexManager(source, pool, tmp_path, SearchConfig.of(), load_pool=loads)
    await manager.search(names[0], MODEL, D, Q, 3)
    inside, release = threading.Event(), threading.Event()
    decode = persist._decode

    def held_decode(*args, **kwargs):  # the file is read; decoding waits for the test
        inside.set()
        release.wait(WAIT_S)
        return decode(*args, **kwargs)

    monkeypatch.setattr(persist, "_decode", held_decode)
    try:
        await manager.warm(names[1], MODEL, D)
        assert await asyncio.to_thread(inside.wait, WAIT_S)
        for _ in range(5):  # the warm space answers while the only load thread is stuck in a load
            assert len((await manager.search(names[0], MODEL, D, Q, 3)).row_ids) == 3
        assert not manager.is_loaded(names[1], MODEL) and not release.is_set()
    finally:
        release.set()
    await manager.flush()
    assert manager.is_loaded(names[1], MODEL) and manager.disk_loads == 2
    await manager.close()


async def test_loads_wait_for_the_warm_searches_in_flight(pool, loads, tmp_path, monkeypatch):
    source, names = spaces_with_rows(3, rows=12)
    await saved(source, names, pool, tmp_path)
    manager = IndexManager(source, pool, tmp_path, SearchConfig.of(), load_pool=loads, load_yield_s=WAIT_S)
    await manager.search(names[0], MODEL, D, Q, 3)
    order: list[str] = []
    load = persist.load
    monkeypatch.setattr(persist, "load", lambda *args, **kw: order.append("load") or load(*args, **kw))
    at_gate = threading.Event()
    gate = manager._saved._idle
    original_wait = gate.wait

    def watched_wait(timeout=None):
        at_gate.set()
        return original_wait(timeout)

    monkeypatch.setattr(gate, "wait", watched_wait)
    searching, finish = threading.Event(), threading.Event()

    def hold(result):  # runs in the search worker, inside the warm search
        searching.set()
        finish.wait(WAIT_S)
        order.append("search")
        return result

    warm = asyncio.ensure_future(manager.search(names[0], MODEL, D, Q, 3, then=hold))
    try:
        assert await asyncio.to_thread(searching.wait, WAIT_S)
        await manager.warm(names[1], MODEL, D)
        await manager.warm(names[2], MODEL, D)
        assert await asyncio.to_thread(at_gate.wait, WAIT_S)  # the load thread stands at the gate...
        assert order == []  # ...and has not started a load
    finally:
        finish.set()
    assert len((await warm).row_ids) == 3
    await manager.flush()
    assert order == ["search", "load", "load"]
    assert manager.is_loaded(names[1], MODEL) and manager.is_loaded(names[2], MODEL)
    await manager.close()


async def test_many_loads_at_once_are_adopted_in_batches_with_exact_accounting(pool, loads, tmp_path):
    source, names = spaces_with_rows(75, rows=12)  # more than two adoption batches
    await saved(source, names, pool, tmp_path)
    manager = IndexManager(source, pool, tmp_path, SearchConfig.of(), load_pool=loads)
    for name in names:
        await manager.warm(name, MODEL, D)
    await manager.warm(names[0], MODEL, D)  # asked twice while loading: still one load
    await manager.flush()
    assert manager.loaded_count() == 75 and manager.disk_loads == 75 and manager.builds == 0
    loaded = [manager.loaded_index(name, MODEL) for name in names]
    assert manager.loaded_bytes() == sum(index.nbytes() for index in loaded)
    found = await manager.search(names[40], MODEL, D, Q, 12)
    assert sorted(found.row_ids.tolist()) == sorted(source.live_rows(names[40]).row_ids.tolist())
    await manager.close()


async def test_a_failing_load_reaches_its_caller_and_the_next_search_retries(
    pool, loads, tmp_path, monkeypatch
):
    source, names = spaces_with_rows(1, rows=12)
    await saved(source, names, pool, tmp_path)
    manager = IndexManager(source, pool, tmp_path, SearchConfig.of(), load_pool=loads)
    load = persist.load

    def unreadable(*args, **kwargs):
        raise PermissionError("index file is not readable")

    monkeypatch.setattr(persist, "load", unreadable)
    with pytest.raises(PermissionError):
        await manager.search(names[0], MODEL, D, Q, 3)
    monkeypatch.setattr(persist, "load", load)
    assert len((await manager.search(names[0], MODEL, D, Q, 3)).row_ids) == 3
    assert manager.disk_loads == 1
    await manager.close()


async def test_a_load_asked_of_a_shut_down_pool_fails_instead_of_hanging(pool, tmp_path):
    source, names = spaces_with_rows(1, rows=12)
    await saved(source, names, pool, tmp_path)
    closed = WorkerPool(1, name="test-closed-loads")
    closed.close()
    manager = IndexManager(source, pool, tmp_path, SearchConfig.of(), load_pool=closed)
    with pytest.raises(RuntimeError):
        await manager.search(names[0], MODEL, D, Q, 3)
    await manager.flush()
    assert not manager.is_loaded(names[0], MODEL)


async def test_a_search_that_never_ends_delays_loads_but_does_not_starve_them(pool, loads, tmp_path):
    source, names = spaces_with_rows(3, rows=12)
    await saved(source, names, pool, tmp_path)
    manager = IndexManager(source, pool, tmp_path, SearchConfig.of(), load_pool=loads, load_yield_s=0.01)
    await manager.search(names[0], MODEL, D, Q, 3)
    searching, finish = threading.Event(), threading.Event()

    def hold(result):
        searching.set()
        finish.wait(WAIT_S)
        return result

    warm = asyncio.ensure_future(manager.search(names[0], MODEL, D, Q, 3, then=hold))
    try:
        assert await asyncio.to_thread(searching.wait, WAIT_S)
        for name in names[1:]:  # one after the other: each adoption is held back, then goes ahead
            await manager.warm(name, MODEL, D)
            await until(lambda name=name: manager.is_loaded(name, MODEL), "a load while a search is held")
        assert not finish.is_set() and not warm.done()  # loaded and adopted while the search still runs
    finally:
        finish.set()
    assert len((await warm).row_ids) == 3
    await manager.close()
