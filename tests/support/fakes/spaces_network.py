"""A fake AT Protocol spaces network on 127.0.0.1 with real cryptography, for engram's syncer.

- a PLC directory (`FakeDidServer`) serving each account's DID document;
- a PDS hosting the members' space repos: createSession / refreshSession, getDelegationToken (delegation
  JWTs signed with the member's key), listRepoOps, getRepo (CAR with a signed commit), getLatestCommit,
  getRecord. Repo reads require a space credential and an atproto-space signature whose audience is the
  repo owner;
- the authority's space host: getSpaceCredential (checks the delegation token and the exchange signature,
  mints a credential with the authority's key), listRepos, registerNotify; and `notify_write` /
  `notify_deleted`, which POST service-auth notifications signed by the authority to engram.

Commits, CIDs, LtHash and CARs come from engram.atrepo, which is pinned to the reference vectors; the
fake's own commits are checked against those vectors in tests/sync/test_fake_network.py.
Knobs for failure tests: `tamper` (per repo: "op", "sig", "cid"), `stall`, `garbage`, `garbage_ops` and
`throttle` (per repo DID).
"""

from __future__ import annotations

import asyncio
import secrets
import ssl
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from engram.atrepo.blocks import b64encode, cid_of_block, encode_block, from_json
from engram.atrepo.car import RepoRecord, write_repo_car
from engram.atrepo.commit import CommitContext, SignedCommit, sign_commit
from engram.atrepo.lthash import LtHash
from engram.auth.credential import mint_space_credential
from engram.auth.crypto_keys import PrivateKey
from engram.auth.did_document import DidDocument, Service
from engram.auth.jws import parse_jws, sign_jws
from engram.auth.reader import ReaderVerifier
from engram.auth.service_jwt import mint_service_jwt
from engram.auth.space_signature import verify_exchange_signature
from engram.errors import EngramError
from engram.store.tid import new_tid
from support.fakes.did_server import FakeDidServer, random_plc_did
from support.fakes.static_resolver import StaticResolver

MEMORY = "garden.engram.memory"


@dataclass
class Op:
    rev: str
    collection: str
    rkey: str
    cid: str | None
    prev: str | None


@dataclass
class Repo:
    records: dict[str, tuple[str, bytes]] = field(default_factory=dict)  # path -> (cid, block)
    values: dict[str, dict[str, Any]] = field(default_factory=dict)  # path -> the record as written (JSON)
    ops: list[Op] = field(default_factory=list)
    rev: str | None = None
    commit: SignedCommit | None = None

    def set_hash(self) -> LtHash:
        state = LtHash()
        for path, (cid, _) in self.records.items():
            state.add(f"{path}/{cid}")
        return state

    def put(self, collection: str, rkey: str, value: dict[str, Any]) -> tuple[str, tuple[str, bytes]]:
        """(path, (cid, block)) of a record as written; the value is served back as written (a decoded
        block cannot tell opaque bytes from links: atrepo.blocks)."""
        block = encode_block(from_json(value))
        self.values[f"{collection}/{rkey}"] = value
        return f"{collection}/{rkey}", (cid_of_block(block), block)

    def apply(
        self, space: str, did: str, key: PrivateKey, changes: list[tuple[str, str, tuple[str, bytes] | None]]
    ) -> str:
        """Apply (collection, rkey, (cid, block) or None to delete) changes in one signed commit; its rev."""
        rev = new_tid()
        for collection, rkey, new in changes:
            path = f"{collection}/{rkey}"
            old = self.records.get(path)
            if new is None:
                self.records.pop(path, None)
            else:
                self.records[path] = new
            self.ops.append(Op(rev, collection, rkey, new[0] if new else None, old[0] if old else None))
        self.rev = rev
        self.commit = sign_commit(self.set_hash().digest(), CommitContext(space, did, rev), key)
        return rev

    def ops_since(self, since: str) -> list[dict[str, Any]]:
        """listRepoOps entries after ``since``, each path's latest value inlined."""
        ops = [op for op in self.ops if op.rev > since]
        latest = {f"{op.collection}/{op.rkey}": i for i, op in enumerate(ops)}
        entries = []
        for i, op in enumerate(ops):
            entry = {
                "rev": op.rev,
                "collection": op.collection,
                "rkey": op.rkey,
                "cid": op.cid,
                "prev": op.prev,
            }
            path = f"{op.collection}/{op.rkey}"
            if op.cid is not None and latest[path] == i and path in self.records:
                entry["value"] = self.values[path]
            entries.append(entry)
        return entries

    def car(self) -> bytes:
        records = [RepoRecord(*path.split("/"), cid, block) for path, (cid, block) in self.records.items()]
        return write_repo_car(self.commit, records)


