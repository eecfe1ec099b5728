"""IndexManager over a real in-memory IndexSource, real FAISS, real files in tmp dirs."""

import asyncio

import numpy as np
import pytest
from support.loop_guard import loop_guard, run_queue_delay_s
from support.search_fakes import MODEL, SPACE, D, MemorySource, check_oracle, clustered, seeded

from engram.config import SearchConfig
from engram.errors import InvalidInput, Unavailable, UnknownSpace
from engram.search import persist
from engram.search.filters import Filters
from engram.search.index import IndexTuning
from engram.search.manager import IndexManager
from engram.xrpc.errors import http_status


@pytest.mark.parametrize("exact_max", [100_000, 200], ids=["exact", "hnsw"])
async def test_search_and_deltas(pool, tmp_path, exact_max):
    source, _ = seeded()
    manager = IndexManager(source, pool, tmp_path, SearchConfig.of(exact_max=exact_max))
    queries = clustered(5, D, seed=9, centres=10)
    await check_oracle(manager, source, queries, filters=Filters(author="did:plc:1", tags=("even",)))
    await check_oracle(manager, source, queries)
    # add, update (delete + new id), delete: each visible to the very next search
    new_id = int(source.add(SPACE, queries[:1] * 1.0)[0])
    got = await manager.search(SPACE, MODEL, D, queries[0], 1)
    assert got.row_ids.tolist() == [new_id]
    moved = source.update(SPACE, new_id, -queries[0])
    got = await manager.search(SPACE, MODEL, D, queries[0], 10)
    assert new_id not in got.row_ids.tolist() and moved not in got.row_ids.tolist()
    source.delete(SPACE, got.row_ids[:3])
    await check_oracle(manager, source, queries)
    assert source.full_deltas == 1  # everything after the first build came as deltas
    await manager.close()


async def test_many_deletes_trigger_compaction_not_a_store_rebuild(pool):
    source, _ = seeded(n=400)
    manager = IndexManager(source, pool, None, SearchConfig.of())
    q = clustered(3, D, seed=3, centres=10)
    await check_oracle(manager, source, q)
    source.delete(SPACE, np.arange(1, 201))
    await check_oracle(manager, source, q)
    assert manager._entries[(SPACE, MODEL)].index.tombstones == 0 and source.full_deltas == 1


async def test_persisted_index_is_reused_then_caught_up(pool, tmp_path):
    source, _ = seeded(n=600)
    first = IndexManager(source, pool, tmp_path, SearchConfig.of(exact_max=300))
    q = clustered(4, D, seed=4, centres=10)
    await check_oracle(first, source, q)
    await first.close()
    [path] = persist.space_files(tmp_path, SPACE)
    meta = persist.read_header(path)
    assert meta["rows"] == 600 and meta["model_key"] == MODEL and meta["dims"] == D
    assert "coarse" in meta["sections"]
    source.add(SPACE, q[:2])
    source.delete(SPACE, [5, 6])
    second = IndexManager(source, pool, tmp_path, SearchConfig.of(exact_max=300))
    await check_oracle(second, source, q)
    assert second.disk_loads == 1 and second.builds == 0


