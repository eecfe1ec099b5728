"""docker-compose.yml: PostgreSQL, two engram nodes and an S3-compatible store, configured so that each node
starts in cluster mode with settings engram accepts."""

from pathlib import Path

import yaml

from engram.config import read_env

COMPOSE = Path(__file__).resolve().parents[2] / "docker-compose.yml"


def test_two_nodes_share_the_store_snapshots_and_identity_and_differ_in_their_urls():
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    assert {"postgres", "minio", "engram1", "engram2"} <= set(services)
    settings = []
    for name in ("engram1", "engram2"):
        env = {k: str(v) for k, v in services[name]["environment"].items()}
        env["ENGRAM_SIGNING_KEY"] = ""  # supplied by the operator's shell (${ENGRAM_SIGNING_KEY:?...})
        settings.append(read_env({k: v for k, v in env.items() if k.startswith("ENGRAM_")}))
    a, b = settings
    assert a.cluster and b.cluster
    assert a.node_url != b.node_url and a.node_id != b.node_id
    assert (a.database_url, a.index_store, a.public_url, a.service_did) == (
        b.database_url,
        b.index_store,
        b.public_url,
        b.service_did,
    )
    assert a.database_url.split("@")[1].startswith("postgres:")  # the compose service, not localhost
