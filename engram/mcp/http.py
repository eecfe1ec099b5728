"""Streamable HTTP at `/mcp`, and the OAuth endpoints an MCP client discovers from it (docs/mcp.md).

Every request to `/mcp` carries a bearer credential: an engram API key, or an OAuth access token issued
(by engram's OAuth server, engram/oauth) for one. It is checked here, on every request, before the
SDK's transport sees anything; the caller's `McpAccess` then travels in the ASGI scope to the tools. A
request without a valid credential gets 401 with `WWW-Authenticate: Bearer resource_metadata=...`, which
is where an MCP client starts the OAuth flow (protected-resource metadata, RFC 9728 -> authorization
server metadata, RFC 8414 -> dynamic registration, RFC 7591 -> consent page with PKCE -> token).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import TYPE_CHECKING

import orjson
from aiohttp import web
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, KNOWN_PROTOCOL_VERSIONS

from ..auth.api_key_grants import KeyGrant, bearer_token
from ..errors import EngramError, NotAuthenticated
from ..oauth import OAuthServer
from ..oauth.consent import ConsentPage
from ..oauth.metadata import server_metadata
from ..oauth.registration import registration_handler
from ..oauth.token_endpoint import token_handler
from .access import McpAccess, key_access
from .asgi_bridge import serve_asgi
from .envelope import INVALID_REQUEST, EnvelopeError, envelope_error, initialize_error, read_posted
from .operations import MemoryOperations
from .origins import Origins
from .refusal import RecallRefusals, Refused
from .server import build_server
from .sessions import McpSessions

if TYPE_CHECKING:
    from ..context import AppContext

MCP_PATH = "/mcp"
OAUTH_PREFIX = "/oauth/mcp"  # the issuer's path: its endpoints are /login, /exchange and /register below it
SCOPES = {"memories:read": "read", "memories:write": "write"}  # OAuth scope -> engram API key scope
SCOPE_HELP = {"memories:read": "search and read your memories", "memories:write": "save and delete memories"}
ACCESS_TTL_S = 3600  # short-lived access tokens; clients renew them with the (rotating) refresh token
ACCESS_SCOPE_KEY = "engram.mcp.access"
SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"


async def access_from_request(context: Context) -> McpAccess:
    request = context.request_context.request
    access = request.scope.get(ACCESS_SCOPE_KEY) if request is not None else None
    if access is None:
        raise NotAuthenticated("no credential reached this call", "AuthRequired")
    return access


class McpEndpoint:
    def __init__(self, ctx: AppContext):
        self.ctx = ctx
        self.oauth = OAuthServer(ctx.store, SCOPES, issuer="mcp", access_ttl_s=ACCESS_TTL_S)
        self.server = build_server(MemoryOperations(ctx), access_from_request)
        self.refusals = RecallRefusals(self.server, ctx.services.search.text)
        s = ctx.settings.mcp
        self.origins = Origins(ctx.settings.public_url, s.mcp_allowed_origins)
        self.sessions = McpSessions(
            ctx.store,
            idle_s=s.mcp_session_idle_s,
            per_key=s.mcp_sessions_per_key,
            overall=s.mcp_sessions,
        )
        # Stateless: a fresh SDK transport per request, whichever process or node it reaches; the sessions
        # of the 2025 revisions are engram's, in the store (sessions.py, docs/mcp.md#sessions).
        # DNS-rebinding protection guards servers that trust whoever reaches them; every /mcp request here
        # must carry a bearer credential, which a rebinding page cannot borrow (no cookies are involved).
        self.asgi = self.server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )

    @property
    def public_url(self) -> str:
        return self.ctx.settings.public_url.rstrip("/")

    @property
    def issuer(self) -> str:
        return self.public_url + OAUTH_PREFIX

    @property
    def resource_metadata_url(self) -> str:
        return f"{self.public_url}/.well-known/oauth-protected-resource{MCP_PATH}"

    async def access_for(self, token: str) -> McpAccess:
        grant = await self.oauth.resolve_access(token)
        if grant is not None and not grant.key_scopes:
            # Issued through another front door (the Memory Bank's scopes): not a token for /mcp.
            raise NotAuthenticated("this access token was not issued for /mcp", "InvalidToken")
        if grant is not None:
            # The key's spaces, cut down to the scopes the person approved for this token.
            return McpAccess.of_key(replace(KeyGrant.of(grant.key), scopes=grant.key_scopes))
        return await key_access(self.ctx, token)

    def unauthorized(self, description: str, token_sent: bool) -> web.Response:
        challenge = f'Bearer resource_metadata="{self.resource_metadata_url}"'
        body: dict[str, str] = {"error_description": description}
        if token_sent:  # no error code when the request had no credential at all (docs/mcp.md#oauth-21)
            challenge += f', error="invalid_token", error_description="{description}"'
            body = {"error": "invalid_token", **body}
        return web.Response(
            status=401,
            body=orjson.dumps(body),
            content_type="application/json",
            headers={"WWW-Authenticate": challenge},
        )

    def refused_origin(self, request: web.Request) -> web.Response | None:
        """421 for a Host, 403 for an Origin that is not this server's (docs/mcp.md#origins-and-cors)."""
        host, origin = request.headers.get("Host"), request.headers.get("Origin")
        if not self.origins.host_allowed(host):
            return _rpc_error(421, f"Misdirected Request: Host {host!r} is not {self.public_url}'s")
        if not self.origins.origin_allowed(origin):
            return _rpc_error(403, f"Forbidden: pages of {origin!r} may not call /mcp")
        return None

    async def preflight(self, request: web.Request) -> web.Response:
        refused = self.refused_origin(request)
        if refused is not None:
            return refused
        return web.Response(status=204, headers=self.origins.preflight_headers(request.headers.get("Origin")))

    async def handle(self, request: web.Request) -> web.StreamResponse:
        refused = self.refused_origin(request)
        if refused is not None:
            return refused
        cors = self.origins.cors_headers(request.headers.get("Origin"))
        response = await self.answer(request, cors)
        if not response.prepared:  # a streamed answer got them from serve_asgi
            response.headers.update(cors)
        return response

    async def answer(self, request: web.Request, cors: dict[str, str]) -> web.StreamResponse:
        token = bearer_token(request)
        if token is None:
            return self.unauthorized("a bearer credential is required", token_sent=False)
        try:
            access = await self.access_for(token)
        except EngramError as err:
            return self.unauthorized(err.message, token_sent=True)
        user = AuthenticatedUser(AccessToken(token="", client_id=access.principal, scopes=[]))
        scope = {ACCESS_SCOPE_KEY: access, "user": user}
        version = request.headers.get(VERSION_HEADER)
        if version is not None and version not in KNOWN_PROTOCOL_VERSIONS:
            # an invalid or unsupported version header is a 400 (docs/mcp.md#errors)
            known = ", ".join(KNOWN_PROTOCOL_VERSIONS)
            return _rpc_error(400, f"Bad Request: Unsupported protocol version {version!r} (known: {known})")
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            # The 2026 revision's self-contained requests: no session at all. A flood's recall past its
            # key's budget is refused before the SDK's transport is built (refusal.py).
            refusal = self.refusals.over_budget(access) if request.method == "POST" else None
            if refusal is not None:
                body = await request.read()
                refused = self.refusals.answer(refusal, access, request.headers, body)
                if refused is not None:
                    return _refused(refused)
                return await serve_asgi(self.asgi, request, scope, body=body, headers=cors)
            return await serve_asgi(self.asgi, request, scope, headers=cors)
        return await self.in_session(request, access, scope, cors)

    async def in_session(
        self, request: web.Request, access: McpAccess, scope: dict, cors: dict[str, str]
    ) -> web.StreamResponse:
        """A request of the 2025 revisions: `initialize` opens a session, everything else names a live one
        opened by the same principal (docs/mcp.md#sessions)."""
        session_id = request.headers.get(SESSION_HEADER)
        if session_id is None:
            if request.method == "POST":
                body = await request.read()
                posted = read_posted(body)
                if posted.is_initialize:
                    # a session opens only for an initialize the SDK will accept (it reports a refused one
                    # inside a 200 event stream, which would leave the session open)
                    refused = envelope_error(posted) or initialize_error(posted)
                    if refused is not None:
                        return _envelope_refused(refused)
                    session_id = await self.sessions.open(access.principal)
                    answer = await serve_asgi(
                        self.asgi, request, scope, body=body, headers={**cors, SESSION_HEADER: session_id}
                    )
                    if answer.status >= 400:  # nothing was established
                        await self.sessions.end(session_id)
                    return answer
            if request.method in ("POST", "GET", "DELETE"):
                return _rpc_error(400, "Bad Request: Missing session ID")
        elif not await self.sessions.resume(session_id, access.principal):
            # Unknown, expired, ended, or opened by another credential: all answer alike.
            return _rpc_error(404, "Session not found")
        elif request.method == "DELETE":
            await self.sessions.end(session_id)
            return web.Response(status=200)
        elif request.method == "GET":
            # No stream of server-initiated messages: engram sends none (the spec's 405 for that case).
            return _rpc_error(405, "Method Not Allowed: no server-initiated messages", allow="POST, DELETE")
        elif request.method == "POST":
            headers = {**cors, SESSION_HEADER: session_id}
            body = await request.read()
            posted = read_posted(body)
            wrong = envelope_error(posted)
            if wrong is None and posted.is_initialize:
                wrong = EnvelopeError(INVALID_REQUEST, "Invalid Request: this session is already initialized",
                                      posted.message.get("id"))  # fmt: skip
            if wrong is not None:
                return _envelope_refused(wrong, {SESSION_HEADER: session_id})
            refusal = self.refusals.over_budget(access)  # a flood's recall past its budget (refusal.py)
            if refusal is not None:
                refused = self.refusals.answer(refusal, access, request.headers, body)
                if refused is not None:
                    return _refused(refused, {SESSION_HEADER: session_id})
            return await serve_asgi(self.asgi, request, scope, body=body, headers=headers)
        return _rpc_error(405, "Method Not Allowed", allow="GET, POST, DELETE")

    # -- discovery ---------------------------------------------------------------------------------
    async def protected_resource(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "resource": self.public_url + MCP_PATH,
                "authorization_servers": [self.issuer],
                "scopes_supported": sorted(SCOPES),
                "bearer_methods_supported": ["header"],
                "resource_name": "engram memories",
            }
        )

    async def authorization_server(self, request: web.Request) -> web.Response:
        metadata = server_metadata(self.issuer, SCOPES)
        metadata["registration_endpoint"] = self.issuer + "/register"
        return web.json_response(metadata)

    async def hold_sessions(self, app: web.Application) -> AsyncIterator[None]:
        """Run the SDK's session manager for the app's lifetime, in a task of its own: it holds no sessions
        here (stateless), but its anyio task group runs each request's transport, and must be entered and
        left by the same task, which aiohttp's start-up and clean-up are not."""
        started, stop = asyncio.Event(), asyncio.Event()

        async def hold() -> None:
            async with self.server.session_manager.run():
                started.set()
                await stop.wait()

        task = asyncio.create_task(hold())
        waiter = asyncio.create_task(started.wait())
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if task.done():
            task.result()  # it failed to start: raise why
        yield
        stop.set()
        await task


