"""The OAuth2 flows of the seed's security scheme against the real app (docs/oauth.md)."""

from __future__ import annotations

import base64
from urllib.parse import parse_qs, urlsplit

from support.oauth import REDIRECT, authorize_params, code_from, consent_over_http, pkce_pair

from engram.service.apikeys import revoke_api_key


async def exchange(bank, form: dict, basic: tuple[str, str] | None = None):
    headers = {}
    if basic:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{basic[0]}:{basic[1]}".encode()).decode()
    return await bank.client.post("/memorybank/exchange", data=form, headers=headers)


async def query_with(bank, token: str):
    return await bank.client.post(
        "/memorybank/query",
        json={"queries": [{"query": "x", "user_id": "u"}]},
        headers={"Authorization": f"Bearer {token}"},
    )


async def test_client_credentials_with_an_engram_key(bank):
    response = await exchange(
        bank,
        {"grant_type": "client_credentials", "scope": "read:documents"},
        basic=(str(bank.key_id), bank.key),
    )
    assert response.status == 200 and response.headers["Cache-Control"] == "no-store"
    token = await response.json()
    assert (
        token["token_type"] == "Bearer"
        and token["scope"] == "read:documents"
        and "refresh_token" not in token
    )
    assert (await query_with(bank, token["access_token"])).status == 200
    upsert = await bank.post(
        "/upsert", {"documents": [{"text": "hello there", "user_id": "u"}]}, token["access_token"]
    )
    assert upsert.status == 403  # the token carries read:documents only
    # client id and secret in the body work too; a wrong secret or mismatched id is invalid_client
    ok = await exchange(
        bank, {"grant_type": "client_credentials", "client_id": str(bank.key_id), "client_secret": bank.key}
    )
    assert ok.status == 200 and (await ok.json())["scope"] == "read:documents write:documents"
    for basic in ((str(bank.key_id), "engram_wrong"), ("999", bank.key)):
        bad = await exchange(bank, {"grant_type": "client_credentials"}, basic=basic)
        assert bad.status == 401 and (await bad.json())["error"] == "invalid_client"
    unknown = await exchange(bank, {"grant_type": "password"}, basic=(str(bank.key_id), bank.key))
    assert (await unknown.json())["error"] == "unsupported_grant_type"


async def test_authorization_code_with_pkce_and_refresh(bank):
    user_key = await bank.new_key(["read", "write"])
    verifier, challenge = pkce_pair()
    params = authorize_params(str(bank.key_id), challenge)
    code = code_from(await consent_over_http(bank, params, user_key, scopes=["read:documents"]))
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "code_verifier": verifier,
    }
    response = await exchange(bank, form, basic=(str(bank.key_id), bank.key))
    assert response.status == 200, await response.text()
    tokens = await response.json()
    assert tokens["scope"] == "read:documents" and tokens["refresh_token"].startswith("eor_")
    assert (await query_with(bank, tokens["access_token"])).status == 200

    refreshed = await exchange(
        bank,
        {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]},
        basic=(str(bank.key_id), bank.key),
    )
    assert refreshed.status == 200
    fresh = await refreshed.json()
    assert fresh["refresh_token"] != tokens["refresh_token"]
    assert (await query_with(bank, fresh["access_token"])).status == 200
    # The old refresh token was rotated away: replaying it fails and revokes the whole family.
    replay = await exchange(bank, {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]})
    assert replay.status == 400 and (await replay.json())["error"] == "invalid_grant"
    assert (await query_with(bank, fresh["access_token"])).status == 401


async def test_wrong_pkce_verifier_and_reused_code_are_invalid_grant(bank):
    verifier, challenge = pkce_pair()
    params = authorize_params(str(bank.key_id), challenge)
    secret = (str(bank.key_id), bank.key)
    code = code_from(await consent_over_http(bank, params, bank.key))
    wrong = await exchange(
        bank,
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT,
            "code_verifier": pkce_pair()[0],
        },
        basic=secret,
    )
    assert wrong.status == 400 and (await wrong.json())["error"] == "invalid_grant"
    for malformed in ("\u00e9" * 50, "short", "x" * 129):  # RFC 7636 section 4.1's alphabet and length
        code = code_from(await consent_over_http(bank, params, bank.key))
        refused = await exchange(
            bank,
            {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": REDIRECT,
                "code_verifier": malformed,
            },
            basic=secret,
        )
        assert refused.status == 400 and (await refused.json())["error"] == "invalid_grant", malformed
    # A key-backed client is confidential: the right verifier alone is not enough (docs/oauth.md#grants)...
    code = code_from(await consent_over_http(bank, params, bank.key))
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": str(bank.key_id),
        "code_verifier": verifier,
    }
    unauthenticated = await exchange(bank, form)
    assert unauthenticated.status == 401 and (await unauthenticated.json())["error"] == "invalid_client"
    # ... with its secret too it gets tokens...
    first = await exchange(bank, form, basic=secret)
    assert first.status == 200
    access = (await first.json())["access_token"]
    # ... and replaying that code fails and revokes what it issued (RFC 6749 §4.1.2).
    again = await exchange(bank, form, basic=secret)
    assert again.status == 400 and (await again.json())["error"] == "invalid_grant"
    assert (await query_with(bank, access)).status == 401
    # Without PKCE a client must authenticate with its secret.
    code = code_from(await consent_over_http(bank, authorize_params(str(bank.key_id), None), bank.key))
    bare = await exchange(
        bank,
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT,
            "client_id": str(bank.key_id),
        },
    )
    assert bare.status == 401 and (await bare.json())["error"] == "invalid_client"


