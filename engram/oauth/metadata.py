"""RFC 8414 authorization server metadata: what a client discovers before it starts a flow (MCP clients
require it; ChatGPT is configured by hand and ignores it)."""

from __future__ import annotations

from collections.abc import Iterable


def server_metadata(base_url: str, scopes: Iterable[str]) -> dict:
    """Metadata for a server whose endpoints are `{base_url}/login` and `{base_url}/exchange`."""
    return {
        "issuer": base_url,
        "authorization_endpoint": f"{base_url}/login",
        "token_endpoint": f"{base_url}/exchange",
        "scopes_supported": sorted(scopes),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "client_credentials", "refresh_token"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
        "code_challenge_methods_supported": ["S256"],
    }
