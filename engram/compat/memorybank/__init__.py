"""Memory Bank: the ChatGPT retrieval plugin's API (as the "Memory Bank" GPT action uses it) over a
hosted space, with the OAuth2 server its security scheme names (docs/memorybank.md)."""

from __future__ import annotations

from ..shim import Shim
from .errors import render_error
from .keyauth import search_space_of
from .routes import PREFIX, SEARCH_PATHS, add_routes, openapi_document

SHIM = Shim(
    name="memorybank",
    paths=(PREFIX, "/.well-known/ai-plugin.json"),
    add_routes=add_routes,
    render_error=render_error,
    openapi=lambda: openapi_document(PREFIX),  # relative URLs: served where the host is not known
    # Searches use the index of the credential's space; upserts and deletes are writes any node commits.
    space_scoped=lambda ctx: dict.fromkeys(SEARCH_PATHS, search_space_of(ctx)),
)
