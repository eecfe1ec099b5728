"""Fixtures for the console's HTTP tests: the real app on a real port, two hosted spaces (alpha, beta)
embedded with the hashing model, API keys for them, and a clock the tests move by hand."""

from __future__ import annotations

from dataclasses import dataclass

import aiohttp
import pytest
from support.console import Browser, Clock, console_app

from engram.app_keys import context_key
from engram.service import apikeys
from engram.store import MemoryWrite

ALPHA_TEXTS = [f"alpha note {i}: the deploy window for service {i} is Tuesday" for i in range(30)]
BETA_TEXTS = ["beta secret: the vault combination is 4-8-15", "beta secret: the launch is on Friday"]


@dataclass
class Console:
    client: object
    ctx: object
    clock: Clock
    alpha: str
    beta: str
    alpha_uris: list[str]
    beta_uris: list[str]
    alpha_read: str  # API key tokens
    alpha_write_only: str
    beta_read: str

    def browser(self) -> Browser:
        return Browser(self.client)

    async def operator(self) -> Browser:
        browser = self.browser()
        await browser.sign_in_operator(self.ctx, self.clock)
        return browser

    async def reader(self, token: str) -> Browser:
        browser = self.browser()
        resp = await browser.sign_in_key(token)
        assert resp.status == 303, (resp.status, await resp.text())
        return browser


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def console_settings(settings):
    return settings


async def _seed(ctx, uri: str, texts: list[str], tags_for) -> list[str]:
    items = [
        MemoryWrite(
            author=ctx.settings.service_did,
            text=text,
            tags=tags_for(i),
            source=f"chat:2026-01-{i % 28 + 1:02d}",
            created_at=f"2026-01-{i % 28 + 1:02d}T10:{i % 60:02d}:00.000Z",
            attrs={"n": i},
        )
        for i, text in enumerate(texts)
    ]
    records = await ctx.services.memories.write(uri, items)
    return [r.uri for r in records]


@pytest.fixture
async def console(aiohttp_client, console_settings, clock) -> Console:
    client = await aiohttp_client(
        await console_app(console_settings, clock), cookie_jar=aiohttp.DummyCookieJar()
    )
    ctx = client.app[context_key]
    alpha = (await ctx.services.spaces.create_hosted("alpha")).uri
    beta = (await ctx.services.spaces.create_hosted("beta")).uri
    alpha_uris = await _seed(
        ctx, alpha, ALPHA_TEXTS, lambda i: ("even",) if i % 2 == 0 else ("odd", "deploy")
    )
    beta_uris = await _seed(ctx, beta, BETA_TEXTS, lambda i: ("secret",))
    _, alpha_read = await apikeys.create_api_key(ctx.store, alpha, ["read"], "alpha reader")
    _, alpha_write = await apikeys.create_api_key(ctx.store, alpha, ["write"], "alpha writer")
    _, beta_read = await apikeys.create_api_key(ctx.store, beta, ["read"], "beta reader")
    return Console(client, ctx, clock, alpha, beta, alpha_uris, beta_uris, alpha_read, alpha_write, beta_read)
