"""The OAuth2 endpoints the served OpenAPI's security scheme names (docs/memorybank.md), served by engram's OAuth server (engram/oauth):
the authorization URL `/login` (consent page) and the token URL `/exchange`, under the shim's prefix."""

from __future__ import annotations

from dataclasses import replace

from aiohttp import web

from ...auth.api_key_grants import KeyGrant
from ...context import AppContext
from ...oauth import OAuthServer
from ...oauth.consent import ConsentPage
from ...oauth.metadata import server_metadata
from ...oauth.token_endpoint import token_handler
from ..requests import json_response
from .keyauth import SCOPES, TokenResolver

SCOPE_HELP = {"read:documents": "search your saved memories", "write:documents": "save and delete memories"}


def oauth_server(ctx: AppContext) -> OAuthServer:
    return OAuthServer(ctx.store, SCOPES, issuer="memorybank")


def access_token_resolver(server: OAuthServer) -> TokenResolver:
    async def resolve(token: str) -> KeyGrant | None:
        grant = await server.resolve_access(token)
        if grant is None:
            return None
        # The key's grant, cut down to the scopes the person approved for this token.
        return replace(KeyGrant.of(grant.key), scopes=grant.key_scopes)

    return resolve


def add_oauth_routes(router: web.UrlDispatcher, ctx: AppContext, prefix: str, server: OAuthServer) -> None:
    consent = ConsentPage(
        server, "Connect to Memory Bank (engram)", SCOPE_HELP, public_url=ctx.settings.public_url
    )

    async def metadata(request: web.Request) -> web.Response:
        return json_response(server_metadata(ctx.settings.public_url + prefix, SCOPES))

    router.add_get(prefix + "/login", consent.get)
    router.add_post(prefix + "/login", consent.post)
    router.add_post(prefix + "/exchange", token_handler(server))
    router.add_get(prefix + "/.well-known/oauth-authorization-server", metadata)
