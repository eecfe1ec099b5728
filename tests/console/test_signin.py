"""Console sign-in: auth required everywhere, one-time links, sessions that expire, CSRF, logout, cookies."""

from __future__ import annotations

from http.cookies import SimpleCookie

import pytest

from engram.console.login_links import LINK_TTL_S, create_link_token
from engram.console.sessions import SESSION_TTL_S

PAGES = ["/console/", "/console/space", "/console/memory", "/console/graph", "/console/keys"]
FORMS = ["/console/keys", "/console/keys/revoke", "/console/logout"]


async def test_root_redirects_to_the_console(console):
    for path in ("/", "/console"):
        resp = await console.client.get(path, allow_redirects=False)
        assert resp.status == 302 and resp.headers["Location"] == "/console/"


@pytest.mark.parametrize("path", PAGES)
async def test_every_page_sends_a_signed_out_browser_to_sign_in(console, path):
    resp = await console.browser().get(path, {"space": console.alpha})
    assert resp.status == 303
    assert resp.headers["Location"].startswith("/console/login?next=/console/")


async def test_graph_data_and_unknown_paths_need_a_session_too(console):
    browser = console.browser()
    data = await browser.get("/console/graph.json", {"space": console.alpha})
    assert data.status == 401 and (await data.json())["error"] == "AuthRequired"
    assert "text" not in await data.text()
    unknown = await browser.get("/console/nope")
    assert unknown.status == 303  # not even the shape of the console's routes leaks before sign-in


@pytest.mark.parametrize("path", FORMS)
async def test_every_form_refuses_a_signed_out_browser(console, path):
    resp = await console.browser().post(
        path, {"csrf": "x", "space": console.alpha, "scope": "read", "id": "1"}
    )
    assert resp.status == 401 and "Sign in" in await resp.text()
    assert len(await console.ctx.services.spaces.list()) == 2 and "engram_console" not in resp.cookies


async def test_one_time_link_signs_in_once(console):
    token = await create_link_token(console.ctx.store, console.clock())
    first = console.browser()
    opened = await first.open_link(token)
    assert "Sign in as operator" in await opened.text()
    await first.open_link(token)  # opening (GET) never spends the link: previewers cannot burn it
    resp = await first.redeem(token)
    assert resp.status == 303 and resp.headers["Location"] == "/console/"
    assert (await first.get("/console/")).status == 200

    second = console.browser()
    again = await second.redeem(token)
    assert again.status == 401 and "LinkUsedOrExpired" in await again.text()
    assert "engram_console" not in second.cookies
    assert (await second.get("/console/")).status == 303


async def test_link_expires_after_ten_minutes(console):
    token = await create_link_token(console.ctx.store, console.clock())
    console.clock.advance(LINK_TTL_S + 1)
    browser = console.browser()
    resp = await browser.redeem(token)
    assert resp.status == 401 and "LinkUsedOrExpired" in await resp.text()


async def test_made_up_link_is_refused(console):
    resp = await console.browser().redeem("A" * 43)
    assert resp.status == 401


async def test_session_cookie_flags(console):
    browser = await console.operator()
    header = next(h for h in browser.set_cookie_headers if h.startswith("engram_console="))
    morsel = SimpleCookie(header)["engram_console"]
    assert morsel["httponly"] and morsel["secure"]  # the tests' public URL is https
    assert morsel["samesite"] == "Strict" and morsel["path"] == "/console/"
    assert int(morsel["max-age"]) == SESSION_TTL_S


async def test_cookies_are_not_secure_on_a_plain_http_public_url(aiohttp_client, console_settings):
    from dataclasses import replace

    import aiohttp
    from support.console import Browser

    from engram.app import create_app

    client = await aiohttp_client(
        await create_app(replace(console_settings, public_url="http://127.0.0.1:8080")),
        cookie_jar=aiohttp.DummyCookieJar(),
    )
    browser = Browser(client)
    await browser.get("/console/login")
    header = next(h for h in browser.set_cookie_headers if h.startswith("engram_console_login="))
    morsel = SimpleCookie(header)["engram_console_login"]
    assert not morsel["secure"] and morsel["httponly"] and morsel["samesite"] == "Strict"


async def test_session_expires(console):
    browser = await console.operator()
    assert (await browser.get("/console/")).status == 200
    console.clock.advance(SESSION_TTL_S - 5)
    assert (await browser.get("/console/")).status == 200
    console.clock.advance(10)
    resp = await browser.get("/console/")
    assert resp.status == 303 and resp.headers["Location"].startswith("/console/login")
    assert (await browser.post("/console/logout", {"csrf": "anything"})).status == 401


