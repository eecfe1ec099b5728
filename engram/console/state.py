"""The console's per-app state: the engram context, sessions, the clock, and cookie settings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web

from ..context import AppContext
from .sessions import SessionStore

SESSION_COOKIE = "engram_console"
LOGIN_COOKIE = "engram_console_login"  # the CSRF value of the sign-in forms, before any session exists
COOKIE_PATH = "/console/"


@dataclass
class ConsoleState:
    ctx: AppContext
    clock: Callable[[], float]
    sessions: SessionStore = field(init=False)

    def __post_init__(self) -> None:
        # The store opens after the routes are built (the app's cleanup context), so it is looked up late.
        self.sessions = SessionStore(self.ctx.store, self.clock)

    @classmethod
    def for_context(cls, ctx: AppContext) -> ConsoleState:
        # Read through the context on every call: tests move ctx.clock to expire sessions and links
        # without sleeping; the service uses wall-clock time, as the CLI's links do.
        return cls(ctx, lambda: ctx.clock())

    @property
    def secure_cookies(self) -> bool:
        return self.ctx.settings.public_url.startswith("https://")

    def set_cookie(self, response: web.StreamResponse, name: str, value: str, max_age: int) -> None:
        response.set_cookie(
            name,
            value,
            path=COOKIE_PATH,
            max_age=max_age,
            httponly=True,
            secure=self.secure_cookies,
            samesite="Strict",
        )

    def clear_cookie(self, response: web.StreamResponse, name: str) -> None:
        response.del_cookie(name, path=COOKIE_PATH, secure=self.secure_cookies, samesite="Strict")


console_state_key = web.AppKey("console_state", ConsoleState)
