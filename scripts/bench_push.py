"""Write -> searchable with push notifications over TLS on loopback (docs/benchmarks.md#push).

Two paths, each with the poll off (it ran once, at start-up), so every write travels by push:

- `host`: instance A hosts a space and instance B syncs it, registered for notifications. A write on A
  (`MemoryWrite` through A's services) -> A's notifyWrite to B over https -> B's pass (listRepoOps from A,
  verified against A's signed commit) -> the memory in B's searchMemories answer.
- `member`: a member's spaces-capable PDS (tests/support/fakes/member_pds.py) takes `createRecord`, pushes notifyWrite
  to engram, its space host, over https; engram pulls the member's repo from the PDS and indexes it -> the
  memory in engram's searchMemories answer.

The lag is measured from the write's acknowledgement (A's `write` returning / the PDS's createRecord answer)
to the first searchMemories answer that holds the memory, polled every `--probe-ms`. Writes are sequential,
one at a time, so each lag is the path's own, not a queue's. Bounded: `--writes` per path (default 40).

    .venv/bin/python scripts/bench_push.py --writes 40
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "tests")]

import aiohttp
import numpy as np
from aiohttp import web
from benchlib import load_average, pct
from fakes.did_server import FakeDidServer, random_plc_did
from fakes.member_pds import SpacesPds
from fakes.tls import LoopbackCA

from engram.app import create_app
from engram.app_keys import context_key
from engram.atrepo.blocks import b64encode
from engram.auth.credential import mint_space_credential
from engram.auth.crypto_keys import PrivateKey
from engram.auth.did_document import Service
from engram.auth.space_signature import sign_space_request
from engram.config import Settings
from engram.search.vectors import encode_query_vector
from engram.store import Embedding, MemoryWrite, ModelSpec

MODEL = ModelSpec("bench-model", "sha256:bench", 64)


def vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(MODEL.dims).astype(np.float32)
    return v / np.linalg.norm(v)


class Instance:
    def __init__(self, runner: web.AppRunner, url: str):
        self.runner, self.url = runner, url
        self.ctx = runner.app[context_key]


async def start(settings: Settings, ca: LoopbackCA) -> Instance:
    runner = web.AppRunner(await create_app(settings), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ca.server_context())
    await site.start()
    return Instance(runner, f"https://127.0.0.1:{site._server.sockets[0].getsockname()[1]}")


def settings_for(tmp: Path, name: str, plc: FakeDidServer, **changes) -> Settings:
    import ipaddress

    return replace(
        Settings(data_dir=tmp / name, service_did="did:web:bench.test", public_url="https://bench.test",
                 search_rate=0, load_wait_ms=600_000, plc_url=plc.url, dev=True, poll_interval=0,
                 outbound_allow=(ipaddress.ip_network("127.0.0.0/8"),), embedder="hashing"),
        **changes,
    )  # fmt: skip


async def searchable(http, base: str, space: str, headers: dict, seed: int, uri: str, probe: float) -> float:
    params = {"space": space, "vector": encode_query_vector(vector(seed)), "model": MODEL.model,
              "modelDigest": MODEL.digest, "limit": "5"}  # fmt: skip
    deadline = time.perf_counter() + 30
    while time.perf_counter() < deadline:
        async with http.get(f"{base}/xrpc/garden.engram.searchMemories", params=params, headers=headers) as r:
            if r.status == 200 and uri in {m["uri"] for m in (await r.json())["memories"]}:
                return time.perf_counter()
        await asyncio.sleep(probe)
    raise SystemExit(f"{uri} never became searchable")


async def host_path(tmp: Path, plc, ca, http, writes: int, probe: float) -> list[float]:
    a_key, a_did = PrivateKey.generate("ES256"), random_plc_did()
    a = await start(settings_for(tmp, "a", plc, service_did=a_did, signing_key=a_key.to_multibase()), ca)
    plc.register(a_did, a_key.public_key, {"#atproto_space_host": Service("AtprotoSpaceHost", a.url),
                                           "#atproto_pds": Service("AtprotoPersonalDataServer", a.url)})  # fmt: skip
    space = (await a.ctx.services.spaces.create_hosted("bench", model=MODEL)).uri
    pds = await SpacesPds(plc).start()
    reader = pds.add_account()
    await a.ctx.services.members.grant(space, reader.did)
    b_key, b_did = PrivateKey.generate("ES256"), random_plc_did()
    b = await start(settings_for(tmp, "b", plc, service_did=b_did, signing_key=b_key.to_multibase(),
                                 public_url="https://b.bench.test"), ca)  # fmt: skip
    plc.register(b_did, b_key.public_key, {"#atproto_space_syncer": Service("AtprotoSpaceSyncer", b.url)})
    try:
        await b.ctx.syncer.add_space(space, reader.did, reader.password)
        while space not in b.ctx.syncer.registered_until or not b.ctx.syncer.idle(space):
            await asyncio.sleep(0.01)
        holder = PrivateKey.generate("ES256")
        cred = mint_space_credential(a_key, issuer=a_did, space=space, holder_did_key=holder.public_key.did_key,
                                     ttl=3600)  # fmt: skip
        headers = sign_space_request(holder, cred, b_did)
        lags = []
        for i in range(writes):
            embedding = Embedding(MODEL.model, MODEL.digest, MODEL.dims, vector(i))
            (written,) = await a.ctx.services.memories.write(
                space, [MemoryWrite(author=a_did, text=f"memory number {i}", embedding=embedding)]
            )
            acked = time.perf_counter()
            lags.append(await searchable(http, b.url, space, headers, i, written.uri, probe) - acked)
        assert b.ctx.syncer.poll_ticks == 1, "a poll ran: the numbers would not be push alone"
        return lags
    finally:
        await pds.close()
        await b.runner.cleanup()
        await a.runner.cleanup()


async def member_path(tmp: Path, plc, ca, http, writes: int, probe: float) -> list[float]:
    engram = await start(settings_for(tmp, "host", plc), ca)
    did = engram.ctx.settings.service_did
    space = (await engram.ctx.services.spaces.create_hosted("garden", model=MODEL)).uri
    pds = await SpacesPds(plc, tls=(ca.server_context(), ca.client_context())).start()
    try:
        pds.trust_authority(engram.ctx.keyring.document(did), engram.url)
        member = pds.add_account()
        await engram.ctx.services.members.grant(space, member.did, write=True)
        async with http.post(f"{pds.url}/xrpc/com.atproto.server.createSession",
                             json={"identifier": member.did, "password": member.password}) as r:  # fmt: skip
            session = {"Authorization": f"Bearer {(await r.json())['accessJwt']}"}
        holder = PrivateKey.generate("ES256")
        cred = mint_space_credential(engram.ctx.keyring.private_key(did), issuer=did, space=space,
                                     holder_did_key=holder.public_key.did_key, ttl=3600)  # fmt: skip
        headers = sign_space_request(holder, cred, did)
        lags = []
        for i in range(writes):
            record = {"$type": "garden.engram.memory", "text": f"member memory {i}",
                      "createdAt": "2026-12-01T10:00:00.000Z",
                      "embedding": {"model": MODEL.model, "modelDigest": MODEL.digest, "dims": MODEL.dims,
                                    "encoding": "f16le",
                                    "vector": {"$bytes": b64encode(vector(1000 + i).astype("<f2").tobytes())}}}  # fmt: skip
            async with http.post(f"{pds.url}/xrpc/com.atproto.space.createRecord", headers=session,
                                 json={"space": space, "repo": member.did, "collection": "garden.engram.memory",
                                       "record": record}) as r:  # fmt: skip
                uri = (await r.json())["uri"]
            acked = time.perf_counter()
            lags.append(await searchable(http, engram.url, space, headers, 1000 + i, uri, probe) - acked)
        assert engram.ctx.syncer.poll_ticks == 1, "a poll ran: the numbers would not be push alone"
        return lags
    finally:
        await pds.close()
        await engram.runner.cleanup()


def report(name: str, lags: list[float]) -> None:
    ms = [x * 1000 for x in lags]
    print(f"{name:7s} n={len(ms)} p50={statistics.median(ms):.0f} ms p90={pct(ms, 90):.0f} ms "
          f"max={max(ms):.0f} ms")  # fmt: skip


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=40)
    parser.add_argument("--probe-ms", type=float, default=5.0)
    parser.add_argument("--path", choices=("host", "member", "both"), default="both")
    args = parser.parse_args()
    ca = LoopbackCA.create()
    ca.trust_in_this_process()
    plc = await FakeDidServer().start()
    print(f"load average before: {load_average()}")
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ca.client_context())) as http:
            with tempfile.TemporaryDirectory(prefix="engram-bench-push-") as tmp:
                if args.path in ("host", "both"):
                    report(
                        "host", await host_path(Path(tmp), plc, ca, http, args.writes, args.probe_ms / 1000)
                    )
                if args.path in ("member", "both"):
                    report(
                        "member",
                        await member_path(Path(tmp), plc, ca, http, args.writes, args.probe_ms / 1000),
                    )
    finally:
        await plc.close()
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    asyncio.run(main())
