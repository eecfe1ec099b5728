"""A transcript of engram's MCP server at work, for a release note or a smoke check on a new machine.

In a temporary data dir: one stdio session (`engram mcp --key`, driven by the SDK's stdio client) that
remembers and recalls, then one OAuth connection to `/mcp` of a real server, made by the SDK's OAuth
client: 401 challenge, discovery, dynamic registration, the consent page (approved here over plain HTTP
with the person's API key, as a browser would submit it), PKCE code exchange, then tool calls.

    .venv/bin/python scripts/mcp_demo.py
"""

from __future__ import annotations

import asyncio
import re
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx2
from aiohttp import web
from mcp import Client, StdioServerParameters
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

from engram.app import create_app
from engram.app_keys import context_key
from engram.config import Settings
from engram.service import apikeys

DID = "did:web:demo.test"


def show(label: str, value) -> None:
    print(f"  {label}: {value}")


async def stdio_session(data_dir: Path, token: str) -> None:
    print("stdio: engram mcp --key <key>")
    env = {
        "ENGRAM_DATA_DIR": str(data_dir),
        "ENGRAM_EMBEDDER": "hashing",
        "ENGRAM_SERVICE_DID": DID,
        "ENGRAM_LOG_LEVEL": "warning",
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "engram", "mcp", "--key", token], env=env
    )
    async with Client(params) as client:
        show("tools", [t.name for t in (await client.list_tools()).tools])
        made = await client.call_tool("remember", {"text": "Dana prefers pnpm over npm.", "tags": ["dana"]})
        show("remember", made.structured_content)
        again = await client.call_tool("remember", {"text": "Dana prefers pnpm over npm.", "tags": ["dana"]})
        show("remember again", {k: again.structured_content[k] for k in ("uri", "duplicate")})
        hits = await client.call_tool("recall", {"query": "which package manager does Dana like?"})
        show("recall", [(h["text"], h["similarity"]) for h in hits.structured_content["results"]])


async def oauth_connection(data_dir: Path, person_key: str) -> None:
    runner = web.AppRunner(
        await create_app(
            Settings(data_dir=data_dir, service_did=DID, embedder="hashing", public_url="http://127.0.0.1:0")
        )
    )
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    ctx = runner.app[context_key]
    ctx.settings = replace(ctx.settings, public_url=base)  # the discovery documents name the real port
    print(f"OAuth: {base}/mcp")
    landed: dict = {}

    async def approve(url: str) -> None:
        show("consent page", url.split("?")[0])
        async with httpx2.AsyncClient() as browser:
            page = await browser.get(url)
            hidden = dict(re.findall(r"<input type='hidden' name='(\w+)' value='([^']*)'>", page.text))
            scopes = re.findall(r"name='approve_scope' value='([^']+)'", page.text)
            answer = await browser.post(
                url.split("?")[0],
                data={**hidden, "api_key": person_key, "decision": "approve", "approve_scope": scopes},
            )
        landed.update(parse_qs(urlsplit(answer.headers["location"]).query))
        show("approved scopes", scopes)

    async def code() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=landed["code"][0], state=landed["state"][0])

    class Tokens:
        tokens = client_info = None

        async def get_tokens(self):
            return self.tokens

        async def set_tokens(self, tokens):
            self.tokens = tokens

        async def get_client_info(self):
            return self.client_info

        async def set_client_info(self, info):
            self.client_info = info

    storage = Tokens()
    metadata = OAuthClientMetadata(
        redirect_uris=["http://127.0.0.1:9/callback"],
        client_name="demo agent",
        token_endpoint_auth_method="none",
        grant_types=["authorization_code", "refresh_token"],
    )
    auth = OAuthClientProvider(f"{base}/mcp", metadata, storage, approve, code)
    try:
        async with (
            httpx2.AsyncClient(auth=auth) as http,
            Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
        ):
            show("registered client", storage.client_info.client_id)
            show(
                "access token",
                storage.tokens.access_token[:12] + "... expires in " + str(storage.tokens.expires_in),
            )
            hits = await client.call_tool("recall", {"query": "Dana package manager"})
            show("recall", [h["text"] for h in hits.structured_content["results"]])
            spaces = await client.call_tool("list_spaces", {})
            show(
                "list_spaces",
                [(s["name"], s["memories"], s["write"]) for s in spaces.structured_content["spaces"]],
            )
    finally:
        await runner.cleanup()


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="engram-mcp-demo-") as tmp:
        data_dir = Path(tmp)
        app = await create_app(Settings(data_dir=data_dir, service_did=DID, embedder="hashing"))
        runner = web.AppRunner(app)
        await runner.setup()  # open the data dir once to make a space and a key, then let go of it
        ctx = app[context_key]
        space = await ctx.services.spaces.create_hosted("notes")
        _, token = await apikeys.create_api_key(ctx.store, space.uri, ["read", "write"], "demo")
        await runner.cleanup()
        await stdio_session(data_dir, token)
        await oauth_connection(data_dir, token)


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()
    asyncio.run(main())
