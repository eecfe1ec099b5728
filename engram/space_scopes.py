"""Which requests are for one space: declared by the door that registers them, read by the cluster.

A route whose answer comes from a space's index, or that acts on it, declares its space scope when it is
registered: an XRPC method with `xrpc.add(..., space_scoped=True)` (the runtime finds the space in the
`space` parameter of a query or the `space` field of a procedure's body), a REST shim with `declare(path,
space_of)` and its own way to find the space (Memory Bank: its bearer credential's key). The cluster sends
each declared request to the node holding the space's lease (engram/cluster/middleware.py,
docs/scale-out.md#forwarding); nothing else keeps a list of them.

`space_of` runs before authentication, so its answer is only a routing hint: the node that serves the
request authenticates it in full, and a request whose space cannot be found is served where it arrived,
where the usual error answers it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

from aiohttp import web

SpaceOf = Callable[[web.Request], Awaitable[str | None]]


@dataclass(frozen=True)
class SpaceScope:
    space_of: SpaceOf  # the space the request is for, or None (served here)
    label: str  # for the forwarding metrics: the NSID or the path


class SpaceScopes:
    def __init__(self) -> None:
        self._by_path: dict[str, SpaceScope] = {}

    def declare(self, path: str, space_of: SpaceOf, *, label: str | None = None) -> None:
        if path in self._by_path:
            raise KeyError(f"{path} declared twice")
        self._by_path[path] = SpaceScope(space_of, label or path)

    def get(self, path: str) -> SpaceScope | None:
        return self._by_path.get(path)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._by_path))


space_scopes_key = web.AppKey("space_scopes", SpaceScopes)
