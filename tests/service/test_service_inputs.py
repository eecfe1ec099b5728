"""The services check the parameters callers send (the store checks none): every front door (XRPC, CLI,
shims) gets the same 400-class domain error."""

from __future__ import annotations

import pytest

from engram.errors import InvalidInput
from engram.service import apikeys
from engram.service.memories import MAX_LIST_LIMIT


@pytest.mark.parametrize("limit", [0, -1, MAX_LIST_LIMIT + 1, "10", 2.5, True])
async def test_list_limit_is_bounded(ctx, space, limit):
    with pytest.raises(InvalidInput, match="limit must be an integer"):
        await ctx.services.memories.list(space, limit=limit)


@pytest.mark.parametrize("tags", ["work", ["work", 3]])
async def test_list_tags_must_be_strings(ctx, space, tags):
    with pytest.raises(InvalidInput, match="tags must be a list of strings"):
        await ctx.services.memories.list(space, tags=tags)


async def test_list_with_good_parameters_pages(ctx, space):
    assert await ctx.services.memories.list(space, limit=MAX_LIST_LIMIT, tags=["x"]) == ([], None)


@pytest.mark.parametrize("scopes", [[], ["admin"], ["read", "delete"]])
async def test_api_key_scopes_are_checked(ctx, space, scopes):
    with pytest.raises(InvalidInput, match="scopes"):
        await apikeys.create_api_key(ctx.store, space, scopes)
    assert await apikeys.list_api_keys(ctx.store, space) == []


async def test_api_key_label_is_checked(ctx, space):
    with pytest.raises(InvalidInput, match="label"):
        await apikeys.create_api_key(ctx.store, space, ["read"], "x" * 201)
    for shown_otherwise in ("a\x1b[31mred", "row\r\nfake row", "a\x00b", "evil\u202eexe.txt", "\x85"):
        with pytest.raises(InvalidInput, match="control or text-direction"):
            await apikeys.create_api_key(ctx.store, space, ["read"], shown_otherwise)
    key, token = await apikeys.create_api_key(ctx.store, space, ["read", "write"], "x" * 200)
    assert key.scopes == frozenset({"read", "write"}) and token.startswith("engram_")
    assert (await apikeys.create_api_key(ctx.store, space, ["read"], "Dana’s laptop — ünïcödé 日本"))[0]