async def test_expired_and_revoked_tokens_stop_working(bank):
    response = await exchange(bank, {"grant_type": "client_credentials"}, basic=(str(bank.key_id), bank.key))
    access = (await response.json())["access_token"]
    assert (await query_with(bank, access)).status == 200
    await bank.ctx.store.write(lambda c: c.execute("UPDATE oauth_tokens SET expires_at = expires_at - 7200"))
    expired = await query_with(bank, access)
    assert expired.status == 401 and await expired.json() == {"detail": "Invalid or missing token"}

    response = await exchange(bank, {"grant_type": "client_credentials"}, basic=(str(bank.key_id), bank.key))
    access = (await response.json())["access_token"]
    await revoke_api_key(bank.ctx.store, bank.key_id)
    assert (await query_with(bank, access)).status == 401  # revoking the key ends its tokens at once


async def test_consent_page_refuses_bad_requests_and_missing_csrf(bank):
    _, challenge = pkce_pair()
    good = authorize_params(str(bank.key_id), challenge)
    for bad in (  # the client or its redirect URI is not known good: shown on the page, never redirected
        {**good, "client_id": "424242"},
        {**good, "client_id": "\u00b2"},  # a digit to str.isdigit, not an API key id
        {**good, "redirect_uri": "http://evil.example/cb"},
    ):
        page = await bank.client.get("/memorybank/login", params=bad)
        assert page.status == 400 and "Authorization failed" in await page.text()
    for bad, error in (  # the rest goes back to the client's redirect URI (RFC 6749 section 4.1.2.1)
        ({**good, "code_challenge_method": "plain"}, "invalid_request"),
        ({**good, "code_challenge": "a", "code_challenge_method": "S256"}, "invalid_request"),
        ({**good, "response_type": "token"}, "unsupported_response_type"),
        ({**good, "scope": "admin"}, "invalid_scope"),
    ):
        page = await bank.client.get("/memorybank/login", params=bad, allow_redirects=False)
        assert page.status == 302, await page.text()
        answer = parse_qs(urlsplit(page.headers["Location"]).query)
        assert answer["error"] == [error] and answer["state"] == [good["state"]], answer
    page = await bank.client.get("/memorybank/login", params=good)
    assert page.headers["X-Frame-Options"] == "DENY"
    forged = await bank.client.post(
        "/memorybank/login",
        data={**good, "csrf": "guess", "api_key": bank.key, "decision": "approve"},
        allow_redirects=False,
    )
    assert forged.status == 403
    wrong_key = await consent_over_http(bank, good, "engram_not_a_key")
    assert wrong_key.status == 401 and "not valid" in await wrong_key.text()
    denied = await consent_over_http(bank, good, bank.key, decision="deny")
    assert denied.status == 302 and "error=access_denied" in denied.headers["Location"]
    reader = await bank.new_key(["read"])
    too_much = await consent_over_http(bank, good, reader)  # the key cannot grant write:documents
    assert too_much.status == 400 and "does not allow" in await too_much.text()


async def test_registered_clients_have_fixed_redirects_and_public_ones_need_pkce(bank):
    from engram.compat.memorybank.oauth_routes import oauth_server

    server = oauth_server(bank.ctx)
    public, none = await server.register_client("an MCP client", [REDIRECT], confidential=False)
    assert none is None and public.client_id.startswith("oc_")
    verifier, challenge = pkce_pair()
    params = authorize_params(public.client_id, challenge)
    other = await bank.client.get("/memorybank/login", params={**params, "redirect_uri": REDIRECT + "/other"})
    assert other.status == 400
    no_pkce = await bank.client.get(
        "/memorybank/login", params=authorize_params(public.client_id, None), allow_redirects=False
    )
    assert no_pkce.status == 302 and "error=invalid_request" in no_pkce.headers["Location"]
    assert "PKCE" in parse_qs(urlsplit(no_pkce.headers["Location"]).query)["error_description"][0]
    code = code_from(await consent_over_http(bank, params, bank.key))
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": public.client_id,
        "code_verifier": verifier,
    }
    tokens = await (await exchange(bank, form)).json()
    assert (await query_with(bank, tokens["access_token"])).status == 200
    # A registered client has no key of its own: no client_credentials grant.
    confidential, secret = await server.register_client("a web app", [REDIRECT])
    refused = await exchange(
        bank, {"grant_type": "client_credentials"}, basic=(confidential.client_id, secret)
    )
    assert refused.status == 400 and (await refused.json())["error"] == "unauthorized_client"
    wrong = await exchange(bank, {"grant_type": "client_credentials"}, basic=(confidential.client_id, "nope"))
    assert wrong.status == 401
    # ... but it authenticates a code exchange with its secret (here without PKCE).
    code = code_from(await consent_over_http(bank, authorize_params(confidential.client_id, None), bank.key))
    ok = await exchange(
        bank,
        {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT},
        basic=(confidential.client_id, secret),
    )
    assert ok.status == 200
    stored = await bank.ctx.store.read(
        lambda c: c.execute("SELECT secret_hash FROM oauth_clients").fetchall()
    )
    assert all(secret not in (row[0] or "") for row in stored)  # only hashes at rest


async def test_authorization_server_metadata(bank):
    meta = await (await bank.client.get("/memorybank/.well-known/oauth-authorization-server")).json()
    assert meta["issuer"] == "https://engram.test/memorybank"
    assert meta["token_endpoint"] == "https://engram.test/memorybank/exchange"
    assert meta["authorization_endpoint"] == "https://engram.test/memorybank/login"
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["scopes_supported"] == ["read:documents", "write:documents"]
