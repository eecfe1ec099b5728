"""A spaces-capable member PDS on loopback, with real cryptography: what a member's own PDS does for a space
someone else hosts (docs/space-host.md#members-repos).

- accounts sign in with a password (`createSession`); `getDelegationToken` mints spaces delegation JWTs with
  the member's key;
- `com.atproto.space.createRecord` / `putRecord` / `deleteRecord` (the member's session; `repo` must be the
  member) write the member's repo in the space: one commit signed with the member's key per write, then a
  `notifyWrite {space, repo, repoRev, hash}` to the space host, with the member's service auth, in the
  background as a PDS does (`lose_pushes` drops them: the space host must find the write by polling;
  `forge` signs an account's commits with a key its DID document does not publish);
- `listRecords` for the member's own session; `listRepoOps`, `getRepo`, `getLatestCommit`, `getRecord` for a
  space credential signed by the space's authority, addressed to the repo owner (as the reference requires).

A real PDS finds the space host from the authority's DID document (`#atproto_space_host`); the tests name
its URL in `space_hosts` (an https URL over the test CA for the TLS tests). Call shapes follow the reference
lexicons (docs/compat.md#engram-garden-client).
"""

from __future__ import annotations

import asyncio
import secrets
import ssl
import time
from dataclasses import dataclass, field

import aiohttp
from aiohttp import web

from engram.atrepo.blocks import b64encode
from engram.auth.crypto_keys import PrivateKey
from engram.auth.did_document import DidDocument, Service
from engram.auth.jws import sign_jws
from engram.auth.reader import ReaderVerifier
from engram.auth.service_jwt import mint_service_jwt
from engram.errors import EngramError
from engram.store.tid import new_tid
from support.fakes.did_server import FakeDidServer, random_plc_did
from support.fakes.spaces_network import FakeServer, Repo, xrpc_error
from support.fakes.static_resolver import StaticResolver

NOTIFY = "com.atproto.space.notifyWrite"


@dataclass
class PdsAccount:
    did: str
    key: PrivateKey
    password: str
    repos: dict[str, Repo] = field(default_factory=dict)  # space URI -> the member's repo in it


