"""The frozen sections of `Settings` handed to the components that use them (`settings.search`,
`settings.serving`, ...): each a view of some fields, so a component sees only its own values and carries
no defaults of its own."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Self, TypeVar

if TYPE_CHECKING:
    from .config_variables import Settings

_S = TypeVar("_S")


class Section:
    """A frozen view of some `Settings` fields, handed to the component that uses them."""

    @classmethod
    def of(cls, **changes: Any) -> Self:
        """The section of the declared defaults with `changes` (tests and scripts that build one part)."""
        from .config_variables import Settings  # late: Settings' properties build these sections

        return dataclasses.replace(section_of(cls, Settings()), **changes)  # type: ignore[type-var]


@dataclass(frozen=True)
class SearchConfig(Section):
    """The index manager's and the search limiter's (engram/search)."""

    exact_max: int
    split_min_rows: int
    ram_bytes: int
    rerank_deadline_ms: int
    load_wait_ms: int
    search_rate: float
    search_burst: int
    search_concurrency: int
    search_wait_ms: int


@dataclass(frozen=True)
class ServingConfig(Section):
    """The HTTP server's (engram/serving)."""

    host: str
    port: int
    max_body_bytes: int
    header_timeout_ms: int
    body_timeout_ms: int
    keepalive_timeout_ms: int
    max_connections: int
    processes: int
    pin_processes: bool
    event_loop: str


@dataclass(frozen=True)
class SyncConfig(Section):
    """Synced spaces' (engram/sync)."""

    poll_interval: float
    sync_concurrency: int
    sync_space_concurrency: int
    sync_timeout: float
    limit_memories: int
    limit_bytes: int


@dataclass(frozen=True)
class ClusterConfig(Section):
    """A cluster node's (engram/cluster)."""

    node_url: str | None
    node_id: str | None
    heartbeat_ms: int
    lease_timeout_ms: int


@dataclass(frozen=True)
class McpConfig(Section):
    """The MCP door's (engram/mcp)."""

    mcp_allowed_origins: tuple[str, ...]
    mcp_sessions: int
    mcp_sessions_per_key: int
    mcp_session_idle_s: int


SECTIONS = (SearchConfig, ServingConfig, SyncConfig, ClusterConfig, McpConfig)


def section_of(cls: type[_S], settings: Settings) -> _S:
    """The section `cls` of `settings`: its fields' values."""
    return cls(**{f.name: getattr(settings, f.name) for f in fields(cls)})  # type: ignore[arg-type]
