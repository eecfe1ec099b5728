"""Who is looking, and which spaces they may see.

The operator sees every space and manages API keys. A reader signed in with an API key sees only the
key's space(s), and only while the key is live and has the `read` scope: the key is re-read on every
request (`Viewer` is built per request), so the console never allows more than the key does right now.
A space the viewer may not see answers exactly like a space that does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from ..context import AppContext
from ..errors import NotAllowed, NotFound
from ..service import apikeys
from ..store import ApiKey, Space
from .sessions import OPERATOR, READER, Session

READ_SCOPE = "read"


@dataclass(frozen=True)
class Viewer:
    role: str
    key: ApiKey | None
    csrf: str

    @property
    def is_operator(self) -> bool:
        return self.role == OPERATOR

    @property
    def label(self) -> str:
        if self.key is None:
            return "operator"
        scopes = ", ".join(sorted(self.key.scopes))
        return f"API key {self.key.id}" + (f" “{self.key.label}”" if self.key.label else "") + f" ({scopes})"

    def key_spaces(self) -> frozenset[str]:
        """The spaces the reader's key is bound to (the one place to change for keys over several spaces)."""
        return frozenset({self.key.space_uri}) if self.key is not None else frozenset()

    def may_read(self, space_uri: str) -> bool:
        if self.is_operator:
            return True
        return self.key is not None and READ_SCOPE in self.key.scopes and space_uri in self.key_spaces()


async def viewer_for(ctx: AppContext, session: Session) -> Viewer | None:
    """The viewer behind a live session, or None when a reader's key is no longer live or readable."""
    if session.role == OPERATOR:
        return Viewer(OPERATOR, None, session.csrf)
    if session.role != READER or session.key_id is None:
        return None
    key = await apikeys.get_live_api_key(ctx.store, session.key_id)
    if key is None or READ_SCOPE not in key.scopes:
        return None
    return Viewer(READER, key, session.csrf)


async def visible_spaces(ctx: AppContext, viewer: Viewer) -> list[Space]:
    spaces = await ctx.services.spaces.list()
    return [space for space in spaces if viewer.may_read(space.uri)]


async def require_space(ctx: AppContext, viewer: Viewer, uri: str | None) -> Space:
    """The live space `uri` if the viewer may read it; otherwise the same `UnknownSpace` either way, as a
    page the console does not have (404): it tells no viewer which spaces exist."""
    space = await ctx.services.spaces.find(uri) if uri else None
    if space is None or space.deleted or not viewer.may_read(space.uri):
        raise NotFound(f"no space {uri!r} here", "UnknownSpace")
    return space


def require_operator(viewer: Viewer) -> None:
    if not viewer.is_operator:
        raise NotAllowed("only the operator manages API keys", "OperatorOnly")


viewer_key = web.RequestKey("console_viewer", Viewer)  # set by the guard on every signed-in request
