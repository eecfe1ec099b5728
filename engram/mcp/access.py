"""What one MCP caller may touch: the spaces it reads and writes, from its credential only (docs/mcp.md).

Tenancy never comes from tool arguments. An argument naming a space or a memory is looked up *inside*
this access; anything outside it answers exactly like something that does not exist, so a caller cannot
even learn whether another tenant's space or memory is there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..auth.api_key_grants import KeyGrant, live_key
from ..errors import InvalidInput, NotAllowed, NotFound
from ..store.uris import parse_memory_uri

if TYPE_CHECKING:
    from ..context import AppContext


@dataclass(frozen=True)
class McpAccess:
    readable: dict[str, str]  # short id (the space's row id, as `engram apikey list` shows it) -> space URI
    writable: frozenset[str]  # space URIs the caller may remember into and forget from
    default_write: str | None  # where `remember` goes when no space is named
    principal: str  # who this is, for logs and session binding (never a secret)
    named: dict[str, str] | None = None  # every space the caller sees at all, by short id (default: readable)

    @classmethod
    def of_key(cls, grant: KeyGrant) -> McpAccess:
        """An API key (or an OAuth token issued for one): reads its spaces with `read`, writes its primary
        space with `write`, exactly what the REST shims allow the same key (docs/compat.md)."""
        readable = dict(grant.spaces) if "read" in grant.scopes else {}
        writable = frozenset({grant.primary_space}) if "write" in grant.scopes else frozenset()
        default = grant.primary_space if writable else None
        named = {s: u for s, u in grant.spaces.items() if u in writable or u in readable.values()}
        return cls(readable, writable, default, f"key:{grant.key_id}", named)

    @classmethod
    async def operator(cls, ctx: AppContext) -> McpAccess:
        """The local operator of the data dir (`engram mcp` without --key): every live hosted space."""
        spaces = [s for s in await ctx.services.spaces.list() if s.kind == "hosted" and not s.deleted]
        readable = {str(s.id): s.uri for s in spaces}
        default = spaces[0].uri if len(spaces) == 1 else None
        return cls(readable, frozenset(readable.values()), default, "operator")

    @property
    def visible(self) -> dict[str, str]:
        """Every space the caller can see at all (read or write), by short id."""
        return dict(self.named) if self.named is not None else dict(self.readable)

    def short_id(self, uri: str) -> str | None:
        for short, known in self.visible.items():
            if known == uri:
                return short
        return None

    def _lookup(self, name: str, spaces: dict[str, str]) -> str:
        """A space named by short id, full URI or bare name, among `spaces` only."""
        for short, uri in spaces.items():
            if name in (short, uri) or uri.rsplit("/", 1)[-1] == name:
                return uri
        raise NotFound(f"{name!r} is not one of your spaces; list_spaces shows them", "UnknownSpace")

    def read_spaces(self, names: list[str] | None) -> list[str]:
        if not self.readable:
            raise NotAllowed(
                "this credential cannot read memories (it lacks the read scope)", "InsufficientScope"
            )
        if not names:
            return list(dict.fromkeys(self.readable.values()))
        return list(dict.fromkeys(self._lookup(n, self.readable) for n in names))

    def read_space(self, name: str | None) -> str:
        if name is None:
            spaces = self.read_spaces(None)
            if self.default_write in spaces:
                return self.default_write
            if len(spaces) == 1:
                return spaces[0]
            raise InvalidInput(
                "you can read several spaces: name one (list_spaces shows them)", "SpaceRequired"
            )
        return self.read_spaces([name])[0]

    def write_space(self, name: str | None) -> str:
        if not self.writable:
            raise NotAllowed(
                "this credential cannot write memories (it lacks the write scope)", "InsufficientScope"
            )
        if name is None:
            if self.default_write is None:
                raise InvalidInput(
                    "you can write several spaces: name one (list_spaces shows them)", "SpaceRequired"
                )
            return self.default_write
        uri = self._lookup(name, self.visible)
        if uri not in self.writable:
            raise NotAllowed("you may read this space but not write to it", "ReadOnlySpace")
        return uri

    def memory_space(self, memory_uri: str, *, write: bool = False) -> str:
        """The space of a memory URI the caller may read (or write); NotFound for anything else."""
        try:
            space, _, _ = parse_memory_uri(memory_uri)
        except ValueError:
            raise InvalidInput(f"not a memory URI: {memory_uri[:200]!r}", "InvalidUri") from None
        if write:
            if space in self.writable:
                return space
            if space in self.readable.values():
                raise NotAllowed("you may read this memory's space but not write to it", "ReadOnlySpace")
        elif space in self.readable.values():
            return space
        raise NotFound("no such memory among your spaces", "MemoryNotFound")


async def key_access(ctx: AppContext, token: str) -> McpAccess:
    """The access of an engram API key, looked up now (revoking it stops the very next call)."""
    return McpAccess.of_key(KeyGrant.of(await live_key(ctx.store, token)))