@dataclass
class Account:
    did: str
    key: PrivateKey
    password: str
    repo: Repo = field(default_factory=Repo)


class FakeServer:
    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self.app = web.Application()
        self.calls: Counter[str] = Counter()
        self.port = 0
        self._ssl = ssl_context  # served over TLS with it (tests/support/fakes/tls.py)
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        self._runner = web.AppRunner(self.app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self._ssl).start()
        self.port = self._runner.addresses[0][1]

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def url(self) -> str:
        return f"{'https' if self._ssl else 'http'}://127.0.0.1:{self.port}"


def xrpc_error(status: int, name: str, message: str = "") -> web.Response:
    return web.json_response({"error": name, "message": message or name}, status=status)


class SpacesNetwork:
    def __init__(self, skey: str = "team", plc: FakeDidServer | None = None) -> None:
        self._own_plc = plc is None
        self.plc = plc or FakeDidServer()
        self.pds = FakeServer()
        self.host = FakeServer()
        self.resolver = StaticResolver()
        self.authority = self._new_account()
        self.space = f"at://{self.authority.did}/space/garden.engram.space/{skey}"
        self.members: dict[str, Account] = {self.authority.did: self.authority}
        self.readers: set[str] = set()
        self.space_revs: dict[str, str] = {}  # repo -> spaceRev of its latest write
        self.last_space_rev: str | None = None
        self.credential_ttl = 600
        self.registrations: list[dict[str, Any]] = []
        self.deleted = False
        self.tamper: dict[str, str] = {}
        self.stall: set[str] = set()
        self.garbage: set[str] = set()
        self.garbage_ops: set[str] = set()  # repos whose listRepoOps alone answers garbage (getRepo works)
        self.throttle: dict[str, str] = {}  # repo DID -> the Retry-After of the 429 its requests get
        self.sessions: dict[str, str] = {}  # accessJwt -> did
        self.refresh_tokens: dict[str, str] = {}
        self.used_delegations: set[str] = set()
        self.credentials_minted = 0
        self.engram_url: str | None = None
        self.engram_did: str | None = None
        self._verifiers: dict[str, ReaderVerifier] = {}
        self._release = asyncio.Event()
        self._routes()

    # -- set-up -------------------------------------------------------------------------------------

    def _new_account(self) -> Account:
        return Account(random_plc_did(), PrivateKey.generate("ES256K"), secrets.token_urlsafe(12))

    def add_member(self, *, reader: bool = False) -> Account:
        account = self._new_account()
        self.members[account.did] = account
        if reader:
            self.readers.add(account.did)
        if self.pds.port:
            self._publish(account)
        return account

    def _publish(self, account: Account) -> None:
        services = {"#atproto_pds": Service("AtprotoPersonalDataServer", self.pds.url)}
        if account is self.authority:
            services["#atproto_space_host"] = Service("AtprotoSpaceHost", self.host.url)
        self.plc.register(account.did, account.key.public_key, services)
        self.resolver.docs[account.did] = DidDocument.build(
            account.did, {"#atproto": account.key.public_key}, services
        )

    async def start(self) -> SpacesNetwork:
        if self._own_plc:
            await self.plc.start()
        await self.pds.start()
        await self.host.start()
        for account in self.members.values():
            self._publish(account)
        return self

    async def close(self) -> None:
        self._release.set()
        for server in (self.host, self.pds, *([self.plc] if self._own_plc else [])):
            await server.close()

    # -- writing, as a member's PDS would -----------------------------------------------------------

    def put(self, member: Account, collection: str, rkey: str, value: dict[str, Any]) -> dict[str, Any]:
        _path, new = member.repo.put(collection, rkey, value)
        return self._commit(member, [(collection, rkey, new)])

    def delete(self, member: Account, collection: str, rkey: str) -> dict[str, Any]:
        return self._commit(member, [(collection, rkey, None)])

    def _commit(
        self, member: Account, changes: list[tuple[str, str, tuple[str, bytes] | None]]
    ) -> dict[str, Any]:
        repo = member.repo
        rev = repo.apply(self.space, member.did, member.key, changes)
        prev = self.last_space_rev
        space_rev = new_tid()
        self.space_revs[member.did] = space_rev
        self.last_space_rev = space_rev
        notification = {
            "space": self.space,
            "repo": member.did,
            "repoRev": rev,
            "hash": {"$bytes": b64encode(repo.commit.hash)},
            "spaceRev": space_rev,
        }
        if prev is not None:
            notification["prevSpaceRev"] = prev
        return notification

    # -- pushing to engram --------------------------------------------------------------------------

    def service_jwt(
        self, lxm: str, *, key: PrivateKey | None = None, iss: str | None = None, aud: str | None = None
    ) -> str:
        return mint_service_jwt(
            key or self.authority.key,
            iss=iss or self.authority.did,
            aud=aud or f"{self.engram_did}#atproto_space_syncer",
            lxm=lxm,
        )

    async def post_to_engram(self, session, nsid: str, body: dict[str, Any], token: str | None = None):
        token = token or self.service_jwt(nsid)
        async with session.post(
            f"{self.engram_url}/xrpc/{nsid}", json=body, headers={"Authorization": f"Bearer {token}"}
        ) as resp:
            body = await resp.read()
            return resp.status, (orjson.loads(body) if body else None)

    def reader_credential(self, holder: PrivateKey) -> str:
        return mint_space_credential(
            self.authority.key,
            issuer=self.authority.did,
            space=self.space,
            holder_did_key=holder.public_key.did_key,
        )

    # -- routes -------------------------------------------------------------------------------------

    def _routes(self) -> None:
        pds = self.pds.app.router
        pds.add_post("/xrpc/com.atproto.server.createSession", self._create_session)
        pds.add_post("/xrpc/com.atproto.server.refreshSession", self._refresh_session)
        pds.add_get("/xrpc/com.atproto.space.getDelegationToken", self._delegation_token)
        pds.add_get("/xrpc/com.atproto.space.listRepoOps", self._list_repo_ops)
        pds.add_get("/xrpc/com.atproto.space.getRepo", self._get_repo)
        pds.add_get("/xrpc/com.atproto.space.getLatestCommit", self._latest_commit)
        pds.add_get("/xrpc/com.atproto.space.getRecord", self._get_record)
        host = self.host.app.router
        host.add_post("/xrpc/com.atproto.space.getSpaceCredential", self._space_credential)
        host.add_get("/xrpc/com.atproto.space.listRepos", self._list_repos)
        host.add_post("/xrpc/com.atproto.space.registerNotify", self._register_notify)

    async def _create_session(self, request: web.Request) -> web.Response:
        self.pds.calls["createSession"] += 1
        body = await request.json()
        account = self.members.get(body.get("identifier"))
        if account is None or body.get("password") != account.password:
            return xrpc_error(401, "AuthenticationRequired", "bad identifier or password")
        return web.json_response(self._new_session(account.did))

    def _new_session(self, did: str) -> dict[str, str]:
        access, refresh = secrets.token_hex(16), secrets.token_hex(16)
        self.sessions[access] = did
        self.refresh_tokens[refresh] = did
        return {"did": did, "accessJwt": access, "refreshJwt": refresh}

    async def _refresh_session(self, request: web.Request) -> web.Response:
        self.pds.calls["refreshSession"] += 1
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        did = self.refresh_tokens.pop(token, None)
        if did is None:
            return xrpc_error(400, "ExpiredToken")
        return web.json_response(self._new_session(did))

    def expire_sessions(self) -> None:
        self.sessions.clear()

    async def _delegation_token(self, request: web.Request) -> web.Response:
        self.pds.calls["getDelegationToken"] += 1
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        did = self.sessions.get(token)
        if did is None:
            return xrpc_error(400, "ExpiredToken")
        space = request.query.get("space", "")
        now = int(time.time())
        payload = {
            "iss": did,
            "sub": space,
            "aud": f"{self.authority.did}#atproto_space_host",
            "iat": now,
            "exp": now + 60,
            "jti": secrets.token_hex(16),
        }
        jwt = sign_jws(
            self.members[did].key, {"typ": "atproto-space-delegation+jwt", "kid": "#atproto"}, payload
        )
        return web.json_response({"token": jwt})

    async def _space_credential(self, request: web.Request) -> web.Response:
        self.host.calls["getSpaceCredential"] += 1
        if self.deleted:
            return xrpc_error(400, "SpaceDeleted")
        try:
            holder = verify_exchange_signature(request.headers)
        except EngramError as e:
            return xrpc_error(401, "BadSpaceSignature", e.message)
        body = await request.json()
        jws = parse_jws(request.headers["Authorization"].removeprefix("Bearer "))
        claims = jws.payload
        member = self.members.get(claims.get("iss"))
        valid = (
            member is not None
            and jws.header.get("typ") == "atproto-space-delegation+jwt"
            and member.key.public_key.verify(jws.signing_input, jws.signature, strict_low_s=True)
            and claims.get("aud") == f"{self.authority.did}#atproto_space_host"
            and claims.get("sub") == body.get("space") == self.space
            and claims["exp"] > time.time()
            and claims["jti"] not in self.used_delegations
        )
        if not valid:
            return xrpc_error(400, "InvalidDelegationToken")
        self.used_delegations.add(claims["jti"])
        if member.did not in self.readers and member is not self.authority:
            return xrpc_error(403, "UserNotAuthorized")
        self.credentials_minted += 1
        credential = mint_space_credential(
            self.authority.key,
            issuer=self.authority.did,
            space=self.space,
            holder_did_key=holder.did_key,
            ttl=self.credential_ttl,
        )
        return web.json_response({"credential": credential})

    async def _check_reader(self, request: web.Request, audience: str) -> web.Response | None:
        if request.headers.get("Atproto-Space-Audience") != audience:
            return xrpc_error(401, "BadSpaceAudience")
        verifier = self._verifiers.setdefault(audience, ReaderVerifier(audience, self.resolver))
        try:
            await verifier.verify(request.headers, self.space)
        except EngramError as e:
            return xrpc_error(401, e.name, e.message)
        space = (
            (await request.json()).get("space") if request.method == "POST" else request.query.get("space")
        )
        if space != self.space:
            return xrpc_error(400, "SpaceNotFound")
        return None

    async def _list_repos(self, request: web.Request) -> web.Response:
        self.host.calls["listRepos"] += 1
        refused = await self._check_reader(request, self.authority.did)
        if refused is not None:
            return refused
        if self.deleted:
            return xrpc_error(400, "SpaceDeleted")
        cursor = request.query.get("cursor", "")
        limit = int(request.query.get("limit", "100"))
        entries = sorted((rev, did) for did, rev in self.space_revs.items() if rev > cursor)[:limit]
        repos = [
            {
                "did": did,
                "repoRev": self.members[did].repo.rev,
                "hash": {"$bytes": b64encode(self.members[did].repo.commit.hash)},
                "spaceRev": rev,
            }
            for rev, did in entries
        ]
        return web.json_response({"repos": repos, **({"cursor": entries[-1][0]} if entries else {})})

    async def _register_notify(self, request: web.Request) -> web.Response:
        self.host.calls["registerNotify"] += 1
        refused = await self._check_reader(request, self.authority.did)
        if refused is not None:
            return refused
        body = await request.json()
        self.registrations.append(body)
        expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 86400))
        return web.json_response({"expiresAt": expires})

    async def _repo_request(
        self, request: web.Request, name: str
    ) -> tuple[Account | None, web.Response | None]:
        self.pds.calls[name] += 1
        did = request.query.get("repo", "")
        if did in self.stall:
            await self._release.wait()  # answers nothing until the network closes
        if did in self.garbage:
            return None, web.Response(body=b"\x00not json at all", content_type="application/json")
        if did in self.throttle:
            answer = xrpc_error(429, "RateLimitExceeded")
            answer.headers["Retry-After"] = self.throttle[did]
            return None, answer
        refused = await self._check_reader(request, did)
        if refused is not None:
            return None, refused
        account = self.members.get(did)
        if account is None or account.repo.commit is None:
            return None, xrpc_error(400, "RepoNotFound")
        return account, None

    async def _list_repo_ops(self, request: web.Request) -> web.Response:
        account, refused = await self._repo_request(request, "listRepoOps")
        if refused is not None:
            return refused
        if account.did in self.garbage_ops:
            return web.Response(body=b"[[[not an oplog", content_type="application/json")
        repo = account.repo
        entries = repo.ops_since(request.query.get("since", ""))
        commit = repo.commit.to_json()
        mode = self.tamper.get(account.did)
        if mode == "op" and entries:
            entries.append(
                {**entries[-1], "rkey": "3zzzzzzzzzzzz", "prev": None}
            )  # an op the commit never made
        elif mode == "sig":
            sig = bytearray(repo.commit.sig)
            sig[5] ^= 1
            commit["sig"] = {"$bytes": b64encode(bytes(sig))}
        elif mode == "cid":
            for entry in entries:
                if "value" in entry:
                    entry["value"] = {**entry["value"], "text": entry["value"]["text"] + " (altered)"}
        return web.json_response({"ops": entries, "commit": commit})

    async def _get_repo(self, request: web.Request) -> web.Response:
        account, refused = await self._repo_request(request, "getRepo")
        if refused is not None:
            return refused
        return web.Response(body=account.repo.car(), content_type="application/vnd.ipld.car")

    async def _latest_commit(self, request: web.Request) -> web.Response:
        account, refused = await self._repo_request(request, "getLatestCommit")
        if refused is not None:
            return refused
        return web.json_response({"commit": account.repo.commit.to_json()})

    async def _get_record(self, request: web.Request) -> web.Response:
        account, refused = await self._repo_request(request, "getRecord")
        if refused is not None:
            return refused
        path = f"{request.query.get('collection')}/{request.query.get('rkey')}"
        record = account.repo.records.get(path)
        if record is None:
            return xrpc_error(400, "RecordNotFound")
        return web.json_response(
            {
                "uri": f"{self.space}/{account.did}/{path}",
                "cid": record[0],
                "value": account.repo.values[path],
            }
        )