async def test_logout_ends_the_session_and_needs_csrf(console):
    browser = await console.operator()
    csrf = await browser.csrf()
    refused = await browser.post("/console/logout", {"csrf": "wrong"})
    assert refused.status == 403 and "BadCsrfToken" in await refused.text()
    assert (await browser.get("/console/")).status == 200
    stolen = dict(browser.cookies)
    resp = await browser.post("/console/logout", {"csrf": csrf})
    assert resp.status == 303 and "engram_console" not in browser.cookies
    assert (await browser.get("/console/")).status == 303
    # The old cookie value is dead on the server too, not just forgotten by the browser.
    browser.cookies = stolen
    assert (await browser.get("/console/")).status == 303


async def test_csrf_is_required_on_every_signed_in_form(console):
    browser = await console.operator()
    keys_before = (await browser.get("/console/keys")).status
    assert keys_before == 200
    for path, data in [
        ("/console/keys", {"space": console.alpha, "scope": "read"}),
        ("/console/keys/revoke", {"id": "1"}),
        ("/console/logout", {}),
    ]:
        for csrf in (None, "", "not-the-token"):
            form = dict(data) if csrf is None else {**data, "csrf": csrf}
            resp = await browser.post(path, form)
            assert resp.status == 403 and "BadCsrfToken" in await resp.text(), (path, csrf)
    from engram.service import apikeys

    keys = await apikeys.list_api_keys(console.ctx.store)
    assert len(keys) == 3 and all(k.revoked_at is None for k in keys)  # nothing was created or revoked


async def test_another_sessions_csrf_token_does_not_work(console):
    mine, theirs = await console.operator(), await console.operator()
    resp = await mine.post(
        "/console/keys", {"space": console.alpha, "scope": "read", "csrf": await theirs.csrf()}
    )
    assert resp.status == 403


async def test_sign_in_forms_need_their_csrf_cookie(console):
    token = await create_link_token(console.ctx.store, console.clock())
    browser = console.browser()
    await browser.open_link(token)
    resp = await browser.post("/console/login", {"token": token, "csrf": "guess"})
    assert resp.status == 403 and "BadCsrfToken" in await resp.text()
    browser.cookies.clear()  # a cross-site form post arrives without the SameSite=Strict cookie
    resp = await browser.post("/console/login/key", {"api_key": console.alpha_read, "csrf": "x"})
    assert resp.status == 403
    # The refused attempt did not spend the link.
    assert (await console.browser().redeem(token)).status == 303


@pytest.mark.parametrize(
    "target",
    [
        "https://evil.example/",
        "//evil.example/x",
        "/xrpc/_health",
        "/console\\x",
        # a control character would end up in the Location header and drop the answer after the link
        # was spent; a non-ASCII one would be written there as mojibake
        "/console/\r\nSet-Cookie: x=1",
        "/console/\x00",
        "/console/\x7f",
        "/console/\u00e9",
    ],
)
async def test_next_never_leaves_the_console(console, target):
    token = await create_link_token(console.ctx.store, console.clock())
    resp = await console.browser().redeem(token, next_url=target)
    assert resp.status == 303 and resp.headers["Location"] == "/console/"


async def test_next_returns_to_the_page_asked_for(console):
    token = await create_link_token(console.ctx.store, console.clock())
    resp = await console.browser().redeem(token, next_url="/console/keys")
    assert resp.headers["Location"] == "/console/keys"


async def test_signing_in_again_replaces_the_session(console):
    browser = await console.operator()
    old = browser.cookies["engram_console"]
    await browser.sign_in_operator(console.ctx, console.clock)
    assert browser.cookies["engram_console"] != old
    browser.cookies["engram_console"] = old
    assert (await browser.get("/console/")).status == 303


async def test_access_log_never_records_a_link_token(
    aiohttp_server, aiohttp_client, console_settings, caplog
):
    import logging

    from engram.app import create_app
    from engram.logs import AccessLogger

    server = await aiohttp_server(
        await create_app(console_settings),
        access_log_class=AccessLogger,
        access_log=logging.getLogger("engram.access"),
    )
    client = await aiohttp_client(server)
    with caplog.at_level(logging.INFO, logger="engram.access"):
        await client.get("/console/login?token=the-secret-link-token-0123456789", allow_redirects=False)
    logged = " ".join(str(getattr(r, "fields", "")) + r.getMessage() for r in caplog.records)
    assert "/console/login" in logged and "the-secret-link-token" not in logged
