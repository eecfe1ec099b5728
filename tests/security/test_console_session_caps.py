"""Console sessions have per-principal caps (docs/security.md#per-tenant-caps): one API key signing in
over and over evicts only its own oldest sessions, readers together never evict the operator, and the
table stays bounded. Real sign-ins over HTTP with small caps set by the test."""

from __future__ import annotations

import aiohttp
import pytest
from support.console import Browser, Clock, console_app

from engram.app_keys import context_key
from engram.console.state import console_state_key
from engram.service import apikeys


@pytest.fixture
async def console(aiohttp_client, settings):
    clock = Clock()
    app = await console_app(settings, clock)
    client = await aiohttp_client(app, cookie_jar=aiohttp.DummyCookieJar())
    ctx = app[context_key]
    sessions = app[console_state_key].sessions
    sessions.per_principal, sessions.max_sessions = 3, 8
    space = (await ctx.services.spaces.create_hosted("tenant")).uri
    keys = [(await apikeys.create_api_key(ctx.store, space, ["read"], f"k{i}"))[1] for i in range(4)]
    return client, ctx, clock, sessions, keys


async def _signed_in(browser: Browser) -> bool:
    page = await browser.get("/console/")
    return page.status == 200


async def _reader(client, clock: Clock, token: str) -> Browser:
    clock.advance(1)  # "oldest" is by sign-in time; the test clock moves only when told
    browser = Browser(client)
    resp = await browser.sign_in_key(token)
    assert resp.status == 303, (resp.status, await resp.text())
    return browser


async def test_a_flooding_key_evicts_only_its_own_sessions_and_never_the_operator(console):
    client, ctx, clock, sessions, keys = console
    operator = Browser(client)
    await operator.sign_in_operator(ctx, clock)
    bystander = await _reader(client, clock, keys[1])
    flood = [await _reader(client, clock, keys[0]) for _ in range(12)]

    assert await _signed_in(operator)  # never evicted by another principal
    assert await _signed_in(bystander)  # another key's session survives one key's flood
    alive = [await _signed_in(b) for b in flood]
    assert alive == [False] * 9 + [True] * 3  # the flooding key keeps its 3 newest
    assert await sessions.count() == 5


async def test_readers_together_fill_the_table_but_cannot_push_the_operator_out(console):
    client, ctx, clock, sessions, keys = console
    operator = Browser(client)
    await operator.sign_in_operator(ctx, clock)
    for token in keys:  # 4 keys x 3 sessions = 12 reader sessions wanted; 8 fit
        for _ in range(3):
            await _reader(client, clock, token)
    assert await _signed_in(operator)
    assert await sessions.count() == 1 + 8
    # the operator's own sessions are capped like any principal's
    extra = [Browser(client) for _ in range(3)]
    for browser in extra:
        clock.advance(1)
        await browser.sign_in_operator(ctx, clock)
    assert not await _signed_in(operator) and all([await _signed_in(b) for b in extra])
