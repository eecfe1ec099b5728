"""Which Host and Origin headers `/mcp` accepts: the spec's defence against DNS rebinding, and the CORS
answers that go with it (docs/mcp.md#origins-and-cors).

A page on another site that a browser reaches engram through (a rebound DNS name, or engram on loopback)
sends its own Host or Origin; both are checked against the public URL (`ENGRAM_PUBLIC_URL`), loopback and
`ENGRAM_MCP_ALLOWED_ORIGINS`, before anything else, with or without a credential.
"""

from __future__ import annotations

from urllib.parse import urlsplit

LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
ALLOW_METHODS = "GET, POST, DELETE, OPTIONS"
ALLOW_HEADERS = "Authorization, Content-Type, Accept, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID"
EXPOSE_HEADERS = "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate, Retry-After"


def _hostname(netloc: str) -> str | None:
    try:
        return urlsplit("//" + netloc).hostname
    except ValueError:  # an unbalanced [ in an IPv6 literal
        return None


class Origins:
    def __init__(self, public_url: str, allowed: tuple[str, ...]):
        public = urlsplit(public_url)
        self.origins = frozenset({f"{public.scheme}://{public.netloc}".lower(), *allowed})
        self.hosts = frozenset(urlsplit(origin).netloc for origin in self.origins)

    def host_allowed(self, host: str | None) -> bool:
        if not host:
            return False
        host = host.lower()
        return host in self.hosts or _hostname(host) in LOOPBACK

    def origin_allowed(self, origin: str | None) -> bool:
        """No Origin (a non-browser client, or a same-origin GET) is fine; `null` (a sandboxed page, a
        file) is not."""
        if origin is None:
            return True
        origin = origin.lower()
        if origin in self.origins:
            return True
        parts = urlsplit(origin)
        return parts.scheme in ("http", "https") and _hostname(parts.netloc) in LOOPBACK

    @staticmethod
    def cors_headers(origin: str | None) -> dict[str, str]:
        """What a browser client may read of an answer to an allowed origin."""
        return {
            "Access-Control-Allow-Origin": origin or "*",
            "Access-Control-Expose-Headers": EXPOSE_HEADERS,
            "Vary": "Origin",
        }

    def preflight_headers(self, origin: str | None) -> dict[str, str]:
        return {
            **self.cors_headers(origin),
            "Access-Control-Allow-Methods": ALLOW_METHODS,
            "Access-Control-Allow-Headers": ALLOW_HEADERS,
            "Access-Control-Max-Age": "600",
        }
