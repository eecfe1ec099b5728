"""Sync counters, registered on the app's own Prometheus registry (engram/metrics.py)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter


class SyncMetrics:
    def __init__(self, registry: CollectorRegistry | None):
        registry = registry or CollectorRegistry()
        self.syncs = Counter(
            "engram_sync_repo_syncs_total",
            "Repo syncs by mode and outcome",
            ["mode", "outcome"],
            registry=registry,
        )
        self.ops = Counter("engram_sync_ops_total", "Repo ops applied from listRepoOps", registry=registry)
        self.verify_failures = Counter(
            "engram_sync_verification_failures_total",
            "Incremental syncs whose ops, commit or records did not verify",
            registry=registry,
        )
        self.fallbacks = Counter(
            "engram_sync_fallbacks_total",
            "Full getRepo exports after a failed incremental sync",
            registry=registry,
        )
        self.over_limit = Counter(
            "engram_index_over_limit_total", "Synced memories held back by a space limit", registry=registry
        )
        self.invalid_records = Counter(
            "engram_sync_invalid_records_total",
            "Synced memory records not indexed because they are not valid memories (bad text, tags, dates...)",
            registry=registry,
        )
        self.notifications = Counter(
            "engram_sync_notifications_total", "Accepted notifications by kind", ["kind"], registry=registry
        )