def _refused(refused: Refused, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        body=refused.body, content_type=refused.content_type, headers={**refused.headers, **(headers or {})}
    )


def _rpc_error(
    status: int,
    message: str,
    allow: str | None = None,
    *,
    code: int = INVALID_REQUEST,
    request_id: str | int | None = None,
    headers: dict[str, str] | None = None,
) -> web.Response:
    """The SDK transport's own error shape: a JSON-RPC error, without a request id unless one is known."""
    body = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})
    headers = {**(headers or {}), **({"Allow": allow} if allow else {})}
    return web.Response(status=status, body=body, content_type="application/json", headers=headers)


def _envelope_refused(wrong: EnvelopeError, headers: dict[str, str] | None = None) -> web.Response:
    return _rpc_error(400, wrong.message, code=wrong.code, request_id=wrong.id, headers=headers)


mcp_key = web.AppKey("mcp", McpEndpoint)


def install_mcp(app: web.Application, ctx: AppContext) -> McpEndpoint:
    endpoint = McpEndpoint(ctx)
    app[mcp_key] = endpoint
    consent = ConsentPage(
        endpoint.oauth,
        "Connect an AI agent to your engram memories",
        SCOPE_HELP,
        public_url=ctx.settings.public_url,
    )
    router = app.router
    # Its own OPTIONS route: /mcp answers its preflights itself (the app-wide CORS answer lacks its
    # methods and headers), engram/xrpc/middleware.py
    router.add_route("OPTIONS", MCP_PATH, endpoint.preflight)
    router.add_route("*", MCP_PATH, endpoint.handle)
    router.add_get("/.well-known/oauth-protected-resource" + MCP_PATH, endpoint.protected_resource)
    router.add_get("/.well-known/oauth-protected-resource", endpoint.protected_resource)
    router.add_get("/.well-known/oauth-authorization-server" + OAUTH_PREFIX, endpoint.authorization_server)
    router.add_get(OAUTH_PREFIX + "/.well-known/oauth-authorization-server", endpoint.authorization_server)
    router.add_get(OAUTH_PREFIX + "/login", consent.get)
    router.add_post(OAUTH_PREFIX + "/login", consent.post)
    router.add_post(OAUTH_PREFIX + "/exchange", token_handler(endpoint.oauth))
    router.add_post(
        OAUTH_PREFIX + "/register", registration_handler(endpoint.oauth, processes=ctx.settings.processes)
    )
    app.cleanup_ctx.append(endpoint.hold_sessions)
    return endpoint
