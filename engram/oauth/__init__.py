"""A small OAuth2 authorization server whose grants are engram API keys (docs/oauth.md).

Generic on purpose (the Memory Bank shim uses it; an MCP server can reuse it): a *client* is key-backed
or registered (clients.py), a *grant* gives some scopes of one API key, and a front door supplies the
mapping from its OAuth scope names to key scopes. Supported grants: `client_credentials` (the client's
secret is itself an engram key), `authorization_code` with PKCE (S256) behind a consent page where a
person proves access with an engram key, and `refresh_token` (rotated on every use).
"""

from .clients import Client
from .server import OAuthError, OAuthServer, TokenGrant

__all__ = ["Client", "OAuthError", "OAuthServer", "TokenGrant"]
