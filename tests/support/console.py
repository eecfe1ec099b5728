"""Helpers for the console tests: a browser-like client that keeps its own cookies, and a test clock.

(Not in conftest.py: test modules import these by name.) The client keeps cookies by hand instead of a
cookie jar: aiohttp's jar drops cookies for IP hosts and Secure cookies over http, and the tests need to
see exactly which cookies the console sets."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from http.cookies import SimpleCookie

from engram.console.login_links import create_link_token

CSRF_INPUT = re.compile(r'name="csrf" value="([^"]+)"')


class Clock:
    """A settable wall clock (installed as the app context's clock)."""

    def __init__(self, now: float = 1_800_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Browser:
    client: object
    cookies: dict[str, str] = field(default_factory=dict)
    set_cookie_headers: list[str] = field(default_factory=list)

    def _remember(self, resp) -> None:
        for header in resp.headers.getall("Set-Cookie", []):
            self.set_cookie_headers.append(header)
            for name, morsel in SimpleCookie(header).items():
                if morsel["max-age"] == "0" or not morsel.value or morsel.value == '""':
                    self.cookies.pop(name, None)
                else:
                    self.cookies[name] = morsel.value

    def _cookie_header(self) -> dict[str, str]:
        if not self.cookies:
            return {}
        return {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}

    async def get(self, path: str, params=None):
        resp = await self.client.get(
            path, params=params, headers=self._cookie_header(), allow_redirects=False
        )
        await resp.read()
        self._remember(resp)
        return resp

    async def post(self, path: str, data):
        resp = await self.client.post(path, data=data, headers=self._cookie_header(), allow_redirects=False)
        await resp.read()
        self._remember(resp)
        return resp

    async def csrf(self, path: str = "/console/", params=None) -> str:
        """The CSRF token of the signed-in session, as a page's forms carry it."""
        resp = await self.get(path, params)
        assert resp.status == 200, (resp.status, await resp.text())
        return CSRF_INPUT.search(await resp.text()).group(1)

    async def open_link(self, token: str):
        page = await self.get("/console/login", {"token": token})
        assert page.status == 200
        return page

    async def redeem(self, token: str, next_url: str = "/console/"):
        await self.open_link(token)
        return await self.post(
            "/console/login", {"token": token, "csrf": self.cookies["engram_console_login"], "next": next_url}
        )

    async def sign_in_operator(self, ctx, clock: Clock) -> None:
        token = await create_link_token(ctx.store, clock())
        resp = await self.redeem(token)
        assert resp.status == 303 and "engram_console" in self.cookies, resp.status

    async def sign_in_key(self, api_key: str):
        page = await self.get("/console/login")
        assert page.status == 200
        return await self.post(
            "/console/login/key", {"api_key": api_key, "csrf": self.cookies["engram_console_login"]}
        )


async def console_app(settings, clock):
    """The real app, with the test's clock as its wall clock (sessions and links expire on it)."""
    from engram.app import create_app
    from engram.app_keys import context_key

    app = await create_app(settings)
    app[context_key].clock = clock
    return app
