"""Whose text-search budget a query spends (docs/mcp.md#limits-for-agents).

By default a text search spends its space authority's budget (`ENGRAM_TEXT_SEARCH_*`, per space for
spaces engram hosts under its own DID), which suits signed readers. An agent holding an API key recalls
several times a second across its key's spaces, so a front door that knows the key (MCP) names it here
and the query spends the key's budget (`ENGRAM_KEY_TEXT_SEARCH_*`) instead; the key is also who waits its
turn for an embedding slot. A context variable, because the query passes through search paths
(`search`, `hybrid`, `ranking`) that should not each carry a caller argument.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

payer: ContextVar[str | None] = ContextVar("engram_text_search_payer", default=None)


@contextmanager
def spending(principal: str | None) -> Iterator[None]:
    """Text searches inside spend `principal`'s budget (an API key's `key:<id>`; None: the authority's)."""
    token = payer.set(principal)
    try:
        yield
    finally:
        payer.reset(token)
