"""Settings: every ``ENGRAM_*`` variable is read here and nowhere else, and validated at start-up.

`read_env()` turns the environment into a frozen `Settings`; a bad value raises `ConfigError` naming the
variable, and `engram serve` prints it and exits with status 2 instead of starting half-configured.
The variables themselves (name, default, parser, help) are declared once, as the fields of `Settings` in
`config_variables.py`; this module parses them and derives the few that follow from others.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any
from urllib.parse import quote, urlsplit

from .affinity import usable_cores
from .config_fields import Variable
from .config_sections import SECTIONS, ClusterConfig, McpConfig, SearchConfig, ServingConfig, SyncConfig
from .config_values import ConfigError, as_did, as_int, as_url
from .config_variables import VARIABLES, Settings

__all__ = [
    "SECTIONS",
    "VARIABLES",
    "ClusterConfig",
    "ConfigError",
    "McpConfig",
    "SearchConfig",
    "ServingConfig",
    "Settings",
    "SyncConfig",
    "Variable",
    "did_web_for",
    "override",
    "read_env",
    "read_env_with",
]

_KNOWN = {v.name for v in VARIABLES}


def did_web_for(public_url: str) -> str:
    """did:web of a URL's host; a port is percent-encoded as the did:web method requires."""
    parts = urlsplit(public_url)
    host = parts.hostname or "localhost"
    if parts.port:
        host = f"{host}:{parts.port}"
    return "did:web:" + quote(host, safe="")


def read_env(environ: Mapping[str, str] | None = None) -> Settings:
    env = dict(os.environ if environ is None else environ)
    unknown = sorted(k for k in env if k.startswith("ENGRAM_") and k not in _KNOWN)
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]} (see the configuration table in README.md)")

    def get(v: Variable) -> str | None:
        raw = env.get(v.name)
        return v.default if raw is None or (v.blank and not raw) else raw

    values: dict[str, Any] = {}
    for f in fields(Settings):
        v = f.metadata.get("variable")
        if v is None or v.parse is None or (raw := get(v)) is None:
            continue
        values[f.name] = v.parse(v.name, raw)
    by_name = {v.name: v for v in VARIABLES}
    derived = {name: get(by_name[name]) for name in _DERIVED}
    return _derive(Settings(**values), derived)


# The variables whose value follows from others (their `parse` is None): read_env derives them here.
_DERIVED = ("ENGRAM_PUBLIC_URL", "ENGRAM_SERVICE_DID", "ENGRAM_NODE_ID", "ENGRAM_PROCESSES")


def _derive(settings: Settings, raw: Mapping[str, str | None]) -> Settings:
    public_url = as_url("ENGRAM_PUBLIC_URL", raw["ENGRAM_PUBLIC_URL"] or f"http://localhost:{settings.port}")
    did = raw["ENGRAM_SERVICE_DID"]
    service_did = as_did("ENGRAM_SERVICE_DID", did) if did else did_web_for(public_url)
    node_id = (raw["ENGRAM_NODE_ID"] or "").strip() or None
    if node_id is None and settings.node_url is not None:
        parts = urlsplit(
            settings.node_url
        )  # stable across restarts, so a restarted node gets its spaces back
        node_id = f"{parts.hostname}:{parts.port or (443 if parts.scheme == 'https' else 80)}"
    if settings.lease_timeout_ms < 2 * settings.heartbeat_ms:
        raise ConfigError(
            f"ENGRAM_LEASE_TIMEOUT_MS={settings.lease_timeout_ms} must be at least twice "
            f"ENGRAM_HEARTBEAT_MS={settings.heartbeat_ms} (one missed heartbeat must not cost a node its spaces)"
        )
    settings = replace(settings, public_url=public_url, service_did=service_did, node_id=node_id)
    return _with_processes(settings, (raw["ENGRAM_PROCESSES"] or "").strip())


def _with_processes(settings: Settings, raw: str) -> Settings:
    """Serving processes: the usable cores by default, but one on a cluster node. A node is one lease
    holder with one heartbeat and one set of owner-side buckets (docs/scale-out.md), and its gauges read
    in-process state that the multiprocess metrics files cannot sum; run more nodes to use more cores."""
    if not raw:
        return replace(settings, processes=1 if settings.cluster else usable_cores())
    processes = as_int("ENGRAM_PROCESSES", raw, 1, 256)
    if settings.cluster and processes > 1:
        raise ConfigError(
            f"ENGRAM_PROCESSES={processes} is not supported on a cluster node (ENGRAM_NODE_URL with "
            "ENGRAM_DATABASE_URL): run one node per process, each with its own ENGRAM_NODE_URL"
        )
    return replace(settings, processes=processes)


def override(settings: Settings, **changes: Any) -> Settings:
    """A copy with some fields changed (tests and the CLI use this instead of mutating the environment)."""
    return replace(settings, **changes)


def read_env_with(flags: Mapping[str, str], environ: Mapping[str, str] | None = None) -> Settings:
    """Settings as if command-line `flags` (ENGRAM_* name -> value) were set in the environment, so what
    is derived from them follows: `engram serve --port 9000` gets the URL and DID of port 9000 unless
    ENGRAM_PUBLIC_URL / ENGRAM_SERVICE_DID name them explicitly."""
    return read_env({**(os.environ if environ is None else environ), **flags})
