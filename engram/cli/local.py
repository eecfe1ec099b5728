"""Running a command against the local data dir: the same AppContext and services as the server."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ..auth.identity import served_did
from ..config import Settings
from ..context import AppContext
from ..lifecycle import open_context
from .errors import CliError

T = TypeVar("T")


def run_local(
    settings: Settings,
    work: Callable[[AppContext], Awaitable[T]],
    *,
    embedder: bool = False,
    create: bool = False,
) -> T:
    """Open the data dir (store, keys, index manager; the embedder only when asked: loading ONNX costs
    ~0.3 s that listing spaces does not need), run `work(ctx)`, close everything in order. Only a command
    that makes something (`create`) may make the data dir as well: any other run in the wrong directory
    would leave a new data dir and service key behind and answer for a service that does not exist."""
    require_data_dir(settings, create)

    async def go() -> T:
        async with open_context(settings, embedder=embedder) as ctx:
            return await work(ctx)

    return asyncio.run(go())


def resolve_space(ctx: AppContext, space: str) -> str:
    """A space URI from a URI or a bare name of a space under engram's own DID."""
    return ctx.services.spaces.resolve_uri(space)


def require_data_dir(settings: Settings, create: bool = False) -> None:
    """The data dir exists (unless the command may make it), and the server last serving it answered as
    the DID these settings make: the service DID derives from ENGRAM_PUBLIC_URL / ENGRAM_PORT, so a
    command run without the server's settings would create spaces no one can search."""
    if not create and not settings.data_dir.exists():
        raise CliError(
            f"no engram data dir at {settings.data_dir}: set ENGRAM_DATA_DIR to the server's"
            " (or run `engram serve` or `engram space create` once to make one)"
        )
    served = served_did(settings.data_dir)
    if served is not None and served != settings.service_did:
        raise CliError(
            f"{settings.data_dir} is served as {served}, but these settings make engram"
            f" {settings.service_did}: set ENGRAM_PORT / ENGRAM_PUBLIC_URL as the server has them"
        )