class SpacesPds:
    def __init__(
        self, plc: FakeDidServer, *, tls: tuple[ssl.SSLContext, ssl.SSLContext] | None = None
    ) -> None:
        """``tls``: (server context, client context): serve https and push over https trusting the test CA."""
        self.plc = plc
        self.server = FakeServer(tls[0] if tls else None)
        self.accounts: dict[str, PdsAccount] = {}
        self.sessions: dict[str, str] = {}  # accessJwt -> did
        self.space_hosts: dict[str, str] = {}  # authority DID -> its space host's URL
        self.resolver = StaticResolver()  # the authorities' documents, to verify their credentials
        self.lose_pushes = False
        self.forge: set[str] = set()  # accounts whose commits are signed with a key not in their DID document
        self.pushes: list[int | str] = []  # the space host's answer to each notifyWrite sent
        self._ssl = tls[1] if tls else None  # trusts the test CA when the space host is https
        self._http: aiohttp.ClientSession | None = None
        self._tasks: set[asyncio.Task] = set()
        self._verifiers: dict[str, ReaderVerifier] = {}
        router = self.server.app.router
        router.add_post("/xrpc/com.atproto.server.createSession", self._create_session)
        router.add_get("/xrpc/com.atproto.space.getDelegationToken", self._delegation_token)
        for nsid in ("createRecord", "putRecord", "deleteRecord"):
            router.add_post(f"/xrpc/com.atproto.space.{nsid}", self._write)
        router.add_get("/xrpc/com.atproto.space.listRecords", self._list_records)
        router.add_get("/xrpc/com.atproto.space.listRepoOps", self._list_repo_ops)
        router.add_get("/xrpc/com.atproto.space.getRepo", self._get_repo)
        router.add_get("/xrpc/com.atproto.space.getLatestCommit", self._latest_commit)
        router.add_get("/xrpc/com.atproto.space.getRecord", self._get_record)

    @property
    def url(self) -> str:
        return self.server.url

    async def start(self) -> SpacesPds:
        await self.server.start()
        self._http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=self._ssl or True))
        return self

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._http is not None:
            await self._http.close()
        await self.server.close()

    def add_account(self) -> PdsAccount:
        """A did:plc account hosted here, published by the fake PLC directory."""
        account = PdsAccount(random_plc_did(), PrivateKey.generate("ES256K"), secrets.token_urlsafe(12))
        self.accounts[account.did] = account
        self.plc.register(
            account.did,
            account.key.public_key,
            {"#atproto_pds": Service("AtprotoPersonalDataServer", self.url)},
        )
        return account

    def trust_authority(self, document: DidDocument, space_host_url: str) -> None:
        self.resolver.docs[document.id] = document
        self.space_hosts[document.id] = space_host_url.rstrip("/")

    async def settled(self) -> None:
        """Wait for the pushes in flight."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    # -- sessions and tokens ------------------------------------------------------------------------

    async def _create_session(self, request: web.Request) -> web.Response:
        body = await request.json()
        account = self.accounts.get(body.get("identifier"))
        if account is None or body.get("password") != account.password:
            return xrpc_error(401, "AuthenticationRequired", "bad identifier or password")
        access = secrets.token_hex(16)
        self.sessions[access] = account.did
        return web.json_response(
            {"did": account.did, "accessJwt": access, "refreshJwt": secrets.token_hex(16)}
        )

    def _session(self, request: web.Request) -> PdsAccount | None:
        did = self.sessions.get(request.headers.get("Authorization", "").removeprefix("Bearer "))
        return self.accounts.get(did) if did else None

    async def _delegation_token(self, request: web.Request) -> web.Response:
        account = self._session(request)
        if account is None:
            return xrpc_error(401, "AuthRequired")
        space = request.query.get("space", "")
        now = int(time.time())
        claims = {"iss": account.did, "sub": space, "aud": f"{space.split('/')[2]}#atproto_space_host",
                  "iat": now, "exp": now + 60, "jti": secrets.token_hex(16)}  # fmt: skip
        token = sign_jws(account.key, {"typ": "atproto-space-delegation+jwt", "kid": "#atproto"}, claims)
        return web.json_response({"token": token})

    # -- writes: the member's own repo in the space -------------------------------------------------

    async def _write(self, request: web.Request) -> web.Response:
        nsid = request.path.rsplit(".", 1)[1]
        account = self._session(request)
        if account is None:
            return xrpc_error(401, "AuthRequired")
        body = await request.json()
        space, collection = body.get("space"), body.get("collection")
        if body.get("repo", account.did) != account.did:
            return xrpc_error(403, "Forbidden", "a member writes only its own repo")
        if not isinstance(space, str) or space.split("/")[2] not in self.space_hosts:
            return xrpc_error(400, "SpaceNotFound")
        if not isinstance(collection, str):
            return xrpc_error(400, "InvalidRequest", "collection is required")
        rkey = body.get("rkey") or new_tid()
        repo = account.repos.setdefault(space, Repo())
        path = f"{collection}/{rkey}"
        if nsid == "deleteRecord":
            if path not in repo.records:
                return web.json_response({})
            change = None
        else:
            record = body.get("record")
            if not isinstance(record, dict) or "$type" not in record:
                return xrpc_error(400, "InvalidRequest", "the record must carry $type")
            if nsid == "createRecord" and path in repo.records:
                return xrpc_error(400, "InvalidRequest", "the record exists")
            _, change = repo.put(collection, rkey, record)
        key = PrivateKey.generate("ES256K") if account.did in self.forge else account.key
        repo.apply(space, account.did, key, [(collection, rkey, change)])
        self._push(account, space, repo)
        if change is None:
            return web.json_response({})
        return web.json_response({"uri": f"{space}/{account.did}/{path}", "cid": change[0]})

    def _push(self, account: PdsAccount, space: str, repo: Repo) -> None:
        if self.lose_pushes:
            self.pushes.append("lost")
            return
        task = asyncio.get_running_loop().create_task(
            self._notify(account, space, repo.rev, repo.commit.hash)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _notify(self, account: PdsAccount, space: str, rev: str, digest: bytes) -> None:
        authority = space.split("/")[2]
        token = mint_service_jwt(
            account.key, iss=account.did, aud=f"{authority}#atproto_space_host", lxm=NOTIFY
        )
        body = {"space": space, "repo": account.did, "repoRev": rev, "hash": {"$bytes": b64encode(digest)}}
        try:
            async with self._http.post(
                f"{self.space_hosts[authority]}/xrpc/{NOTIFY}", json=body,
                headers={"Authorization": f"Bearer {token}"},
            ) as resp:  # fmt: skip
                self.pushes.append(resp.status)
        except aiohttp.ClientError as exc:
            self.pushes.append(type(exc).__name__)

    # -- reads --------------------------------------------------------------------------------------

    async def _list_records(self, request: web.Request) -> web.Response:
        account = self._session(request)
        if account is None or request.query.get("repo", account.did) != account.did:
            return xrpc_error(401, "AuthRequired")
        repo = account.repos.get(request.query.get("space", ""), Repo())
        collection = request.query.get("collection")
        space = request.query.get("space")
        records = [
            {"uri": f"{space}/{account.did}/{path}", "cid": cid, "value": repo.values[path]}
            for path, (cid, _) in sorted(repo.records.items())
            if collection is None or path.split("/")[0] == collection
        ]
        return web.json_response({"records": records})

    async def _credentialed(self, request: web.Request) -> tuple[Repo | None, web.Response | None]:
        """A space credential from the space's authority, signed by its holder, addressed to the repo."""
        did, space = request.query.get("repo", ""), request.query.get("space", "")
        verifier = self._verifiers.setdefault(did, ReaderVerifier(did, self.resolver))
        try:
            await verifier.verify(request.headers, space)
        except EngramError as e:
            return None, xrpc_error(401, e.name, e.message)
        account = self.accounts.get(did)
        repo = account.repos.get(space) if account is not None else None
        if repo is None or repo.commit is None:
            return None, xrpc_error(400, "RepoNotFound")
        return repo, None

    async def _list_repo_ops(self, request: web.Request) -> web.Response:
        repo, refused = await self._credentialed(request)
        if refused is not None:
            return refused
        return web.json_response(
            {"ops": repo.ops_since(request.query.get("since", "")), "commit": repo.commit.to_json()}
        )

    async def _get_repo(self, request: web.Request) -> web.Response:
        repo, refused = await self._credentialed(request)
        if refused is not None:
            return refused
        return web.Response(body=repo.car(), content_type="application/vnd.ipld.car")

    async def _latest_commit(self, request: web.Request) -> web.Response:
        repo, refused = await self._credentialed(request)
        if refused is not None:
            return refused
        return web.json_response({"commit": repo.commit.to_json()})

    async def _get_record(self, request: web.Request) -> web.Response:
        repo, refused = await self._credentialed(request)
        if refused is not None:
            return refused
        path = f"{request.query.get('collection')}/{request.query.get('rkey')}"
        if path not in repo.records:
            return xrpc_error(400, "RecordNotFound")
        space, did = request.query["space"], request.query["repo"]
        return web.json_response({"uri": f"{space}/{did}/{path}", "cid": repo.records[path][0],
                                  "value": repo.values[path]})  # fmt: skip
