"""Cluster numbers in one run (docs/benchmarks.md#cluster-scriptsbench_clusterpy): engram nodes as real `engram serve` processes
on loopback over one PostgreSQL (started from the machine's binaries, tests/support/postgres_server.py) and one
file:// index snapshot store, launched the way the cluster tests launch them (tests/support/cluster.py).

1. Search throughput, 1 node vs 2 nodes, over `--spaces` spaces of `--n` memories (d=384, exact index) spread
   over both nodes by rendezvous hashing: `--concurrency` signed vector searches in flight for `--seconds`,
   (a) each sent to the space's owner, (b) each sent to a node in turn (half are forwarded: what a load
   balancer in front of the nodes gives).
2. Forwarding cost at c=1, interleaved rounds: searches sent to the owner, the same searches sent to the
   other node (forwarded), and one loopback round trip (`/xrpc/_health` of the other node).
3. Failover: a space of `--failover-n` memories (`--big`: 100,000) is served and snapshotted by its owner,
   the owner is killed with SIGKILL, and the time until the first successful search through the survivor is
   taken (split into: until the survivor holds the lease, and the rest: loading the snapshot + delta).

    .venv/bin/python scripts/bench_cluster.py            # quick: 20k-memory failover space
    .venv/bin/python scripts/bench_cluster.py --big      # the 100k failover space
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "tests")]

import aiohttp
import numpy as np
from benchlib import interleave, latent, load_average
from support.cluster import PUBLIC_URL, SERVICE_DID, Cluster
from support.postgres_server import PostgresServer, find_binaries

from engram.cluster import rendezvous
from engram.config import Settings
from engram.lifecycle import open_context
from engram.search.vectors import encode_query_vector
from engram.store import Embedding, MemoryWrite, ModelSpec

SPEC = ModelSpec("bench-cluster", "sha256:bench-cluster", 384)


async def seed(cluster: Cluster, names: list[str], sizes: list[int]) -> list[str]:
    settings = Settings(
        data_dir=cluster.root / "seed",
        service_did=SERVICE_DID,
        public_url=PUBLIC_URL,
        signing_key=cluster.service_key.to_multibase(),
        database_url=cluster.database_url,
        search_rate=0,
    )
    uris = []
    async with open_context(settings, embedder=False) as ctx:
        for seed_no, (name, n) in enumerate(zip(names, sizes, strict=True)):
            uri = (await ctx.services.spaces.create_hosted(name, model=SPEC)).uri
            vectors = latent(n, SPEC.dims, seed_no)
            for start in range(0, n, 5000):
                batch = [
                    MemoryWrite(
                        author=SERVICE_DID,
                        text=f"{name} memory {start + i}",
                        created_at="2026-01-01T00:00:00.000Z",
                        embedding=Embedding(SPEC.model, SPEC.digest, SPEC.dims, v.astype(np.float16)),
                    )
                    for i, v in enumerate(vectors[start : start + 5000])
                ]
                await ctx.services.memories.write(uri, batch)
            uris.append(uri)
            print(f"  seeded {name}: {n}", file=sys.stderr)
    return uris


class Client:
    def __init__(self, cluster: Cluster, session: aiohttp.ClientSession, spaces: list[str]):
        self.cluster, self.session = cluster, session
        self.headers = {s: cluster.reader_headers(s) for s in spaces}
        queries = latent(256, SPEC.dims, 999)
        self.encoded = [encode_query_vector(q) for q in queries]

    async def search(self, url: str, space: str, i: int) -> None:
        params = {
            "space": space,
            "vector": self.encoded[i % len(self.encoded)],
            "model": SPEC.model,
            "modelDigest": SPEC.digest,
            "limit": "10",
        }
        async with self.session.get(
            url + "/xrpc/garden.engram.searchMemories", params=params, headers=self.headers[space]
        ) as r:
            await r.read()
            if r.status != 200:
                raise RuntimeError(f"search answered {r.status}")

    async def health(self, url: str) -> None:
        async with self.session.get(url + "/xrpc/_health") as r:
            await r.read()

    async def qps(self, targets: list[tuple[str, str]], seconds: float, concurrency: int) -> float:
        """Searches per second with `concurrency` in flight, cycling through (node url, space) targets."""
        done = 0
        stop = time.perf_counter() + seconds

        async def worker(w: int) -> None:
            nonlocal done
            i = w
            while time.perf_counter() < stop:
                url, space = targets[i % len(targets)]
                await self.search(url, space, i)
                done += 1
                i += concurrency

        started = time.perf_counter()
        await asyncio.gather(*(worker(w) for w in range(concurrency)))
        return done / (time.perf_counter() - started)


async def until(condition, bound_s: float = 300.0, every: float = 0.02):
    deadline = time.monotonic() + bound_s
    while not await condition():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not reached")
        await asyncio.sleep(every)


async def run(args) -> dict:
    bin_dir = find_binaries()
    if bin_dir is None:
        raise SystemExit("PostgreSQL binaries (initdb, pg_ctl) not found")
    server = PostgresServer(bin_dir).start()
    try:
        with tempfile.TemporaryDirectory(prefix="engram-bench-cluster-") as tmp:
            cluster = Cluster(Path(tmp), server.create_database(), args.heartbeat_ms, args.lease_ms)
            try:
                return await measure(cluster, args)
            finally:
                cluster.stop_all()
    finally:
        server.stop()


async def measure(cluster: Cluster, args) -> dict:
    names = [f"load-{i}" for i in range(args.spaces)] + ["failover"]
    sizes = [args.n] * args.spaces + [args.failover_n]
    uris = await seed(cluster, names, sizes)
    spaces, failover = uris[:-1], uris[-1]
    out: dict = {"load_average_before": load_average(), "spaces": args.spaces, "n": args.n}
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        client = Client(cluster, session, uris)
        first = cluster.start_node()
        for space in spaces:  # warm: one node holds and has loaded every space
            await client.search(first.url, space, 0)
        one = await client.qps([(first.url, s) for s in spaces], args.seconds, args.concurrency)
        second = cluster.start_node()
        ids = [first.node_id, second.node_id]
        wanted = {s: rendezvous.owner(s, ids) for s in spaces}

        async def settled():
            return {s: o for s, o in cluster.lease_owners().items() if s in wanted} == wanted

        for space in spaces:
            await client.search(second.url, space, 0)
        await until(settled)
        for space in spaces:  # every owner has its spaces loaded again before measuring
            await client.search(first.url, space, 0)
        url_of = {first.node_id: first.url, second.node_id: second.url}
        to_owner = [(url_of[wanted[s]], s) for s in spaces]
        to_any = [(n.url, s) for s in spaces for n in (first, second)]
        two_owner = await client.qps(to_owner, args.seconds, args.concurrency)
        two_any = await client.qps(to_any, args.seconds, args.concurrency)
        per_node = {n: sum(1 for o in wanted.values() if o == n) for n in ids}
        out["throughput"] = {
            "one_node_qps": round(one, 1),
            "two_nodes_to_owner_qps": round(two_owner, 1),
            "two_nodes_to_any_node_qps": round(two_any, 1),
            "ratio_to_owner": round(two_owner / one, 2),
            "ratio_to_any_node": round(two_any / one, 2),
            "spaces_per_node": per_node,
            "concurrency": args.concurrency,
        }
        print(f"  throughput: {out['throughput']}", file=sys.stderr)

        space = spaces[0]
        owner = first if wanted[space] == first.node_id else second
        other = second if owner is first else first
        latency = await interleave(
            args.rounds,
            args.count,
            owner=lambda i: client.search(owner.url, space, i),
            forwarded=lambda i: client.search(other.url, space, i),
            round_trip=lambda i: client.health(other.url),
        )
        owner_p50, fwd_p50, rtt_p50 = (latency[k]["p50_ms"] for k in ("owner", "forwarded", "round_trip"))
        out["forwarding"] = {
            "owner_p50_ms": round(owner_p50, 3),
            "forwarded_p50_ms": round(fwd_p50, 3),
            "loopback_round_trip_p50_ms": round(rtt_p50, 3),
            "forwarded_over_owner": round(fwd_p50 / owner_p50, 2),
            "bound_1_3x_plus_rtt_ms": round(1.3 * owner_p50 + rtt_p50, 3),
            "within_bound": fwd_p50 <= 1.3 * owner_p50 + rtt_p50,
        }
        print(f"  forwarding: {out['forwarding']}", file=sys.stderr)

        out["failover"] = await failover_run(cluster, client, failover, [first, second], args)
        print(f"  failover: {out['failover']}", file=sys.stderr)
    out["load_average_after"] = load_average()
    return out


async def failover_run(cluster: Cluster, client: Client, space: str, nodes, args) -> dict:
    owner_id = rendezvous.owner(space, [n.node_id for n in nodes])
    owner = next(n for n in nodes if n.node_id == owner_id)
    survivor = next(n for n in nodes if n is not owner)
    started = time.perf_counter()
    await client.search(owner.url, space, 0)  # the owner loads (builds) the index ...
    first_load_s = time.perf_counter() - started

    async def snapshotted():  # ... and uploads its snapshot in the background
        return any(cluster.snapshots.rglob("*.idx"))

    await until(snapshotted)
    cluster.kill(owner)
    killed = time.perf_counter()
    lease_moved = None

    async def served():
        nonlocal lease_moved
        if lease_moved is None and cluster.lease_owners().get(space) == survivor.node_id:
            lease_moved = time.perf_counter() - killed
        try:
            await client.search(survivor.url, space, 1)
        except (RuntimeError, aiohttp.ClientError):
            return False
        return True

    await until(served, every=0.05)
    total = time.perf_counter() - killed
    return {
        "memories": args.failover_n,
        "heartbeat_ms": args.heartbeat_ms,
        "lease_timeout_ms": args.lease_ms,
        "owner_first_load_s": round(first_load_s, 2),
        "kill_to_first_search_s": round(total, 2),
        "kill_to_lease_moved_s": round(lease_moved, 2) if lease_moved is not None else None,
        "lease_to_first_search_s": round(total - lease_moved, 2) if lease_moved is not None else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spaces", type=int, default=8)
    parser.add_argument("--n", type=int, default=5000, help="memories per throughput space")
    parser.add_argument("--failover-n", type=int, default=20_000)
    parser.add_argument("--big", action="store_true", help="a 100,000-memory failover space")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--heartbeat-ms", type=int, default=500)
    parser.add_argument("--lease-ms", type=int, default=3000)
    args = parser.parse_args()
    if args.big:
        args.failover_n = 100_000
    print(json.dumps(asyncio.run(run(args)), indent=2))


if __name__ == "__main__":
    main()
