"""Index snapshots in a shared object store: the contract, once per backend (file:// and s3:// via moto).

Each "node" is an IndexManager with a data dir of its own; the nodes share one store (the in-memory
`MemorySource`, the database every node reads) and one snapshot store. Whether a node built or loaded is
proven by counting (`builds`, full deltas, the snapshot counters), never by timing."""

import asyncio

import numpy as np
import pytest
from support.fakes.object_store import closed_port, fake_aws_env
from support.search_fakes import MODEL, SPACE, D, check_oracle, clustered, seeded

from engram.config import SearchConfig
from engram.search import persist
from engram.search.index import IndexTuning
from engram.search.manager import IndexManager
from engram.search.snapshot_sync import SnapshotSync
from engram.search.snapshots import SnapshotStore

QUERIES = clustered(4, D, seed=4, centres=10)


def node(source, pool, data_dir, store_url, **kw) -> IndexManager:
    url, endpoint = store_url
    sync = SnapshotSync(SnapshotStore.open(url, endpoint), data_dir, pool)
    return IndexManager(
        source, pool, data_dir, SearchConfig.of(exact_max=kw.pop("exact_max", 200)), snapshots=sync, **kw
    )


async def first_node_uploads(source, pool, tmp_path, store_url) -> IndexManager:
    first = node(source, pool, tmp_path / "a", store_url)
    await check_oracle(first, source, QUERIES)
    await first.flush()
    assert first.builds == 1 and first.snapshot_stats().uploads == 1
    return first


async def test_a_new_node_loads_the_snapshot_and_the_delta_instead_of_building(
    pool, tmp_path, snapshot_store_url
):
    source, _ = seeded(n=500)  # above exact_max: an HNSW graph, the expensive thing to rebuild
    first = await first_node_uploads(source, pool, tmp_path, snapshot_store_url)
    assert (
        first.snapshot_stats().bytes_uploaded
        == persist.index_path(tmp_path / "a", SPACE, MODEL).stat().st_size
    )
    source.add(SPACE, QUERIES[:2])  # written after the snapshot: the new node catches up from the store
    source.delete(SPACE, [3, 4])
    full_deltas = source.full_deltas

    second = node(source, pool, tmp_path / "b", snapshot_store_url)
    await check_oracle(second, source, QUERIES)
    stats = second.snapshot_stats()
    assert second.builds == 0 and source.full_deltas == full_deltas
    assert stats.downloads == 1 and stats.bytes_downloaded == first.snapshot_stats().bytes_uploaded
    # kept as the node's local file: its next start needs neither the store nor a build
    await second.close()
    third = IndexManager(source, pool, tmp_path / "b", SearchConfig.of(exact_max=200))
    await check_oracle(third, source, QUERIES)
    assert third.builds == 0 and third.disk_loads == 1


async def test_only_a_snapshot_newer_than_the_local_file_is_downloaded(pool, tmp_path, snapshot_store_url):
    source, _ = seeded(n=300)
    first = await first_node_uploads(source, pool, tmp_path, snapshot_store_url)
    second = node(source, pool, tmp_path / "b", snapshot_store_url)
    await check_oracle(second, source, QUERIES)
    await second.close()  # b's local file is at the snapshot's generation
    assert second.snapshot_stats().downloads == 1

    same = node(source, pool, tmp_path / "b", snapshot_store_url)
    await check_oracle(same, source, QUERIES)
    assert same.snapshot_stats().downloads == 0 and same.disk_loads == 1

    source.add(SPACE, QUERIES)  # the first node moves on and saves (shutdown saves what changed)
    await check_oracle(first, source, QUERIES)
    await first.close()
    assert first.snapshot_stats().uploads == 2
    newer = node(source, pool, tmp_path / "b", snapshot_store_url)
    await check_oracle(newer, source, QUERIES)
    assert newer.snapshot_stats().downloads == 1 and newer.builds == 0
    assert persist.local_generation(tmp_path / "b", SPACE, MODEL) == source.spaces[SPACE].generation


async def test_a_local_file_newer_than_the_store_is_uploaded_on_load(pool, tmp_path, snapshot_store_url):
    source, _ = seeded(n=300)
    local_only = IndexManager(
        source, pool, tmp_path / "a", SearchConfig.of(exact_max=200)
    )  # before the store was configured
    await check_oracle(local_only, source, QUERIES)
    await local_only.close()

    joined = node(source, pool, tmp_path / "a", snapshot_store_url)
    await check_oracle(joined, source, QUERIES)
    await joined.flush()
    assert joined.builds == 0 and joined.snapshot_stats().uploads == 1
    other = node(source, pool, tmp_path / "b", snapshot_store_url)
    await check_oracle(other, source, QUERIES)
    assert other.builds == 0 and other.snapshot_stats().downloads == 1


async def test_a_snapshot_older_than_the_tombstone_watermark_is_rebuilt(pool, tmp_path, snapshot_store_url):
    source, _ = seeded(n=300)
    await first_node_uploads(source, pool, tmp_path, snapshot_store_url)
    source.delete(SPACE, np.arange(1, 40))
    # Another index of the space saved past these deletions and the store forgot them (its upload failed).
    await source.prune_tombstones(SPACE, source.spaces[SPACE].generation)

    second = node(source, pool, tmp_path / "b", snapshot_store_url)
    await check_oracle(second, source, QUERIES)  # no deleted row comes back
    await second.flush()
    stats = second.snapshot_stats()
    assert stats.downloads == 1 and second.builds == 1  # DeltaUnavailable -> rebuilt from the store
    assert stats.uploads == 1  # and the rebuilt index replaces the stale snapshot
    third = node(source, pool, tmp_path / "c", snapshot_store_url)
    await check_oracle(third, source, QUERIES)
    assert third.builds == 0 and third.snapshot_stats().downloads == 1