@pytest.mark.parametrize("damage", ["flip-a-byte", "truncate", "bad-header", "empty"])
async def test_damaged_files_rebuild_from_the_store(pool, tmp_path, damage):
    source, vectors = seeded(n=300)
    first = IndexManager(source, pool, tmp_path, SearchConfig.of(exact_max=200))
    await first.warm(SPACE, MODEL, D)
    await first.close()
    [path] = persist.space_files(tmp_path, SPACE)
    data = bytearray(path.read_bytes())
    if damage == "flip-a-byte":
        data[len(data) // 2] ^= 0xFF
    elif damage == "truncate":
        data = data[: len(data) - 100]
    elif damage == "bad-header":
        data[12:20] = b"{not js,"
    else:
        data = bytearray()
    path.write_bytes(bytes(data))
    second = IndexManager(source, pool, tmp_path, SearchConfig.of(exact_max=200))
    await check_oracle(second, source, vectors[:3])
    assert second.builds == 1 and second.disk_loads == 0
    await second.close()
    third = IndexManager(source, pool, tmp_path, SearchConfig.of(exact_max=200))
    await check_oracle(third, source, vectors[:3])
    assert third.builds == 0 and third.disk_loads == 1  # the rebuild was persisted again


async def test_files_for_another_model_or_dims_are_not_reused(pool, tmp_path):
    source, _ = seeded(n=50)
    manager = IndexManager(source, pool, tmp_path, SearchConfig.of())
    await manager.warm(SPACE, MODEL, D)
    await manager.close()
    assert persist.load(tmp_path, SPACE, MODEL, D, IndexTuning(exact_max=1_000_000)) is not None
    assert persist.load(tmp_path, SPACE, MODEL, D * 2, IndexTuning(exact_max=1_000_000)) is None
    assert persist.load(tmp_path, SPACE, "other-model", D, IndexTuning(exact_max=1_000_000)) is None
    assert persist.load(tmp_path, SPACE + "x", MODEL, D, IndexTuning(exact_max=1_000_000)) is None


async def test_concurrent_searches_share_one_load(pool):
    source, vectors = seeded(n=300)
    source.delay_s = 0.2
    manager = IndexManager(source, pool, None, SearchConfig.of(load_wait_ms=60000))
    results = await asyncio.gather(*(manager.search(SPACE, MODEL, D, vectors[i], 3) for i in range(25)))
    assert source.full_deltas == 1 and manager.builds == 1
    assert all(r.row_ids[0] == i + 1 for i, r in enumerate(results))


async def test_index_loading_when_the_load_outlasts_the_wait(pool):
    source, vectors = seeded(n=300)
    source.delay_s = 0.5
    manager = IndexManager(source, pool, None, SearchConfig.of(load_wait_ms=50))
    with pytest.raises(Unavailable) as info:
        await manager.search(SPACE, MODEL, D, vectors[0], 3)
    assert info.value.name == "IndexLoading" and http_status(info.value) == 503
    await manager.flush()  # the load kept going without its caller
    assert manager.is_loaded(SPACE, MODEL)
    source.delay_s = 0
    assert (await manager.search(SPACE, MODEL, D, vectors[0], 1)).row_ids.tolist() == [1]
    assert source.full_deltas == 1


async def test_warm_returns_immediately_and_loads_in_background(pool):
    source, _ = seeded(n=100)
    source.delay_s = 0.3
    manager = IndexManager(source, pool, None, SearchConfig.of())
    await manager.warm(SPACE, MODEL, D)
    # the load sleeps 0.3 s in the source, so a warm that had waited for it would find the index loaded
    assert not manager.is_loaded(SPACE, MODEL)
    await manager.flush()
    assert manager.is_loaded(SPACE, MODEL)


async def test_lru_eviction_under_a_tiny_ram_budget(pool, tmp_path):
    source = MemorySource()
    spaces = [f"{SPACE}{i}" for i in range(3)]
    for i, space in enumerate(spaces):
        seeded(n=200, space=space, seed=i, source=source)
    manager = IndexManager(source, pool, tmp_path, SearchConfig.of(ram_bytes=1))
    q = np.ones(D, np.float32) / 4
    for space in spaces:
        await manager.search(space, MODEL, D, q, 3)
    assert manager.evictions == 2 and [manager.is_loaded(s, MODEL) for s in spaces] == [False, False, True]
    await manager.flush()
    await check_oracle(manager, source, [q], space=spaces[0])  # comes back (from disk)
    assert manager.disk_loads == 1


async def test_drop_forgets_the_space_and_its_files(pool, tmp_path):
    source, vectors = seeded(n=100)
    manager = IndexManager(source, pool, tmp_path, SearchConfig.of())
    await manager.search(SPACE, MODEL, D, vectors[0], 1)
    await manager.flush()
    assert persist.space_files(tmp_path, SPACE)
    await manager.drop(SPACE)
    assert not manager.is_loaded(SPACE, MODEL) and not persist.space_files(tmp_path, SPACE)


async def test_rebuild_reads_the_store_again(pool, tmp_path):
    source, vectors = seeded(n=100)
    manager = IndexManager(source, pool, tmp_path, SearchConfig.of())
    await manager.search(SPACE, MODEL, D, vectors[0], 1)
    await manager.rebuild(SPACE, MODEL, D)
    assert source.full_deltas == 2
    await check_oracle(manager, source, vectors[:3])


async def test_dims_mismatch_is_model_mismatch(pool):
    source, _ = seeded(n=50)
    manager = IndexManager(source, pool, None, SearchConfig.of())
    with pytest.raises(InvalidInput) as info:
        await manager.search(SPACE, MODEL, D, np.ones(D + 1, np.float32), 1)
    assert info.value.name == "ModelMismatch"


async def test_deadline_zero_flags_approximate_only_on_the_hnsw_path(pool):
    source, vectors = seeded(n=3_000)
    hnsw = IndexManager(source, pool, None, SearchConfig.of(exact_max=1000, rerank_deadline_ms=0))
    exact = IndexManager(source, pool, None, SearchConfig.of(rerank_deadline_ms=0))
    assert (await hnsw.search(SPACE, MODEL, D, vectors[0], 5)).approximate is True
    assert (await exact.search(SPACE, MODEL, D, vectors[0], 5)).approximate is False
    # a deadline no loaded machine can reach: the re-rank always finishes, so the result is exact
    normal = IndexManager(source, pool, None, SearchConfig.of(exact_max=1000, rerank_deadline_ms=600000))
    assert (await normal.search(SPACE, MODEL, D, vectors[0], 5)).approximate is False


async def test_cancelled_searches_do_not_break_the_index(pool):
    source, vectors = seeded(n=2_000)
    manager = IndexManager(source, pool, None, SearchConfig.of())
    await manager.search(SPACE, MODEL, D, vectors[0], 1)
    tasks = [asyncio.create_task(manager.search(SPACE, MODEL, D, vectors[i], 5)) for i in range(20)]
    await asyncio.sleep(0)
    for t in tasks[::2]:
        t.cancel()
    source.add(SPACE, vectors[:5])
    await asyncio.gather(*tasks, return_exceptions=True)
    await check_oracle(manager, source, vectors[:3])
    await manager.flush()


async def test_searches_never_block_the_event_loop(pool):
    d = 384
    source = MemorySource()
    vectors = clustered(20_000, d, seed=11)
    source.add(SPACE, vectors)
    manager = IndexManager(source, pool, None, SearchConfig.of(exact_max=10000))
    queries = clustered(64, d, seed=12, centres=40)
    async with loop_guard() as guard:
        await manager.warm(SPACE, MODEL, d)  # the HNSW build itself must stay off the loop
        await manager.flush()
        for _ in range(3):
            results = await asyncio.gather(*(manager.search(SPACE, MODEL, d, q, 10) for q in queries))
            source.add(SPACE, queries[:2])  # deltas applied between rounds, also off the loop
        results = await asyncio.gather(
            *(manager.search(SPACE, MODEL, d, q, 10, Filters(since_ms=0)) for q in queries)
        )
    assert guard.beats > 10 and all(len(r.row_ids) == 10 for r in results)


async def test_persisted_index_of_the_wrong_kind_is_rebuilt_on_load(pool, tmp_path):
    source, vectors = seeded(n=600)
    exact = IndexManager(source, pool, tmp_path, SearchConfig.of())  # 600 rows <= exact_max: flat fp16 only
    await exact.warm(SPACE, MODEL, D)
    await exact.close()
    smaller = IndexManager(source, pool, tmp_path, SearchConfig.of(exact_max=300))
    await check_oracle(smaller, source, vectors[:3])
    assert smaller.disk_loads == 1 and smaller._entries[(SPACE, MODEL)].index.coarse is not None


async def test_a_dropped_space_loads_afresh(pool, tmp_path):
    source, vectors = seeded(n=100)
    manager = IndexManager(source, pool, tmp_path, SearchConfig.of())
    await manager.search(SPACE, MODEL, D, vectors[0], 1)
    await manager.drop(SPACE)
    await manager.flush()
    assert not persist.space_files(tmp_path, SPACE)
    await check_oracle(manager, source, vectors[:2])
    assert manager.builds == 2


async def test_rebuild_of_an_unloaded_index_discards_its_files(pool, tmp_path):
    source, vectors = seeded(n=100)
    first = IndexManager(source, pool, tmp_path, SearchConfig.of())
    await first.warm(SPACE, MODEL, D)
    await first.close()
    second = IndexManager(source, pool, tmp_path, SearchConfig.of())
    await second.rebuild(SPACE, MODEL)
    assert persist.load(tmp_path, SPACE, MODEL, D, IndexTuning(exact_max=1_000_000)) is None
    await check_oracle(second, source, vectors[:2])
    assert second.builds == 1


async def test_loop_guard_catches_work_on_the_loop():
    import time

    with pytest.raises(AssertionError, match="computed for"):
        async with loop_guard():
            await asyncio.sleep(0.02)
            end = time.thread_time() + 0.15
            while time.thread_time() < end:  # a search run inline would look like this
                pass
            await asyncio.sleep(0.02)


@pytest.mark.skipif(run_queue_delay_s() is None, reason="telling blocking from load needs Linux schedstat")
async def test_loop_guard_catches_a_loop_blocked_by_another_thread():
    import threading
    import time

    held, about_to_block = threading.Lock(), threading.Event()
    held.acquire()

    def release_a_second_later():
        # Counted from the loop thread's last step before it blocks, not from an earlier moment a slow
        # machine could stretch: the loop sleeps on the lock for about a second, five times the limit.
        about_to_block.wait()
        time.sleep(1.0)
        held.release()

    threading.Thread(target=release_a_second_later, daemon=True).start()
    with pytest.raises(AssertionError, match="blocked for"):
        async with loop_guard(max_blocked_s=0.2):
            await asyncio.sleep(0.02)
            about_to_block.set()
            with held:  # the loop thread sleeps on a lock another thread holds: not busy, not load
                pass
            await asyncio.sleep(0.02)


async def test_then_runs_on_the_result_and_generation_skips_the_source_call(pool):
    source, vectors = seeded(n=200)
    manager = IndexManager(source, pool, None, SearchConfig.of())
    ids = await manager.search(SPACE, MODEL, D, vectors[0], 3, then=lambda r: r.row_ids.tolist())
    assert ids[0] == 1
    new_id = int(source.add(SPACE, vectors[:1])[0])
    gen = await source.generation(SPACE)
    got = await manager.search(SPACE, MODEL, D, vectors[0], 2, generation=gen)
    assert sorted(got.row_ids.tolist()) == [1, new_id]


async def test_a_source_lagging_its_generation_does_not_hang_the_search(pool):
    source, vectors = seeded(n=50)
    manager = IndexManager(source, pool, None, SearchConfig.of())
    got = await asyncio.wait_for(manager.search(SPACE, MODEL, D, vectors[0], 1, generation=10**6), 5)
    assert got.row_ids.tolist() == [1]


async def test_graph_is_exact_on_a_fresh_index(pool):
    source, vectors = seeded(n=300)
    manager = IndexManager(source, pool, None, SearchConfig.of())
    await manager.search(SPACE, MODEL, D, vectors[0], 1)
    twin, newest = (
        source.add(SPACE, vectors[:1]),
        source.add(SPACE, vectors[:1]),
    )  # two writes, two generations
    found = await manager.graph(SPACE, MODEL, D, 20, 3)
    assert found.row_ids[0] == newest[0] and found.neighbor_ids[0][0] == twin[0]
    assert found.scores[0][0] == pytest.approx(1.0, abs=1e-3)


async def test_builds_run_on_the_maintenance_pool_and_searches_on_the_search_pool(
    pool, tmp_path, monkeypatch
):
    import threading

    from engram.search.index import SpaceIndex
    from engram.workers import WorkerPool

    seen: dict[str, set[str]] = {"build": set(), "search": set()}
    build, search = SpaceIndex.build.__func__, SpaceIndex.search

    def recording_build(cls, *args, **kwargs):
        seen["build"].add(threading.current_thread().name)
        return build(cls, *args, **kwargs)

    def recording_search(self, *args, **kwargs):
        seen["search"].add(threading.current_thread().name)
        return search(self, *args, **kwargs)

    monkeypatch.setattr(SpaceIndex, "build", classmethod(recording_build))
    monkeypatch.setattr(SpaceIndex, "search", recording_search)
    maintenance = WorkerPool(1, name="test-maintenance")
    try:
        source, vectors = seeded()
        manager = IndexManager(source, pool, tmp_path, SearchConfig.of(), maintenance_pool=maintenance)
        await check_oracle(manager, source, vectors[:3])
        await manager.close()
    finally:
        maintenance.close()
    assert seen["build"] and all(name.startswith("test-maintenance") for name in seen["build"])
    assert seen["search"] and all(name.startswith("test-search") for name in seen["search"])


async def test_a_saved_index_lets_the_store_prune_its_tombstones(pool, tmp_path):
    source, _ = seeded(n=300)
    manager = IndexManager(source, pool, tmp_path, SearchConfig.of())
    q = clustered(2, D, seed=5, centres=10)
    await check_oracle(manager, source, q)
    source.delete(SPACE, [1, 2, 3])
    await check_oracle(manager, source, q)  # the deletions arrive as a delta
    await manager.close()
    generation = source.spaces[SPACE].generation
    assert source.prunes[-1] == (SPACE, generation) and source.spaces[SPACE].deleted == []


class _PruneFails(MemorySource):
    def __init__(self, error: Exception):
        super().__init__()
        self.error = error

    async def prune_tombstones(self, space, through_generation):
        raise self.error


@pytest.mark.parametrize("gone", [True, False], ids=["space-deleted", "other-error"])
async def test_only_a_deleted_space_excuses_a_failed_prune(pool, tmp_path, gone):
    error = UnknownSpace("unknown space") if gone else InvalidInput("database says no")
    source, _ = seeded(n=100, source=_PruneFails(error))
    manager = IndexManager(source, pool, tmp_path, SearchConfig.of())
    await manager.search(SPACE, MODEL, D, clustered(1, D, seed=6)[0], 5)
    await manager.flush()  # the build was saved, so there is something the store could prune
    if gone:
        await manager._prune(SPACE)  # nothing left to prune: not an error
    else:
        with pytest.raises(InvalidInput, match="database says no"):  # not "the space is gone"
            await manager._prune(SPACE)
    await manager.close()
