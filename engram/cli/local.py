"""Running a command against the local data dir: the same AppContext and services as the server."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ..config import Settings
from ..context import AppContext
from ..lifecycle import open_context

T = TypeVar("T")


def run_local(settings: Settings, work: Callable[[AppContext], Awaitable[T]], *, embedder: bool = False) -> T:
    """Open the data dir (store, keys, index manager; the embedder only when asked: loading ONNX costs
    ~0.3 s that listing spaces does not need), run `work(ctx)`, close everything in order."""

    async def go() -> T:
        async with open_context(settings, embedder=embedder) as ctx:
            return await work(ctx)

    return asyncio.run(go())


def resolve_space(ctx: AppContext, space: str) -> str:
    """A space URI from a URI or a bare name of a space under engram's own DID."""
    return ctx.services.spaces.resolve_uri(space)