@pytest.mark.parametrize("damage", ["flip-a-body-byte", "truncate", "bad-header"])
async def test_a_damaged_snapshot_is_rebuilt_and_replaced(pool, tmp_path, snapshot_store_url, damage):
    source, _ = seeded(n=300)
    await first_node_uploads(source, pool, tmp_path, snapshot_store_url)
    store = SnapshotStore.open(*snapshot_store_url)
    data = bytearray(await store.get(SPACE, MODEL))
    if damage == "flip-a-body-byte":
        data[-50] ^= 0xFF
    elif damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data[20:30] = b"not json!!"
    await store.put(SPACE, MODEL, bytes(data))

    second = node(source, pool, tmp_path / "b", snapshot_store_url)
    await check_oracle(second, source, QUERIES)
    await second.flush()
    stats = second.snapshot_stats()
    assert second.builds == 1 and stats.rejected == 1
    assert stats.uploads == 1  # same generation as the damaged one, uploaded all the same
    assert (
        persist.load(tmp_path / "b", SPACE, MODEL, D, IndexTuning(exact_max=1_000_000)) is not None
    )  # nothing damaged kept locally
    third = node(source, pool, tmp_path / "c", snapshot_store_url)
    await check_oracle(third, source, QUERIES)
    assert third.builds == 0 and third.snapshot_stats().downloads == 1


async def test_a_snapshot_ahead_of_the_store_is_ignored(pool, tmp_path, snapshot_store_url):
    """Made against another database (say, restored from an older backup): its row ids are not ours."""
    other, _ = seeded(n=300, seed=1)
    other.add(SPACE, QUERIES)
    await first_node_uploads(other, pool, tmp_path, snapshot_store_url)
    source, _ = seeded(n=200, seed=2)
    assert source.spaces[SPACE].generation < other.spaces[SPACE].generation
    mine = node(source, pool, tmp_path / "b", snapshot_store_url)
    await check_oracle(mine, source, QUERIES)
    assert mine.builds == 1 and mine.snapshot_stats().rejected == 1


async def test_deleting_a_space_or_reindexing_removes_its_snapshots(pool, tmp_path, snapshot_store_url):
    source, _ = seeded(n=300)
    first = await first_node_uploads(source, pool, tmp_path, snapshot_store_url)
    store = SnapshotStore.open(*snapshot_store_url)
    await first.drop(SPACE)
    await first.flush()  # the snapshot store is cleaned up in the background
    assert await store.header(SPACE, MODEL) is None

    await check_oracle(first, source, QUERIES)  # loads again (builds: nothing to fetch) and uploads
    await first.flush()
    assert await store.header(SPACE, MODEL) is not None
    cold = node(source, pool, tmp_path / "b", snapshot_store_url)
    await cold.rebuild(SPACE, MODEL)  # not loaded on this node, dims unknown: drop what would be loaded
    assert await store.header(SPACE, MODEL) is None and persist.space_files(tmp_path / "b", SPACE) == []


async def test_an_unreachable_store_never_fails_a_search(pool, tmp_path, monkeypatch):
    fake_aws_env(monkeypatch)
    store_url = ("s3://nowhere/indexes", f"http://127.0.0.1:{closed_port()}")
    source, _ = seeded(n=300)
    manager = node(source, pool, tmp_path / "a", store_url)
    await check_oracle(manager, source, QUERIES)
    await manager.flush()
    source.add(SPACE, QUERIES)
    await check_oracle(manager, source, QUERIES)
    await manager.close()
    stats = manager.snapshot_stats()
    assert manager.builds == 1 and stats.download_failures == 1
    assert stats.upload_failures == 2 and stats.uploads == 0  # each save tried again
    assert (
        persist.load(tmp_path / "a", SPACE, MODEL, D, IndexTuning(exact_max=1_000_000)) is not None
    )  # the local file is unaffected


async def test_a_space_deleted_while_its_snapshot_uploads_leaves_none(pool, tmp_path, snapshot_store_url):
    """The drop waits for an upload under way, so the upload cannot put the snapshot back afterwards."""
    store = SnapshotStore.open(*snapshot_store_url)
    for n in (250, 300, 350):  # the upload is at a different step when the drop comes, in some of these
        source, _ = seeded(n=n)
        manager = node(source, pool, tmp_path / f"n{n}", snapshot_store_url)
        await check_oracle(manager, source, QUERIES[:1])  # built; its save and upload run in the background
        await manager.drop(SPACE)
        await manager.flush()
        assert await store.header(SPACE, MODEL) is None
        assert persist.space_files(tmp_path / f"n{n}", SPACE) == []


async def test_a_hung_store_costs_a_bounded_wait_and_no_failed_search(pool, tmp_path, monkeypatch):
    """An endpoint that accepts connections and never answers (a blackholed S3): loads and uploads give
    up after their bounds, the search is answered from a build."""
    fake_aws_env(monkeypatch)
    held = []

    async def never_answer(reader, writer):
        held.append(writer)

    server = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    try:
        endpoint = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        source, _ = seeded(n=300)
        manager = node(source, pool, tmp_path / "a", ("s3://hung/indexes", endpoint))
        await check_oracle(manager, source, QUERIES)
        await manager.flush()  # the upload gave up too
        stats = manager.snapshot_stats()
        assert manager.builds == 1 and stats.download_failures == 1 and stats.upload_failures == 1
        assert held  # the requests did reach the hung server
    finally:
        for writer in held:
            writer.close()
        server.close()
