"""The sync part of getSpaceStatus and `engram space status`: per repo rev, last success, last error and
backoff, plus the space's lag (how long the oldest unserved notification or poll has waited)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from engram.store import synced as store_synced


def _iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def sync_view(conn, uri: str) -> dict[str, Any] | None:
    synced = store_synced.get_synced_space(conn, uri)
    if synced is None:
        return None
    repos = []
    for state in store_synced.repo_states(conn, uri).values():
        repo: dict[str, Any] = {"did": state.repo, "failures": state.failures}
        for key, value in (
            ("rev", state.rev),
            ("lastSuccess", state.last_success),
            ("lastError", state.last_error),
            ("retryAfter", _iso(state.retry_after)),
        ):
            if value is not None:
                repo[key] = value
        repos.append(repo)
    view: dict[str, Any] = {"access": synced.access_kind, "repos": repos}
    for key, value in (
        ("spaceRev", synced.last_space_rev),
        ("lastFullSync", synced.last_full_sync),
        ("lastError", synced.last_error),
    ):
        if value is not None:
            view[key] = value
    return view
