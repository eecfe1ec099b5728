"""OAuth redirect URIs (docs/oauth.md#redirect-uris): refused when urlsplit, yarl and the WHATWG parser
read them differently, accepted for native apps' own schemes, never a 500; and the consent page names the
client as it registered and the host the browser will really go to."""

from __future__ import annotations

import base64
import hashlib
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from support.oauth import csrf_cookie

from engram.app import create_app
from engram.app_keys import context_key
from engram.oauth.redirects import RedirectRefused, parse_redirect
from engram.service.apikeys import create_api_key

ACCEPTED = [
    ("https://chat.example/aip/callback", "chat.example"),
    ("https://claimed.example.com:8443/oauth/cb?x=1", "claimed.example.com"),
    ("http://127.0.0.1:33418/callback", "127.0.0.1"),
    ("http://localhost/cb", "localhost"),
    ("http://[::1]:8080/cb", "::1"),
    ("cursor://anysphere.cursor-retrieval/oauth/callback", "cursor://anysphere.cursor-retrieval"),
    ("vscode://vscode.github-authentication/did-authenticate", "vscode://vscode.github-authentication"),
    ("com.example.app:/oauth2redirect", "com.example.app:"),
]
REFUSED = [
    "http://evil.example\\@127.0.0.1/cb",  # urlsplit: 127.0.0.1; a browser: evil.example
    "https://evil.example\\.good.example/cb",
    "https://good.example@evil.example/cb",
    "https://good.example%40@evil.example/cb",
    "https://chat.example/cb#frag",
    "https://chat .example/cb",
    "https://chat.example/c\tb",
    "https://bücher.example/cb",
    "http://chat.example/cb",  # plain http beyond loopback
    "javascript:alert(document.domain)//",
    "JavaScript://chat.example/%0aalert(1)",
    "data:text/html,<script>alert(1)</script>",
    "file:///etc/passwd",
    "vbscript:msgbox",
    "blob:https://chat.example/uuid",
    "https:///cb",
    "//chat.example/cb",
    "",
]


@pytest.mark.parametrize(("uri", "shown"), ACCEPTED)
def test_native_and_web_redirect_uris_are_accepted(uri, shown):
    assert parse_redirect(uri).shown == shown


@pytest.mark.parametrize("uri", REFUSED)
def test_ambiguous_and_dangerous_redirect_uris_are_refused(uri):
    with pytest.raises(RedirectRefused):
        parse_redirect(uri)


@pytest.fixture
async def engram(aiohttp_client, settings):
    client = await aiohttp_client(await create_app(settings))
    client.ctx = client.app[context_key]
    space = await client.ctx.services.spaces.create_hosted("notes")
    key, token = await create_api_key(client.ctx.store, space.uri, ["read", "write"], "person")
    client.key, client.key_id = token, key.id
    return client


@pytest.mark.parametrize("uri", [u for u in REFUSED if u])
async def test_registration_refuses_them_with_invalid_redirect_uri(engram, uri):
    r = await engram.post("/oauth/mcp/register", json={"redirect_uris": [uri], "client_name": "x"})
    assert r.status == 400 and (await r.json())["error"] == "invalid_redirect_uri"


async def _codes(engram) -> int:
    return await engram.ctx.store.read(lambda c: c.execute("SELECT count(*) FROM oauth_codes").fetchone()[0])


def _challenge() -> tuple[str, str]:
    verifier = "v" * 64
    return verifier, base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(
        b"="
    ).decode()


@pytest.mark.parametrize("prefix", ["/memorybank", "/oauth/mcp"])
async def test_a_backslash_redirect_is_a_clear_400_on_the_consent_page_and_stores_no_code(engram, prefix):
    params = {"response_type": "code", "client_id": str(engram.key_id), "state": "s",
              "redirect_uri": "http://evil.example\\@127.0.0.1/cb", "code_challenge": _challenge()[1],
              "code_challenge_method": "S256"}  # fmt: skip
    page = await engram.get(f"{prefix}/login", params=params)
    assert page.status == 400 and "redirect_uri is not allowed" in await page.text()
    form = {**params, "csrf": "c", "api_key": engram.key, "decision": "approve"}
    engram.session.cookie_jar.update_cookies({"engram_oauth_csrf": "c"})
    posted = await engram.post(f"{prefix}/login", data=form, allow_redirects=False)
    assert posted.status == 400
    assert await _codes(engram) == 0


async def test_a_native_client_registers_its_scheme_and_the_page_names_it(engram):
    redirect = "cursor://anysphere.cursor-retrieval/oauth/callback"
    registered = await engram.post(
        "/oauth/mcp/register",
        json={
            "redirect_uris": [redirect],
            "client_name": "Cursor <IDE>",
            "token_endpoint_auth_method": "none",
        },
    )
    assert registered.status == 201, await registered.text()
    client_id = (await registered.json())["client_id"]
    verifier, challenge = _challenge()
    params = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect, "state": "s",
              "scope": "memories:read", "code_challenge": challenge, "code_challenge_method": "S256"}  # fmt: skip
    page = await engram.get("/oauth/mcp/login", params=params)
    html = await page.text()
    assert page.status == 200
    assert "<b>Cursor &lt;IDE&gt;</b>" in html  # the registered name, escaped; the oc_ id only as a detail
    assert "sent back to <b>cursor://anysphere.cursor-retrieval</b>" in html
    csrf = re.search(r"name='csrf' value='([^']+)'", html).group(1)
    form = [*{**params, "csrf": csrf, "api_key": engram.key, "decision": "approve"}.items(),
            ("approve_scope", "memories:read")]  # fmt: skip
    approved = await engram.post(
        "/oauth/mcp/login", data=form, allow_redirects=False, headers=csrf_cookie(page)
    )
    assert approved.status == 302
    location = urlsplit(approved.headers["Location"])
    assert (location.scheme, location.netloc, location.path) == ("cursor", "anysphere.cursor-retrieval",
                                                                 "/oauth/callback")  # fmt: skip
    code = parse_qs(location.query)["code"][0]
    tokens = await engram.post("/oauth/mcp/exchange", data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": redirect, "client_id": client_id,
        "code_verifier": verifier})  # fmt: skip
    assert tokens.status == 200, await tokens.text()


def test_a_redirect_uri_may_not_carry_the_answers_own_parameters():
    """RFC 6749 section 3.1: the answer's parameters must not appear twice; a URI holding `code` or
    `state` would hand a client reading the first one the URI's value instead of the server's."""
    for uri in ("https://c.example/cb?code=attacker", "https://c.example/cb?x=1&STATE=s", "https://c.example/cb?error=x",
                "https://c.example/cb?iss=https://evil.example"):  # fmt: skip
        with pytest.raises(RedirectRefused):
            parse_redirect(uri)
    assert parse_redirect("https://c.example/cb?tenant=7").shown == "c.example"


async def test_a_client_name_with_control_or_direction_characters_is_refused(engram):
    for name in ("evil\u202eexe", "a\x00b", "line\nbreak"):
        r = await engram.post(
            "/oauth/mcp/register", json={"redirect_uris": ["https://c.example/cb"], "client_name": name}
        )
        assert r.status == 400 and (await r.json())["error"] == "invalid_client_metadata", name
