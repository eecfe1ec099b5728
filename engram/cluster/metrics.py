"""The cluster's Prometheus series, on the app's own registry (engram/metrics.py serves it)."""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge


class ClusterMetrics:
    def __init__(self, registry: CollectorRegistry | None, spaces_owned: Callable[[], int]):
        registry = registry if registry is not None else CollectorRegistry()
        self.owned = Gauge(
            "engram_cluster_spaces_owned", "Spaces whose lease this node holds", registry=registry
        )
        self.owned.set_function(spaces_owned)
        self.live_nodes = Gauge(
            "engram_cluster_live_nodes", "Nodes with a recent heartbeat", registry=registry
        )
        self.lease_changes = Counter(
            "engram_cluster_lease_changes_total",
            "Leases this node acquired, handed over (a new node hashes higher) or lost (taken after expiry)",
            ["change"],
            registry=registry,
        )
        self.forwards = Counter(
            "engram_cluster_forwards_total",
            "Requests forwarded to the owning node",
            ["method"],
            registry=registry,
        )
        self.forward_failures = Counter(
            "engram_cluster_forward_failures_total", "Forwards whose owner did not answer", registry=registry
        )
        self.write_notifications = Counter(
            "engram_cluster_write_notifications_total",
            "Write notifications (LISTEN) for spaces this node owns",
            registry=registry,
        )
        self.heartbeat_failures = Counter(
            "engram_cluster_heartbeat_failures_total",
            "Heartbeats that could not reach PostgreSQL",
            registry=registry,
        )
