"""Real `engram serve` nodes on loopback sharing one PostgreSQL store and one file:// index snapshot store
(each node has a data dir of its own), and the signed client calls the cluster tests make (admin writes,
reader searches)."""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import orjson
import psycopg

from engram.auth.admin_signature import sign_admin_request
from engram.auth.credential import mint_space_credential
from engram.auth.crypto_keys import PrivateKey
from engram.auth.identity import save_operator_key
from engram.auth.space_signature import sign_space_request
from engram.embed import load_embedder
from engram.search.vectors import encode_query_vector
from support.engram_process import free_port, start_engram, stop

PUBLIC_URL = "https://engram.test"  # every node: one public URL and DID, so any node verifies any signature
SERVICE_DID = "did:web:engram.test"
OPS_DID = "did:plc:clusteropsadmin000000000"
MODEL = "hashing-256"


@dataclass
class Node:
    proc: object
    port: int
    index: int
    metrics_port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def node_id(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass
class Cluster:
    root: Path
    database_url: str
    heartbeat_ms: int = 150
    lease_timeout_ms: int = 1500
    nodes: list[Node] = field(default_factory=list)

    def __post_init__(self):
        self.snapshots = self.root / "snapshots"
        self.snapshots.mkdir(parents=True, exist_ok=True)
        self.service_key = PrivateKey.generate("ES256")  # every node: engram's one DID and key
        self.ops_key = PrivateKey.generate("ES256")
        self.holder = PrivateKey.generate("ES256")
        self.embedder = load_embedder("hashing")
        self._metrics_ports: dict[int, int] = {}  # serving port -> its /metrics port

    def env(self, port: int) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
        data_dir = self.root / f"data-{port}"
        if not data_dir.exists():  # the operator's key, so every node verifies admin signatures offline
            save_operator_key(data_dir, OPS_DID, self.ops_key)
        return base | {
            "ENGRAM_DATA_DIR": str(data_dir),
            "ENGRAM_INDEX_STORE": self.snapshots.as_uri(),
            "ENGRAM_DATABASE_URL": self.database_url,
            "ENGRAM_NODE_URL": f"http://127.0.0.1:{port}",
            "ENGRAM_HEARTBEAT_MS": str(self.heartbeat_ms),
            "ENGRAM_LEASE_TIMEOUT_MS": str(self.lease_timeout_ms),
            "ENGRAM_PORT": str(port),
            "ENGRAM_PUBLIC_URL": PUBLIC_URL,
            "ENGRAM_SERVICE_DID": SERVICE_DID,
            "ENGRAM_SIGNING_KEY": self.service_key.to_multibase(),
            "ENGRAM_ADMIN_DIDS": OPS_DID,
            "ENGRAM_EMBEDDER": "hashing",
            "ENGRAM_SEARCH_RATE": "0",
            "ENGRAM_LOAD_WAIT_MS": "10000",
            "ENGRAM_LOG_LEVEL": "warning",
            "ENGRAM_METRICS_PORT": str(self._metrics_ports.setdefault(port, free_port())),
        }

    def start_node(self) -> Node:
        index = len(self.nodes)
        proc, port = start_engram(
            [sys.executable, "-m", "engram", "serve"], self.env, self.root / f"node{index}.log"
        )
        node = Node(proc, port, index, self._metrics_ports[port])
        self.nodes.append(node)
        return node

    def kill(self, node: Node) -> None:
        node.proc.send_signal(signal.SIGKILL)
        node.proc.wait()

    def stop_all(self) -> None:
        for node in self.nodes:
            if node.proc.poll() is None:
                stop(node.proc)

    async def metric(self, session: aiohttp.ClientSession, node: Node, name: str) -> float:
        """The sum of a metric's samples on `node`'s /metrics (0 when absent)."""
        async with session.get(f"http://127.0.0.1:{node.metrics_port}/metrics") as r:
            text = await r.text()
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith(name) and (line[len(name)] in " {")
        )

    # ----- the database's view ---------------------------------------------------------------------

    def lease_owners(self) -> dict[str, str]:
        """space -> node id of every valid lease."""
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            rows = conn.execute("SELECT space, owner FROM space_leases WHERE expires_at > clock_timestamp()")
            return dict(rows.fetchall())

    def live_nodes(self) -> set[str]:
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT node_id FROM cluster_nodes WHERE last_seen > clock_timestamp() - %s::interval",
                (f"{self.lease_timeout_ms} milliseconds",),
            )
            return {row[0] for row in rows.fetchall()}

    # ----- signed calls ----------------------------------------------------------------------------

    async def admin(
        self, session: aiohttp.ClientSession, node: Node, nsid: str, body: dict
    ) -> tuple[int, dict]:
        path = f"/xrpc/{nsid}"
        raw = orjson.dumps(body)
        headers = sign_admin_request(
            self.ops_key, OPS_DID, "POST", PUBLIC_URL + path, raw, {"Content-Type": "application/json"}
        )
        async with session.post(node.url + path, data=raw, headers=headers) as r:
            return r.status, await r.json()

    async def create_space(self, session, node: Node, name: str) -> str:
        status, body = await self.admin(session, node, "garden.engram.admin.createSpace", {"name": name})
        assert status == 200, body
        return body["space"]["uri"]

    async def write(self, session, node: Node, space: str, texts: list[str]) -> None:
        status, body = await self.admin(
            session,
            node,
            "garden.engram.admin.importMemories",
            {"space": space, "memories": [{"text": t} for t in texts]},
        )
        assert status == 200 and body["created"] == len(texts), body

    def reader_headers(self, space: str) -> dict[str, str]:
        token = mint_space_credential(
            self.service_key, issuer=SERVICE_DID, space=space, holder_did_key=self.holder.public_key.did_key
        )
        return sign_space_request(self.holder, token, SERVICE_DID)

    async def search(self, session, node: Node, space: str, text: str, limit: int = 1):
        vector = self.embedder.embed([text], "query")[0]
        params = {"space": space, "vector": encode_query_vector(vector), "model": MODEL, "limit": str(limit)}
        params["modelDigest"] = self.embedder.digest
        async with session.get(
            node.url + "/xrpc/garden.engram.searchMemories", params=params, headers=self.reader_headers(space)
        ) as r:
            return r.status, await r.json(), r.headers.get("X-Engram-Node")
