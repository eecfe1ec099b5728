"""API keys bound to several hosted spaces: short ids, bind/unbind, deleted spaces, and the migration
that gives keys made before it their primary space as their one bound space."""

from __future__ import annotations

import sqlite3

import pytest

from engram.errors import InvalidInput
from engram.store.apikeys import (
    bind_space,
    create_api_key,
    hash_token,
    key_of_deleted_space,
    list_api_keys,
    lookup_api_key,
    unbind_space,
)
from engram.store.migrate import apply_migrations, available_migrations, split_statements
from engram.store.spaces import create_space, delete_space

OTHER = "at://did:plc:authority1/space/garden.engram.space/other"
THIRD = "at://did:plc:authority1/space/garden.engram.space/third"


async def test_a_key_reaches_its_bound_spaces_by_stable_short_ids(store, space):
    await store.write(create_space, OTHER, "hosted")
    await store.write(create_space, THIRD, "hosted")
    key, token = await store.write(create_api_key, space, ["read"], "kb", [OTHER])
    assert list(key.spaces.values()) == [space, OTHER] and all(s.isdigit() for s in key.spaces)
    again = await store.read(lookup_api_key, token)
    assert again.spaces == key.spaces  # stable
    bound = await store.write(bind_space, key.id, THIRD)
    assert list(bound.spaces.values()) == [space, OTHER, THIRD]
    assert [k.id for k in await store.read(list_api_keys, THIRD)] == [key.id]
    assert list((await store.write(unbind_space, key.id, OTHER)).spaces.values()) == [space, THIRD]
    assert list((await store.read(lookup_api_key, token)).spaces.values()) == [space, THIRD]
    with pytest.raises(InvalidInput, match="primary"):
        await store.write(unbind_space, key.id, space)

    await store.write(delete_space, THIRD)  # a deleted extra space drops out at once; the key lives on
    assert list((await store.read(lookup_api_key, token)).spaces.values()) == [space]
    await store.write(delete_space, space)  # the primary: the key stops, and says why
    assert await store.read(lookup_api_key, token) is None
    assert await store.read(key_of_deleted_space, token) is True
    assert await store.read(key_of_deleted_space, "engram_unknown") is False


async def test_only_hosted_spaces_can_be_bound(store, space):
    synced = "at://did:plc:authority1/space/garden.engram.space/synced"
    await store.write(create_space, synced, "synced")
    key, _ = await store.write(create_api_key, space, ["read"])
    with pytest.raises(InvalidInput, match="hosted"):
        await store.write(bind_space, key.id, synced)
    with pytest.raises(InvalidInput, match="hosted"):
        await store.write(create_api_key, space, ["read"], "", [synced])


def test_migration_binds_existing_keys_to_their_primary_space(tmp_path):
    conn = sqlite3.connect(tmp_path / "old.sqlite", isolation_level=None)
    conn.execute("PRAGMA foreign_keys = ON")
    for version, _, sql in available_migrations():
        if version >= 3:
            break
        for statement in split_statements(sql):
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {version}")
    conn.execute(
        "INSERT INTO spaces (id, uri, authority, skey, kind, created_at) VALUES (7, ?, 'did:plc:a', 's', 'hosted', 't')",
        (OTHER,),
    )
    conn.execute(
        "INSERT INTO api_keys (key_hash, space_id, scopes, label, created_at) VALUES (?, 7, 'read', '', 't')",
        (hash_token("engram_old"),),
    )
    assert apply_migrations(conn) >= 1
    key = lookup_api_key(conn, "engram_old")
    assert key.spaces == {"7": OTHER}
