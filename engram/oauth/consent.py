"""The authorization endpoint: a small server-rendered consent page (docs/oauth.md#the-consent-page).

GET shows what the client asks for; the person pastes an engram API key (proof of access) and approves
the scopes they tick. The form carries a CSRF token that must match a SameSite=Strict cookie set with
the page (a double-submit check), and the page refuses to be framed. Until the client and its redirect
URI are known good, errors are shown on the page, never sent to the redirect URI; after that they are sent
to it (docs/oauth.md#the-consent-page).
"""

from __future__ import annotations

import hmac
import re
import secrets
from collections.abc import Mapping
from html import escape
from urllib.parse import urlencode, urlsplit

from aiohttp import web

from .clients import Client
from .redirects import parse_redirect
from .server import OAuthError, OAuthServer

CSRF_COOKIE = "engram_oauth_csrf"
_FIELDS = (
    "response_type",
    "client_id",
    "redirect_uri",
    "scope",
    "state",
    "code_challenge",
    "code_challenge_method",
)
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
}
_STYLE = "body{font-family:sans-serif;max-width:32em;margin:3em auto;line-height:1.5}.error{color:#a00}"


class BadRequest(Exception):
    """The request cannot be answered through the redirect URI: show it on the page."""


class Redirected(Exception):
    """An error of a request whose client and redirect URI are known good: answered through the redirect
    URI (docs/oauth.md#the-consent-page), so the client waiting on it hears why."""

    def __init__(self, error: str, description: str):
        super().__init__(description)
        self.error, self.description = error, description


# an S256 challenge is the base64url of a SHA-256 digest, 43 characters (docs/oauth.md#the-consent-page)
_CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")


def _page(title: str, body: str, status: int = 200) -> web.Response:
    html = (f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
            f"<style>{_STYLE}</style></head><body><h1>{escape(title)}</h1>{body}</body></html>")  # fmt: skip
    return web.Response(text=html, content_type="text/html", status=status, headers=_HEADERS)


