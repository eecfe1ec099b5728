"""A member world on loopback for the space-host tests: a fake PLC directory serving member DIDs, a fake
member PDS issuing delegation tokens, and helpers that sign exchanges the way a client does.

(Not conftest.py: test modules import these helpers by name.)"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field

from aiohttp import web

from engram.auth.crypto_keys import PrivateKey
from engram.auth.delegation import DELEGATION_TYP, EXCHANGE_NSID
from engram.auth.did_document import Service
from engram.auth.jws import sign_jws
from engram.auth.space_signature import sign_space_exchange, sign_space_request
from engram.store import ModelSpec
from support.fakes.did_server import FakeDidServer, random_plc_did

EXCHANGE = f"/xrpc/{EXCHANGE_NSID}"
MODEL = ModelSpec("test-model", "sha256:test", 16)


@dataclass
class Host:
    client: object  # aiohttp test client of engram
    ctx: object
    space: str

    async def exchange(self, headers: dict[str, str], space: str | None = None, **body):
        return await self.client.post(EXCHANGE, json={"space": space or self.space, **body}, headers=headers)

    async def read(
        self, nsid: str, credential: str, holder: PrivateKey, audience: str | None = None, **params
    ):
        """A credentialed query signed by the holder key (audience: engram's DID by default)."""
        headers = sign_space_request(holder, credential, audience or self.ctx.settings.service_did)
        params.setdefault("space", self.space)
        return await self.client.get(f"/xrpc/{nsid}", params=params, headers=headers)


def delegation_token(key: PrivateKey, iss: str, space: str, **overrides) -> str:
    """A spaces delegation token as a member's PDS mints it; `overrides` replace or (None) drop claims."""
    authority = space.split("/")[2]
    now = int(time.time())
    claims = {"iss": iss, "sub": space, "aud": f"{authority}#atproto_space_host", "iat": now,
              "exp": now + 60, "jti": secrets.token_hex(16)}  # fmt: skip
    header = {"typ": DELEGATION_TYP, "kid": "#atproto"}
    for name, value in overrides.items():
        (header if name in ("typ", "kid") else claims).pop(name, None)
        if value is not None:
            (header if name in ("typ", "kid") else claims)[name] = value
    return sign_jws(key, header, claims)


def exchange_headers(holder: PrivateKey, token: str) -> dict[str, str]:
    return sign_space_exchange(holder, f"Bearer {token}")


@dataclass
class Member:
    did: str
    key: PrivateKey
    holder: PrivateKey = field(default_factory=lambda: PrivateKey.generate("ES256"))

    def token(self, space: str, **overrides) -> str:
        return delegation_token(self.key, self.did, space, **overrides)

    def headers(self, space: str, **overrides) -> dict[str, str]:
        return exchange_headers(self.holder, self.token(space, **overrides))


class MemberPds:
    """`com.atproto.space.getDelegationToken` for the members it hosts (no session: a test PDS)."""

    def __init__(self) -> None:
        self.members: dict[str, Member] = {}
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> MemberPds:
        app = web.Application()
        app.router.add_get("/xrpc/com.atproto.space.getDelegationToken", self._token)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _token(self, request: web.Request) -> web.Response:
        member = self.members.get(request.headers.get("X-Test-Member", ""))
        if member is None:
            return web.json_response({"error": "AuthRequired", "message": "no session"}, status=401)
        return web.json_response({"token": member.token(request.query["space"])})


def new_member(plc: FakeDidServer, pds: MemberPds | None = None, alg: str = "ES256K") -> Member:
    """A did:plc member whose document (its #atproto key, its PDS) the fake PLC serves."""
    member = Member(random_plc_did(), PrivateKey.generate(alg))
    services = {"#atproto_pds": Service("AtprotoPersonalDataServer", pds.url)} if pds else None
    plc.register(member.did, member.key.public_key, services)
    if pds is not None:
        pds.members[member.did] = member
    return member


def service_auth_token(member: Member, aud: str, lxm: str | None = EXCHANGE_NSID) -> str:
    """The other accepted form: a plain service-auth JWT (what getServiceAuth issues)."""
    now = int(time.time())
    claims = {"iss": member.did, "aud": aud, "iat": now, "exp": now + 60, "jti": secrets.token_hex(16)}
    if lxm is not None:
        claims["lxm"] = lxm
    return sign_jws(member.key, {"typ": "JWT"}, claims)
