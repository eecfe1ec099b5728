import sys
from pathlib import Path

import aiohttp
import pytest

# The lead will add pythonpath = ["tests"]; until then make ``fakes`` (and reader_cases) importable here.
_TESTS = Path(__file__).resolve().parents[1]
for p in (_TESTS, _TESTS / "auth"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from support.fakes.did_server import FakeDidServer


@pytest.fixture
async def did_server():
    server = await FakeDidServer().start()
    yield server
    await server.close()


@pytest.fixture
async def http_session():
    async with aiohttp.ClientSession() as session:
        yield session