class ConsentPage:
    def __init__(self, server: OAuthServer, title: str, scope_help: Mapping[str, str], *, public_url: str):
        self.server = server
        self.title = title
        self.scope_help = dict(scope_help)
        # Secure cookies whenever the public URL is https, as the console's: behind a TLS proxy the request
        # itself arrives over plain http
        self.secure_cookies = public_url.startswith("https://")

    async def _check(self, params: Mapping[str, str]) -> Client:
        """The client, once the request is one to ask the person about. BadRequest (shown on the page)
        until the client and its redirect URI are known good; Redirected (sent to that URI) after."""
        client = await self.server.find_client(params.get("client_id") or "")
        if client is None:
            raise BadRequest("unknown client_id")
        if not client.allows_redirect(params.get("redirect_uri") or ""):
            raise BadRequest(
                "redirect_uri is not allowed for this client (https, http to localhost, or a native app's "
                "own scheme; parsed the same way by every parser)"
            )
        if params.get("response_type") != "code":
            raise Redirected("unsupported_response_type", "only response_type=code is supported")
        challenge, method = params.get("code_challenge"), params.get("code_challenge_method")
        if challenge is not None and method != "S256":
            raise Redirected("invalid_request", "code_challenge_method must be S256")
        if method is not None and not challenge:
            raise Redirected("invalid_request", "code_challenge_method without code_challenge")
        if challenge is not None and not _CHALLENGE.fullmatch(challenge):
            raise Redirected("invalid_request", "code_challenge must be 43 base64url characters (S256)")
        if not client.confidential and not challenge:
            raise Redirected("invalid_request", "a public client must use PKCE (code_challenge)")
        unknown = set((params.get("scope") or "").split()) - set(self.server.scope_map)
        if unknown:
            raise Redirected("invalid_scope", f"unknown scope {min(unknown)!r}")
        return client

    def _form(self, client: Client, params: Mapping[str, str], csrf: str, error: str = "") -> str:
        wanted = (params.get("scope") or "").split() or list(self.server.scope_map)
        hidden = "".join(
            f"<input type='hidden' name='{name}' value='{escape(params[name])}'>"
            for name in _FIELDS
            if name in params
        )
        boxes = "".join(
            f"<label><input type='checkbox' name='approve_scope' value='{escape(s)}' checked> "
            f"{escape(s)}: {escape(self.scope_help.get(s, s))}</label><br>"
            for s in wanted
        )
        # The person decides on what they can recognise: the name the client registered and the host the
        # browser will really go to (the URI passed parse_redirect: every parser reads that host).
        host = parse_redirect(params["redirect_uri"]).shown
        shown_error = f"<p class='error' role='alert'>{escape(error)}</p>" if error else ""
        return (
            f"{shown_error}<p><b>{escape(client.name)}</b> <small>(client id {escape(client.client_id)})</small> "
            f"wants access to your memories and will be sent back to <b>{escape(host)}</b>.</p>"
            f"<form method='post'>{hidden}<input type='hidden' name='csrf' value='{escape(csrf)}'>"
            f"<p>{boxes}</p><p><label>Your engram API key<br><input type='password' name='api_key' "
            f"autocomplete='off' size='50'></label></p>"
            f"<button type='submit' name='decision' value='approve'>Approve</button> "
            f"<button type='submit' name='decision' value='deny'>Deny</button></form>"
        )

    async def get(self, request: web.Request) -> web.Response:
        params = {k: v for k, v in request.query.items() if k in _FIELDS}
        try:
            client = await self._check(params)
        except BadRequest as exc:
            return _page("Authorization failed", f"<p class='error'>{escape(str(exc))}</p>", 400)
        except Redirected as exc:
            raise _error_redirect(params, exc) from None
        csrf = secrets.token_urlsafe(24)
        response = _page(self.title, self._form(client, params, csrf))
        secure = request.secure or self.secure_cookies
        response.set_cookie(CSRF_COOKIE, csrf, httponly=True, samesite="Strict", secure=secure,
                            path=request.path, max_age=1800)  # fmt: skip
        return response

    async def post(self, request: web.Request) -> web.Response:
        form = await request.post()
        params = {k: v for k, v in form.items() if k in _FIELDS and isinstance(v, str)}
        cookie, sent = request.cookies.get(CSRF_COOKIE, ""), form.get("csrf")
        if not cookie or not isinstance(sent, str) or not hmac.compare_digest(cookie, sent):
            return _page(
                "Authorization failed", "<p class='error'>The form expired; open the link again.</p>", 403
            )
        try:
            client = await self._check(params)
        except BadRequest as exc:
            return _page("Authorization failed", f"<p class='error'>{escape(str(exc))}</p>", 400)
        except Redirected as exc:
            raise _error_redirect(params, exc) from None
        state = {"state": params["state"]} if "state" in params else {}
        if form.get("decision") != "approve":
            raise web.HTTPFound(_redirect(params["redirect_uri"], {"error": "access_denied", **state}))
        key = await self.server.key_for_secret(str(form.get("api_key") or "").strip())
        if key is None:
            return _page(self.title, self._form(client, params, cookie, "That API key is not valid."), 401)
        requested = set((params.get("scope") or "").split()) or set(self.server.scope_map)
        approved = [s for s in form.getall("approve_scope", []) if isinstance(s, str) and s in requested]
        try:
            if not approved:
                raise OAuthError("invalid_scope", "tick at least one permission")
            scopes = self.server.parse_scopes(" ".join(approved), key)
        except OAuthError as err:
            return _page(self.title, self._form(client, params, cookie, err.description), 400)
        code = await self.server.issue_code(
            client_id=params["client_id"], user_key=key, scopes=scopes, redirect_uri=params["redirect_uri"],
            code_challenge=params.get("code_challenge"),
        )  # fmt: skip
        raise web.HTTPFound(_redirect(params["redirect_uri"], {"code": code, **state}))


def _error_redirect(params: Mapping[str, str], exc: Redirected) -> web.HTTPFound:
    state = {"state": params["state"]} if "state" in params else {}
    answer = {"error": exc.error, "error_description": exc.description, **state}
    return web.HTTPFound(_redirect(params["redirect_uri"], answer), headers=_HEADERS)


def _redirect(uri: str, params: Mapping[str, str]) -> str:
    return uri + ("&" if urlsplit(uri).query else "?") + urlencode(params)
