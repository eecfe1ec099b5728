"""IndexManager at many spaces: O(1) accounting, LRU eviction, parallel cold loads, warm searches that never
queue behind loads, bounded shutdown saves, and a Retry-After on IndexLoading. Real FAISS, real files;
ordering is proven with barriers and blocked pools, never with timings."""

import asyncio
import threading

import numpy as np
import pytest
from support.search_fakes import MODEL, clustered, spaces_with_rows

from engram.config import SearchConfig
from engram.errors import Unavailable
from engram.search import persist
from engram.search.index import IndexTuning, SpaceIndex
from engram.search.manager import IndexManager
from engram.workers import WorkerPool

D = 16
Q = np.ones(D, np.float32) / 4


def full_sum(manager: IndexManager, names: list[str]) -> int:
    loaded = [manager.loaded_index(name, MODEL) for name in names]
    return sum(index.nbytes() for index in loaded if index is not None)


@pytest.fixture
def loads():
    workers = WorkerPool(2, name="test-loads")
    yield workers
    workers.close()


async def test_running_total_equals_the_full_sum_through_loads_deltas_and_evictions(pool, loads, tmp_path):
    source, names = spaces_with_rows(30)
    manager = IndexManager(source, pool, tmp_path, SearchConfig.of(), load_pool=loads)
    for name in names:
        await manager.search(name, MODEL, D, Q, 3)
    assert manager.loaded_count() == 30 and manager.loaded_bytes() == full_sum(manager, names)
    for i, name in enumerate(names[:10]):  # grow some indexes in place (deltas) and shrink others
        source.add(name, clustered(40, D, seed=100 + i))
        source.delete(names[10 + i], source.live_rows(names[10 + i]).row_ids[:5])
    for name in names[:20]:
        await manager.search(name, MODEL, D, Q, 3)
    assert manager.loaded_bytes() == full_sum(manager, names)
    manager.ram_bytes = manager.loaded_bytes() // 2  # a smaller budget: the next load evicts
    await manager.search(names[0], MODEL, D, Q, 3)
    source.add(names[0], clustered(5, D, seed=7))
    await manager.search(names[0], MODEL, D, Q, 3)  # a delta re-accounts and evicts down to the budget
    assert manager.evictions > 0 and manager.loaded_bytes() <= manager.ram_bytes
    assert manager.loaded_bytes() == full_sum(manager, names)
    await manager.close()


async def test_eviction_takes_the_least_recently_used_first(pool, loads, tmp_path):
    source, names = spaces_with_rows(4)
    manager = IndexManager(source, pool, tmp_path, SearchConfig.of(), load_pool=loads)
    for name in names[:3]:
        await manager.search(name, MODEL, D, Q, 3)
    await manager.search(names[0], MODEL, D, Q, 3)  # touch: names[1] is now the oldest
    manager.ram_bytes = manager.loaded_bytes()  # exactly full: one more load must evict one index
    await manager.search(names[3], MODEL, D, Q, 3)
    assert [manager.is_loaded(name, MODEL) for name in names] == [True, False, True, True]
    await manager.close()


async def test_cold_loads_of_different_spaces_run_side_by_side(pool, loads, monkeypatch):
    source, names = spaces_with_rows(2)
    both_building = threading.Barrier(2, timeout=60)  # breaks (and fails the test) if builds are serial
    build = SpaceIndex.build.__func__

    def build_together(cls, *args, **kwargs):
        both_building.wait()
        return build(cls, *args, **kwargs)

    monkeypatch.setattr(SpaceIndex, "build", classmethod(build_together))
    manager = IndexManager(source, pool, None, SearchConfig.of(load_wait_ms=120000), load_pool=loads)
    found = await asyncio.gather(*(manager.search(name, MODEL, D, Q, 3) for name in names))
    assert [len(result.row_ids) for result in found] == [3, 3]


async def test_a_warm_search_never_waits_for_another_spaces_load(pool, tmp_path):
    source, names = spaces_with_rows(2)
    loads = WorkerPool(1, name="test-blocked-loads")
    release = threading.Event()
    try:
        manager = IndexManager(
            source, pool, tmp_path, SearchConfig.of(load_wait_ms=50), load_pool=loads, maintenance_pool=loads
        )
        await manager.search(names[0], MODEL, D, Q, 3)
        await manager.flush()
        loads.submit(release.wait, 60)  # the only load thread is now busy: names[1] cannot load
        with pytest.raises(Unavailable) as info:
            await manager.search(names[1], MODEL, D, Q, 3)
        assert info.value.name == "IndexLoading" and info.value.retry_after == 1
        for _ in range(5):  # the warm space answers while the other load is stuck
            assert len((await manager.search(names[0], MODEL, D, Q, 3)).row_ids) == 3
        assert not manager.is_loaded(names[1], MODEL)
    finally:
        release.set()
        await manager.flush()
        loads.close()


async def test_shutdown_saves_every_changed_index(pool, loads, tmp_path):
    source, names = spaces_with_rows(12)
    manager = IndexManager(source, pool, tmp_path, SearchConfig.of(), load_pool=loads)
    for name in names:
        await manager.search(name, MODEL, D, Q, 3)
    await manager.flush()
    for name in names:
        source.add(name, clustered(3, D, seed=50))
        await manager.search(name, MODEL, D, Q, 3)  # applied in place: unsaved until close
    await manager.close()
    for name in names:
        saved = persist.load(tmp_path, name, MODEL, D, IndexTuning(exact_max=1_000_000))
        assert saved is not None and saved.generation == await source.generation(name)


async def test_shutdown_is_bounded_and_a_cut_off_save_is_rebuilt_later(pool, tmp_path):
    source, names = spaces_with_rows(2)
    loads = WorkerPool(1, name="test-stuck-saves")
    release = threading.Event()
    manager = IndexManager(source, pool, tmp_path, SearchConfig.of(), load_pool=loads, shutdown_save_s=0.2)
    try:
        for name in names:
            await manager.search(name, MODEL, D, Q, 3)
        await manager.flush()
        source.add(names[0], clustered(3, D, seed=9))
        await manager.search(names[0], MODEL, D, Q, 3)
        loads.submit(release.wait, 60)  # saves cannot start: close must still return
        await manager.close()
    finally:
        release.set()
        loads.close()
    again = IndexManager(source, pool, tmp_path, SearchConfig.of())
    result = await again.search(names[0], MODEL, D, Q, 25)
    assert len(result.row_ids) == 23  # every row, whether from the late save or a rebuild
    await again.close()
