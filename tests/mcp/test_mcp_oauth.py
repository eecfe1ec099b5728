"""OAuth 2.1 for /mcp end to end over HTTP on a real port.

The SDK's own OAuth client does the whole MCP authorization flow (401 challenge -> protected-resource
metadata -> authorization-server metadata -> dynamic registration -> consent page with PKCE -> token) and
then calls tools with the token; a person's approval on the consent page is played over plain HTTP.
Raw requests then cover refresh rotation, a wrong verifier, a replayed code and an expired token."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from dataclasses import replace
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from support.mcp import INIT, result_of, serve

from engram.oauth.registration import REGISTRATION_BURST

REDIRECT = "http://127.0.0.1:9/callback"  # never fetched: the test reads the code off the Location header
SCOPE = "memories:read memories:write"


class MemoryTokens:
    def __init__(self):
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


async def approve(http: httpx2.AsyncClient, authorize_url: str, api_key: str, decision: str = "approve"):
    """What a person does on the consent page: open it, paste their key, tick the scopes, approve."""
    page = await http.get(authorize_url)
    assert page.status_code == 200, page.text
    csrf = re.search(r"name='csrf' value='([^']+)'", page.text).group(1)
    hidden = dict(re.findall(r"<input type='hidden' name='(\w+)' value='([^']*)'>", page.text))
    scopes = re.findall(r"name='approve_scope' value='([^']+)'", page.text)
    form = {**hidden, "csrf": csrf, "api_key": api_key, "decision": decision, "approve_scope": scopes}
    return await http.post(authorize_url.split("?")[0], data=form)  # the client sends the CSRF cookie back


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    return verifier, base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(
        b"="
    ).decode()


async def test_the_sdk_oauth_client_connects_through_registration_consent_and_pkce(served):
    notes = await served.space("notes")
    person_key, _ = await served.key(notes)
    storage, landed = MemoryTokens(), {}

    async def redirect_handler(url: str) -> None:
        assert url.startswith(f"{served.base}/oauth/mcp/login?")
        query = parse_qs(urlsplit(url).query)
        assert query["code_challenge_method"] == ["S256"] and query["code_challenge"]
        async with httpx2.AsyncClient() as browser:
            answer = await approve(browser, url, person_key)
        assert answer.status_code == 302, answer.text
        landed.update(parse_qs(urlsplit(answer.headers["location"]).query))

    async def callback_handler() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=landed["code"][0], state=landed["state"][0])

    auth = OAuthClientProvider(
        served.mcp_url,
        OAuthClientMetadata(
            redirect_uris=[REDIRECT],
            client_name="test agent",
            scope=SCOPE,
            grant_types=["authorization_code", "refresh_token"],
            token_endpoint_auth_method="none",
        ),
        storage,
        redirect_handler,
        callback_handler,
    )
    async with (
        httpx2.AsyncClient(auth=auth) as http,
        Client(streamable_http_client(served.mcp_url, http_client=http)) as client,
    ):
        made = result_of(await client.call_tool("remember", {"text": "Connected through OAuth."}))
        hits = result_of(await client.call_tool("recall", {"query": "OAuth connection"}))
    assert storage.client.client_id.startswith("oc_") and storage.client.client_secret is None
    assert storage.tokens.access_token.startswith("eoa_") and storage.tokens.refresh_token.startswith("eor_")
    assert made["uri"].startswith(notes + "/") and hits["results"][0]["uri"] == made["uri"]


@pytest.fixture
async def registered(served):
    """A public client registered over RFC 7591, and a person's key for the `notes` space."""
    notes = await served.space("notes")
    person_key, _ = await served.key(notes)
    async with httpx2.AsyncClient(base_url=served.base) as http:
        answer = await http.post(
            "/oauth/mcp/register",
            json={
                "redirect_uris": [REDIRECT],
                "token_endpoint_auth_method": "none",
                "client_name": "raw",
                "grant_types": ["authorization_code", "refresh_token"],
            },
        )
    assert answer.status_code == 201, answer.text
    assert "client_secret" not in answer.json()
    return served, answer.json()["client_id"], person_key


async def authorize(http, served, client_id, person_key, challenge, scope=SCOPE) -> str:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "scope": scope,
        "state": "s1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    url = str(httpx2.URL(f"{served.base}/oauth/mcp/login", params=params))
    answer = await approve(http, url, person_key)
    assert answer.status_code == 302, answer.text
    query = parse_qs(urlsplit(answer.headers["location"]).query)
    assert query["state"] == ["s1"]
    return query["code"][0]


