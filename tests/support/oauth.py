"""Helpers for the OAuth tests: PKCE pairs and walking the consent page over plain HTTP."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from urllib.parse import parse_qs, urlsplit

REDIRECT = "https://chat.example/aip/callback"


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def authorize_params(
    client_id: str, challenge: str | None, scope: str = "read:documents write:documents"
) -> dict:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "scope": scope,
        "state": "st-123",
    }
    if challenge:
        params |= {"code_challenge": challenge, "code_challenge_method": "S256"}
    return params


def csrf_cookie(page) -> dict[str, str]:
    """The consent page's CSRF cookie as a browser on the https public URL sends it back (the test client
    talks plain http, over which a jar keeps a Secure cookie to itself)."""
    morsel = page.cookies.get("engram_oauth_csrf")
    assert morsel is not None and morsel["secure"], "the CSRF cookie is Secure on an https public URL"
    return {"Cookie": f"engram_oauth_csrf={morsel.value}"}


async def consent_over_http(bank, params: dict, user_key: str, scopes=None, decision="approve"):
    """GET the consent page, submit its form like a browser would; returns the POST response."""
    page = await bank.client.get("/memorybank/login", params=params)
    assert page.status == 200, await page.text()
    html = await page.text()
    csrf = re.search(r"name='csrf' value='([^']+)'", html).group(1)
    form = {**params, "csrf": csrf, "api_key": user_key, "decision": decision}
    body = list(form.items()) + [("approve_scope", s) for s in (scopes or params["scope"].split())]
    return await bank.client.post(
        "/memorybank/login", data=body, allow_redirects=False, headers=csrf_cookie(page)
    )


def code_from(response) -> str:
    assert response.status == 302, response.status
    query = parse_qs(urlsplit(response.headers["Location"]).query)
    assert query["state"] == ["st-123"]
    return query["code"][0]
