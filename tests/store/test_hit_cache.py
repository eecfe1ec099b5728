"""HitCache: hydrated search hits by (space id, row id), bounded by estimated bytes, least recently used out."""

from __future__ import annotations

import threading

from engram.store.hit_cache import HitCache, _estimated_bytes
from engram.store.models import Memory


def memory(row_id: int, text: str = "") -> Memory:
    return Memory(
        row_id, f"at://did:plc:a/garden.engram.memory/{row_id:04d}", "bafy", "did:plc:a", str(row_id),
        text or f"text {row_id:04d}", ("t",), None, {}, "2026-01-01T00:00:00.000Z", 0,
        "2026-01-01T00:00:00.000Z", "m", None, None, None,
    )  # fmt: skip


class Reader:
    """The database side: answers the ids it holds, records every call."""

    def __init__(self, rows: dict[int, Memory]):
        self.rows = rows
        self.calls: list[list[int]] = []

    def __call__(self, row_ids: list[int]) -> list[Memory]:
        self.calls.append(list(row_ids))
        return [self.rows[r] for r in row_ids if r in self.rows]


def test_order_is_the_callers_and_missing_rows_are_dropped():
    reader = Reader({r: memory(r) for r in (1, 2, 3)})
    cache = HitCache(1 << 20)
    assert [m.row_id for m in cache.hydrate(7, [3, 9, 1, 2], reader)] == [3, 1, 2]
    assert [m.row_id for m in cache.hydrate(7, [2, 3, 9], reader)] == [2, 3]
    # the second call read only the id the first could not find
    assert reader.calls == [[3, 9, 1, 2], [9]]
    assert (cache.hits, cache.misses) == (2, 3)


def test_spaces_do_not_share_rows():
    reader = Reader({1: memory(1)})
    cache = HitCache(1 << 20)
    cache.hydrate(1, [1], reader)
    cache.hydrate(2, [1], reader)
    assert reader.calls == [[1], [1]]


def test_bounded_by_bytes_least_recently_used_first():
    rows = {r: memory(r, "x" * 1000) for r in range(10)}
    size = _estimated_bytes(rows[0])
    cache = HitCache(3 * size)
    reader = Reader(rows)
    cache.hydrate(1, [0, 1, 2], reader)
    cache.hydrate(1, [0], reader)  # 0 is now the most recently used
    cache.hydrate(1, [3], reader)  # evicts 1, the least recently used
    assert len(cache) == 3 and cache.bytes == 3 * size
    reader.calls.clear()
    cache.hydrate(1, [0, 1, 2, 3], reader)
    assert reader.calls == [[1]]
    assert cache.bytes <= cache.max_bytes


def test_a_zero_budget_always_reads():
    reader = Reader({1: memory(1)})
    cache = HitCache(0)
    cache.hydrate(1, [1], reader)
    cache.hydrate(1, [1], reader)
    assert reader.calls == [[1], [1]] and len(cache) == 0


def test_concurrent_hydration_keeps_the_accounting_exact():
    rows = {r: memory(r) for r in range(200)}
    size = _estimated_bytes(rows[0])
    cache = HitCache(50 * size)
    reader = Reader(rows)
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for i in range(300):
                ids = [(offset * 7 + i * 3 + j) % 200 for j in range(10)]
                got = cache.hydrate(1, ids, reader)
                assert [m.row_id for m in got] == ids
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert cache.bytes == size * len(cache) <= cache.max_bytes


def test_the_metrics_collector_reports_the_counters():
    from engram.metrics import HitCacheCollector

    cache = HitCache(1 << 20)
    reader = Reader({1: memory(1), 2: memory(2)})
    cache.hydrate(1, [1, 2], reader)
    cache.hydrate(1, [1], reader)
    families = {f.name: f for f in HitCacheCollector(cache).collect()}
    lookups = {s.labels["result"]: s.value for s in families["engram_search_hit_cache_lookups"].samples}
    assert lookups == {"hit": 1, "miss": 2}
    assert families["engram_search_hit_cache_bytes"].samples[0].value == cache.bytes > 0


def test_cached_answers_only_what_is_held_and_add_fills_it():
    cache = HitCache(1 << 20)
    assert cache.cached(7, [1, 2]) == {}
    cache.add(7, [memory(1), memory(2)])
    assert sorted(cache.cached(7, [2, 1, 3])) == [1, 2]
    assert cache.cached(8, [1]) == {}  # another space's row 1
    assert (cache.hits, cache.misses) == (2, 2)
    off = HitCache(0)
    off.add(7, [memory(1)])
    assert off.cached(7, [1]) == {} and len(off) == 0