async def exchange(http, served, client_id, **fields):
    return await http.post(f"{served.base}/oauth/mcp/exchange", data={"client_id": client_id, **fields})


async def tools_list(http, served, token: str) -> int:
    body = INIT
    answer = await http.post(
        served.mcp_url,
        json=body,
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
    )
    return answer.status_code


async def test_code_exchange_refresh_rotation_and_refusals(registered):
    served, client_id, person_key = registered
    async with httpx2.AsyncClient() as http:
        verifier, challenge = pkce()
        code = await authorize(http, served, client_id, person_key, challenge)
        wrong = await exchange(
            http,
            served,
            client_id,
            grant_type="authorization_code",
            code=code,
            redirect_uri=REDIRECT,
            code_verifier=pkce()[0],
        )
        assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"

        code = await authorize(http, served, client_id, person_key, challenge)
        good = await exchange(
            http,
            served,
            client_id,
            grant_type="authorization_code",
            code=code,
            redirect_uri=REDIRECT,
            code_verifier=verifier,
        )
        assert good.status_code == 200, good.text
        tokens = good.json()
        assert tokens["token_type"] == "Bearer" and 0 < tokens["expires_in"] <= 3600
        assert await tools_list(http, served, tokens["access_token"]) == 200

        replay = await exchange(
            http,
            served,
            client_id,
            grant_type="authorization_code",
            code=code,
            redirect_uri=REDIRECT,
            code_verifier=verifier,
        )
        assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
        # RFC 6749 §4.1.2: the replay revoked what the code had issued.
        assert await tools_list(http, served, tokens["access_token"]) == 401

        code = await authorize(http, served, client_id, person_key, challenge)
        tokens = (
            await exchange(
                http,
                served,
                client_id,
                grant_type="authorization_code",
                code=code,
                redirect_uri=REDIRECT,
                code_verifier=verifier,
            )
        ).json()
        renewed = await exchange(
            http, served, client_id, grant_type="refresh_token", refresh_token=tokens["refresh_token"]
        )
        assert renewed.status_code == 200 and renewed.json()["refresh_token"] != tokens["refresh_token"]
        assert await tools_list(http, served, renewed.json()["access_token"]) == 200
        reused = await exchange(
            http, served, client_id, grant_type="refresh_token", refresh_token=tokens["refresh_token"]
        )
        assert reused.status_code == 400  # rotated: the old refresh token is spent

        code = await authorize(http, served, client_id, person_key, challenge)
        tokens = (
            await exchange(
                http,
                served,
                client_id,
                grant_type="authorization_code",
                code=code,
                redirect_uri=REDIRECT,
                code_verifier=verifier,
            )
        ).json()
        assert await tools_list(http, served, tokens["access_token"]) == 200
        await served.ctx.store.write(lambda conn: conn.execute("UPDATE oauth_tokens SET expires_at = 1"))
        expired = await http.post(
            served.mcp_url, json={}, headers={"Authorization": f"Bearer {tokens['access_token']}"}
        )
        assert expired.status_code == 401
        assert 'resource_metadata="' in expired.headers["www-authenticate"]


async def test_a_read_only_approval_cannot_write(registered):
    served, client_id, person_key = registered
    async with httpx2.AsyncClient() as http:
        verifier, challenge = pkce()
        code = await authorize(http, served, client_id, person_key, challenge, scope="memories:read")
        tokens = (
            await exchange(
                http,
                served,
                client_id,
                grant_type="authorization_code",
                code=code,
                redirect_uri=REDIRECT,
                code_verifier=verifier,
            )
        ).json()
    assert tokens["scope"] == "memories:read"
    async with served.client(tokens["access_token"]) as client:
        refused = await client.call_tool("remember", {"text": "should not land"})
        assert refused.is_error and "InsufficientScope" in refused.content[0].text
        assert result_of(await client.call_tool("list_spaces", {}))["spaces"][0]["write"] is False


