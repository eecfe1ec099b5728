"""Helpers for the shim tests: the real app on a real port with hosted spaces and API keys."""

from __future__ import annotations

from dataclasses import dataclass

from engram.app import create_app
from engram.app_keys import context_key
from engram.service import apikeys
from engram.store import MemoryWrite

FACTS = [
    "Dana prefers pnpm over npm in the web-dashboard repository because lockfile diffs are smaller.",
    "Production Postgres runs version 16.2; staging is still on 15.4.",
    "Henrik must approve every change to token handling in the auth gateway.",
    "The team's weekly sync moved from Monday to Tuesday at 10:00.",
    "Dana's passport expires at the end of September, before the Lisbon trip.",
]


@dataclass
class Engram:
    client: object
    ctx: object

    async def space(self, name: str):
        return await self.ctx.services.spaces.create_hosted(name)

    async def key(self, primary: str, *extra: str, scopes=("read", "write")) -> tuple[str, object]:
        key, token = await apikeys.create_api_key(self.ctx.store, primary, scopes, "test", extra)
        return token, key

    async def write(self, space_uri: str, texts, **fields) -> list:
        author = self.ctx.settings.service_did
        return await self.ctx.services.memories.write(
            space_uri, [MemoryWrite(author=author, text=t, **fields) for t in texts]
        )


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def start(aiohttp_client, settings) -> Engram:
    client = await aiohttp_client(await create_app(settings))
    return Engram(client, client.app[context_key])
