"""Fixtures for the MCP tests: the real app served on a real port (see tests/support/mcp.py)."""

from __future__ import annotations

import pytest
from support.mcp import Served, serve


@pytest.fixture
async def served(aiohttp_server, settings) -> Served:
    return await serve(aiohttp_server, settings)