@pytest.mark.parametrize(
    "metadata, error",
    [
        ({}, "invalid_redirect_uri"),
        ({"redirect_uris": ["http://evil.example/cb"]}, "invalid_redirect_uri"),
        ({"redirect_uris": [REDIRECT], "grant_types": ["password"]}, "invalid_client_metadata"),
        (
            {"redirect_uris": [REDIRECT], "token_endpoint_auth_method": "private_key_jwt"},
            "invalid_client_metadata",
        ),
        ({"redirect_uris": [REDIRECT], "scope": "admin"}, "invalid_client_metadata"),
        (["not", "an", "object"], "invalid_client_metadata"),
    ],
)
async def test_registration_refuses_bad_metadata(served, metadata, error):
    async with httpx2.AsyncClient(base_url=served.base) as http:
        answer = await http.post("/oauth/mcp/register", json=metadata)
    assert answer.status_code == 400 and answer.json()["error"] == error


async def test_a_confidential_client_gets_a_secret_that_authenticates(served):
    async with httpx2.AsyncClient(base_url=served.base) as http:
        answer = (await http.post("/oauth/mcp/register", json={"redirect_uris": [REDIRECT]})).json()
        assert answer["token_endpoint_auth_method"] == "client_secret_basic" and answer["client_secret"]
        wrong = await http.post(
            "/oauth/mcp/exchange",
            data={"grant_type": "authorization_code", "code": "x"},
            auth=(answer["client_id"], "not-the-secret"),
        )
    assert wrong.status_code in (400, 401)


async def test_a_token_from_another_front_door_is_not_a_token_for_mcp(served):
    notes = await served.space("notes")
    key_token, key = await served.key(notes)
    async with httpx2.AsyncClient(base_url=served.base) as http:
        bank = await http.post(
            "/memorybank/exchange",
            data={"grant_type": "client_credentials"},
            auth=(str(key.id), key_token),
        )
        assert bank.status_code == 200, bank.text  # scopes read:documents write:documents
        assert await tools_list(http, served, bank.json()["access_token"]) == 401
        mcp = await http.post(
            "/oauth/mcp/exchange", data={"grant_type": "client_credentials"}, auth=(str(key.id), key_token)
        )
        assert mcp.status_code == 200 and mcp.json()["scope"] == SCOPE
        assert await tools_list(http, served, mcp.json()["access_token"]) == 200


async def test_registration_is_rate_limited_per_address(served):
    async with httpx2.AsyncClient(base_url=served.base) as http:
        statuses = [
            (await http.post("/oauth/mcp/register", json={"redirect_uris": [REDIRECT]})).status_code
            for _ in range(REGISTRATION_BURST + 1)
        ]
        refused = await http.post("/oauth/mcp/register", json={"redirect_uris": [REDIRECT]})
    assert statuses[:REGISTRATION_BURST] == [201] * REGISTRATION_BURST and statuses[-1] == 429
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert refused.json()["error"] == "temporarily_unavailable"


async def test_each_of_n_processes_keeps_a_share_of_the_registration_budget(aiohttp_server, settings):
    """With ENGRAM_PROCESSES=4 each process allows a quarter of the burst, so four together allow one."""
    served = await serve(aiohttp_server, replace(settings, processes=4))
    share = REGISTRATION_BURST // 4
    async with httpx2.AsyncClient(base_url=served.base) as http:
        statuses = [
            (await http.post("/oauth/mcp/register", json={"redirect_uris": [REDIRECT]})).status_code
            for _ in range(share + 1)
        ]
    assert statuses == [201] * share + [429]


async def test_a_client_registered_at_mcp_is_unknown_at_the_memory_bank_mount(served):
    """Each mount is its own authorization server (docs/oauth.md): the client table records which one
    registered a client, so /mcp's anonymous registrations are no clients of /memorybank."""
    registered = await served_register(served)
    async with httpx2.AsyncClient(base_url=served.base) as http:
        page = await http.get("/memorybank/login", params={
            "response_type": "code", "client_id": registered, "redirect_uri": "https://c.example/cb",
            "state": "s", "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
            "code_challenge_method": "S256",
        })  # fmt: skip
        assert page.status_code == 400 and "unknown client_id" in page.text
        ours = await http.get("/oauth/mcp/login", params={
            "response_type": "code", "client_id": registered, "redirect_uri": "https://c.example/cb",
            "state": "s", "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
            "code_challenge_method": "S256",
        })  # fmt: skip
        assert ours.status_code == 200


async def served_register(served) -> str:
    async with httpx2.AsyncClient(base_url=served.base) as http:
        r = await http.post("/oauth/mcp/register", json={
            "redirect_uris": ["https://c.example/cb"], "client_name": "anon", "token_endpoint_auth_method": "none",
        })  # fmt: skip
        assert r.status_code == 201, r.text
        return r.json()["client_id"]
