"""The consent page in a real headless browser (Debian's chromium driven by playwright): a person pastes
their engram key, unticks a scope and approves; the client then exchanges the code with its PKCE verifier."""

from __future__ import annotations

import shutil
from urllib.parse import urlencode

import pytest
from aiohttp import web
from support.oauth import pkce_pair

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture
async def callback(aiohttp_server):
    """The client's redirect URI: a small app on loopback that records what the browser brings back."""
    seen: list[dict] = []

    async def receive(request: web.Request) -> web.Response:
        seen.append(dict(request.query))
        return web.Response(text="<!doctype html><title>connected</title>done", content_type="text/html")

    app = web.Application()
    app.router.add_get("/callback", receive)
    server = await aiohttp_server(app)
    return f"http://127.0.0.1:{server.port}/callback", seen


async def test_consent_page_in_headless_chromium(bank, callback):
    if shutil.which("chromium") is None:
        pytest.skip("chromium is not installed: apt-get update && apt-get install -y chromium")
    from playwright.async_api import async_playwright

    redirect_uri, seen = callback
    user_key = await bank.new_key(["read", "write"])
    verifier, challenge = pkce_pair()
    params = {
        "response_type": "code",
        "client_id": str(bank.key_id),
        "redirect_uri": redirect_uri,
        "scope": "read:documents write:documents",
        "state": "xyz",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    login = str(bank.client.make_url("/memorybank/login")) + "?" + urlencode(params)
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page()
            await page.goto(login)
            assert await page.title() == "Connect to Memory Bank (engram)"
            await page.fill("input[name=api_key]", "engram_wrong")
            await page.click("button[value=approve]")
            assert "That API key is not valid." in await page.inner_text("[role=alert]")
            await page.fill("input[name=api_key]", user_key)
            await page.uncheck("input[value='write:documents']")
            await page.click("button[value=approve]")
            await page.wait_for_url(redirect_uri + "?*", timeout=30_000)
        finally:
            await browser.close()
    [answer] = seen
    assert answer["state"] == "xyz"
    response = await bank.client.post(
        "/memorybank/exchange",
        data={
            "grant_type": "authorization_code",
            "code": answer["code"],
            "redirect_uri": redirect_uri,
            "client_id": str(bank.key_id),
            "client_secret": bank.key,  # a key-backed client is confidential: it authenticates too
            "code_verifier": verifier,
        },
    )
    assert response.status == 200, await response.text()
    tokens = await response.json()
    assert tokens["scope"] == "read:documents"  # what the person left ticked, not what was asked
    token = tokens["access_token"]
    ok = await bank.post("/query", {"queries": [{"query": "anything", "user_id": "me"}]}, token)
    assert ok.status == 200
    refused = await bank.post("/upsert", {"documents": [{"text": "not allowed", "user_id": "me"}]}, token)
    assert refused.status == 403
