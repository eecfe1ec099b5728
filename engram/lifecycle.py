"""Opening and closing the service's parts, in dependency order (closed in reverse)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from .context import AppContext


@contextlib.asynccontextmanager
async def open_parts(ctx: AppContext) -> AsyncIterator[AppContext]:
    settings = ctx.settings
    async with contextlib.AsyncExitStack() as stack:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        stack.callback(ctx.pool.close)
        yield ctx
