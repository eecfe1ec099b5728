import hashlib

import pytest

from engram.errors import InvalidInput
from engram.store.apikeys import create_api_key, list_api_keys, lookup_api_key, revoke_api_key
from engram.store.spaces import create_space, delete_space


async def test_api_key_lifecycle(store, space):
    key, token = await store.write(create_api_key, space, ["write", "read"], "memory bank")
    assert token.startswith("engram_") and len(token) >= 7 + 43  # 32 random bytes, urlsafe base64
    assert (key.space_uri, key.scopes, key.label, key.revoked_at) == (
        space,
        {"read", "write"},
        "memory bank",
        None,
    )
    # only the hash is stored
    stored = await store.read(lambda conn: conn.execute("SELECT key_hash FROM api_keys").fetchall())
    assert stored == [(hashlib.sha256(token.encode()).hexdigest(),)]
    assert await store.read(lookup_api_key, token) == key
    for wrong in (token[:-1], token + "x", "", "engram_", None, "x" * 500):
        assert await store.read(lookup_api_key, wrong) is None
    other, other_token = await store.write(create_api_key, space, ["read"])
    assert other_token != token
    assert [k.id for k in await store.read(list_api_keys, space)] == [key.id, other.id]
    assert await store.write(revoke_api_key, key.id) is True
    assert await store.write(revoke_api_key, key.id) is False
    assert await store.read(lookup_api_key, token) is None
    assert (await store.read(list_api_keys))[0].revoked_at is not None
    assert await store.read(lookup_api_key, other_token) == other


async def test_api_keys_need_a_live_hosted_space(store, space):
    synced = "at://did:plc:authority1/space/garden.engram.space/synced"
    await store.write(create_space, synced, "synced")
    with pytest.raises(InvalidInput, match="hosted"):
        await store.write(create_api_key, synced, ["read"])
    _, token = await store.write(create_api_key, space, ["read"])
    await store.write(delete_space, space)
    assert await store.read(lookup_api_key, token) is None
    with pytest.raises(InvalidInput) as info:
        await store.write(create_api_key, space, ["read"])
    assert info.value.name == "UnknownSpace"
