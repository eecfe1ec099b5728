"""Remembered point reads (engram/store/point_cache.py, docs/scale-out.md#point-reads): the API-key lookup
is answered from memory until a commit could have changed it, on both backends; on PostgreSQL another
process's change reaches this one through the store's notifications."""

import asyncio

import psycopg
import pytest

from engram.store.apikeys import create_api_key, key_and_deleted, revoke_api_key
from engram.store.postgres.store import PostgresStore
from engram.store.spaces import create_space, get_space


async def _remembered(store, fn, *args):
    """The answer once two reads in a row return the same object (the second came from memory). On
    PostgreSQL the notification of the store's own last commit may still arrive and move the counter once
    more, so this polls instead of expecting the first pair to match."""
    for _ in range(2000):
        one, two = await store.point_read(fn, *args), await store.point_read(fn, *args)
        if one[0] is two[0]:
            return one
        await asyncio.sleep(0.01)
    raise AssertionError("the answer was never remembered")


async def test_a_cacheable_point_read_is_remembered_until_a_commit(store, space):
    key, token = await store.write(create_api_key, space, ["read"], "test", [])
    first, _ = await _remembered(store, key_and_deleted, token)
    assert first == key
    await store.write(revoke_api_key, key.id)  # this store's own commit: seen before it is acknowledged
    assert await store.point_read(key_and_deleted, token) == (None, False)
    # Reads that are not marked cacheable are never remembered.
    one, two = await store.point_read(get_space, space), await store.point_read(get_space, space)
    assert one == two and one is not two


async def _until(condition, what: str):
    for _ in range(2000):
        if await condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(what)


async def _caught_up(store, database_url: str) -> None:
    """Until `store` has heard every notification committed so far. A sentinel NOTIFY with the 'scoped'
    payload (which bumps the change count but not the keys' count) is sent last; PostgreSQL delivers in
    commit order, so once a scoped-only bump shows, everything before it has been heard (under load, the
    key creation's own notification could otherwise arrive after its lookup was remembered)."""
    from engram.store.postgres.changes import CHANNEL, SCOPED

    count, keys = store.changes.value(), store.changes.keys_value()
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"NOTIFY {CHANNEL}, '{SCOPED}'")

    async def sentinel_heard():
        return store.changes.value() - count > store.changes.keys_value() - keys

    await _until(sentinel_heard, "the sentinel notification never arrived")


async def _until_revoked(store, token: str, what: str):
    """Until `store`'s point read of the key behind `token` finds it revoked (None)."""

    async def revoked():
        return (await store.point_read(key_and_deleted, token))[0] is None

    await _until(revoked, what)


@pytest.mark.parametrize("backend", ["postgres"])
async def test_another_process_s_change_reaches_the_cache_through_a_notification(pg_database_url, backend):
    uri = "at://did:plc:authority1/space/garden.engram.space/notified"
    first, second = await PostgresStore.open(pg_database_url), await PostgresStore.open(pg_database_url)
    try:
        await first.write(create_space, uri, "hosted")
        key, token = await first.write(create_api_key, uri, ["read"], "test", [])
        cached, _ = await _remembered(second, key_and_deleted, token)
        assert cached == key
        await first.write(revoke_api_key, key.id)  # the other store commits: second hears of it

        await _until_revoked(second, token, "the revocation never reached the other store's cache")
    finally:
        await first.close()
        await second.close()


@pytest.mark.parametrize("backend", ["postgres"])
async def test_without_its_listener_the_cache_is_off_until_it_is_back(pg_database_url, backend):
    uri = "at://did:plc:authority1/space/garden.engram.space/listener"
    store = await PostgresStore.open(pg_database_url)
    try:
        await store.write(create_space, uri, "hosted")
        _, token = await store.write(create_api_key, uri, ["read"], "test", [])
        await _remembered(store, key_and_deleted, token)
        with psycopg.connect(pg_database_url, autocommit=True) as admin:  # what a dropped connection does
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND query LIKE 'LISTEN%'"
            )

        async def off():
            return store.changes.value() == -1

        async def back():
            return store.changes.value() >= 0

        await _until(off, "the store did not notice its listener was gone")
        # While nobody listens (the listener waits a second before reconnecting) nothing is remembered.
        one, two = (
            await store.point_read(key_and_deleted, token),
            await store.point_read(key_and_deleted, token),
        )
        assert one == two and one[0] is not two[0]
        await _until(back, "the listener did not reconnect")
        await _remembered(store, key_and_deleted, token)
    finally:
        await store.close()


async def test_a_memory_write_load_leaves_the_key_lookup_remembered(two_stores, tmp_path):
    """SQLite: this process's own commits of space-scoped writes (`write_to`) cannot change a key, so the
    remembered lookup survives them; an unscoped commit (the key revoked) is seen at once, and another
    process's commit of any kind makes it read again (engram/store/change_counter.py `keys_value`)."""
    from engram.store import MemoryWrite
    from engram.store.memory_writes import put_memories

    first, second = two_stores
    uri = "at://did:plc:authority1/space/garden.engram.space/keys"
    await first.write(create_space, uri, "hosted")
    key, token = await first.write(create_api_key, uri, ["read"], "test", [])
    remembered, _ = await _remembered(first, key_and_deleted, token)
    for n in range(3):
        await first.write_to(uri, put_memories, uri, [MemoryWrite("did:plc:alice", f"memory {n}")])
    assert (await first.point_read(key_and_deleted, token))[0] is remembered
    await second.write_to(uri, put_memories, uri, [MemoryWrite("did:plc:alice", "from another process")])
    again = (await first.point_read(key_and_deleted, token))[0]
    assert again == remembered and again is not remembered  # read again: it could have changed
    await first.write(revoke_api_key, key.id)
    assert await first.point_read(key_and_deleted, token) == (None, False)


@pytest.mark.parametrize("backend", ["postgres"])
async def test_no_store_s_memory_writes_drop_a_remembered_key_on_postgres(pg_database_url, backend):
    """PostgreSQL tells a scoped write's change to `spaces` (its generation bump) apart in its notification
    (migration 0016): memory writes from this store and from another one leave the remembered key lookup
    alone, while the spaces cache still drops the space; another store's revocation still reaches it."""
    from engram.store import MemoryWrite
    from engram.store.memory_writes import put_memories

    uri = "at://did:plc:authority1/space/garden.engram.space/scoped"
    first, second = await PostgresStore.open(pg_database_url), await PostgresStore.open(pg_database_url)
    try:
        await first.write(create_space, uri, "hosted")
        key, token = await first.write(create_api_key, uri, ["read"], "test", [])
        await _caught_up(first, pg_database_url)
        remembered, _ = await _remembered(first, key_and_deleted, token)
        before = first.changes.value()
        await first.write_to(uri, put_memories, uri, [MemoryWrite("did:plc:alice", "from this store")])
        await second.write_to(uri, put_memories, uri, [MemoryWrite("did:plc:alice", "from another store")])

        async def heard():  # this store's own bump and both commits' notifications
            return first.changes.value() >= before + 3

        await _until(heard, "the memory writes' notifications never arrived")
        assert (await first.point_read(key_and_deleted, token))[0] is remembered
        await second.write(revoke_api_key, key.id)

        await _until_revoked(first, token, "the other store's revocation never reached the cache")
    finally:
        await first.close()
        await second.close()
