"""A full AppContext (real store, index manager and worker pool in a tmp dir), as the CLI opens it."""

from __future__ import annotations

import pytest
from support.models import SERVICE_MODEL

from engram.lifecycle import open_context

MODEL = SERVICE_MODEL


@pytest.fixture
async def ctx(settings):
    async with open_context(settings, embedder=False) as ctx:
        yield ctx


@pytest.fixture
async def space(ctx) -> str:
    return (await ctx.services.spaces.create_hosted("svc", model=MODEL)).uri
