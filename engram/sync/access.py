"""Read access to a synced space: a delegation token from some account that may read it, exchanged at the
authority's space host for a short-lived space credential bound to a fresh P-256 holder key.

The way engram gets delegation tokens is pluggable (`DelegationSource`): the first is an account signed in
with an app password (`AppPasswordAccess`); OAuth grants from the authority (what the reference indexer
uses) can be another source without touching the syncer. `CredentialManager` does the exchange, caches the
credential and renews it 90 s before it expires.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from engram.auth.credential import mint_space_credential
from engram.auth.crypto_keys import PrivateKey
from engram.auth.did_resolver import DocumentSource
from engram.auth.jws import JwsError, parse_jws
from engram.auth.space_signature import sign_space_exchange, sign_space_request
from engram.identifiers import space_authority
from engram.sync import endpoints
from engram.sync.errors import AccessError, SpaceNotHeldThere, UpstreamError
from engram.sync.http import XrpcClient
from engram.sync.secrets import SecretStore

RENEW_MARGIN = 90.0  # seconds before exp a credential is replaced (docs/sync.md#read-access)
_SESSION_EXPIRED = {"ExpiredToken", "InvalidToken", "AuthRequired", "AuthenticationRequired"}


class DelegationSource(Protocol):
    kind: str

    async def delegation_token(self, space: str) -> str: ...


class AppPasswordAccess:
    """An account (DID + app password) that may read the space: createSession at its PDS, refreshSession
    when the access token expires, a new session when the refresh token is gone too."""

    kind = "app_password"

    def __init__(
        self,
        space: str,
        account: str,
        client: XrpcClient,
        resolver: DocumentSource,
        secrets: SecretStore,
        pds_url: str | None = None,
    ):
        self.space, self.account = space, account
        self._client, self._resolver, self._secrets, self._pds_url = client, resolver, secrets, pds_url
        self._access_jwt: str | None = None
        self._lock = asyncio.Lock()

    async def _pds(self) -> str:
        return self._pds_url or await endpoints.pds(self._resolver, self.account)

    async def delegation_token(self, space: str) -> str:
        async with self._lock:
            # try the held access token, then a refreshed session, then a new one from the app password
            for refresh_first in (True, True, False):
                if self._access_jwt is None:
                    await self._sign_in(refresh_first=refresh_first)
                try:
                    answer = await self._client.query(
                        await self._pds(),
                        "com.atproto.space.getDelegationToken",
                        {"space": space},
                        {"Authorization": f"Bearer {self._access_jwt}"},
                    )
                except UpstreamError as e:
                    if e.xrpc_error in _SESSION_EXPIRED or e.status == 401:
                        self._access_jwt = None
                        continue
                    raise AccessError(f"getDelegationToken failed: {e.message}") from None
                token = answer.get("token")
                if not isinstance(token, str) or not token:
                    raise AccessError("getDelegationToken answered without a token")
                return token
            raise AccessError("the account's PDS keeps refusing its session")

    async def _sign_in(self, *, refresh_first: bool) -> None:
        secrets = await asyncio.to_thread(self._secrets.load, self.space)  # file I/O: off the loop
        pds = await self._pds()
        if refresh_first and secrets.get("refreshJwt"):
            try:
                session = await self._client.procedure(
                    pds,
                    "com.atproto.server.refreshSession",
                    None,
                    {"Authorization": f"Bearer {secrets['refreshJwt']}"},
                )
                return await self._keep(session)
            except UpstreamError:
                pass  # refresh token expired or revoked: sign in again with the app password
        if not secrets.get("appPassword"):
            raise AccessError("no app password stored for this space (engram space add --app-password-file)")
        try:
            session = await self._client.procedure(
                pds,
                "com.atproto.server.createSession",
                {"identifier": self.account, "password": secrets["appPassword"]},
                {},
            )
        except UpstreamError as e:
            raise AccessError(f"createSession failed: {e.message}") from None
        await self._keep(session)

    async def _keep(self, session: dict) -> None:
        access, refresh = session.get("accessJwt"), session.get("refreshJwt")
        if not isinstance(access, str) or not access:
            raise AccessError("the PDS answered a session without accessJwt")
        self._access_jwt = access
        if isinstance(refresh, str) and refresh:
            await asyncio.to_thread(self._secrets.update, self.space, refreshJwt=refresh)


@dataclass(frozen=True)
class HeldCredential:
    space: str
    jwt: str
    holder: PrivateKey
    exp: float
    jti: str | None = None

    def headers(self, audience: str) -> dict[str, str]:
        return sign_space_request(self.holder, self.jwt, audience)


class CredentialManager:
    def __init__(self, client: XrpcClient, resolver: DocumentSource, *, now: Callable[[], float] = time.time):
        self._client, self._resolver, self._now = client, resolver, now
        self._held: dict[str, HeldCredential] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def get(self, space: str, source: DelegationSource) -> HeldCredential:
        held = self._held.get(space)
        if held is not None and self._now() < held.exp - RENEW_MARGIN:
            return held
        async with self._locks.setdefault(space, asyncio.Lock()):
            held = self._held.get(space)
            if held is None or self._now() >= held.exp - RENEW_MARGIN:
                held = await self._exchange(space, source)
                self._held[space] = held
            return held

    def forget(self, space: str) -> None:
        self._held.pop(space, None)

    def forget_revoked(self, space: str, jtis: list[str]) -> None:
        """The authority revoked these credentials: if the one held is among them, the next request
        exchanges a new one (docs/space-host.md#revoking-credentials)."""
        held = self._held.get(space)
        if held is not None and held.jti in jtis:
            self._held.pop(space, None)

    async def _exchange(self, space: str, source: DelegationSource) -> HeldCredential:
        token = await source.delegation_token(space)
        holder = PrivateKey.generate("ES256")  # a fresh holder key per credential (spaces protocol)
        host = await endpoints.space_host(self._resolver, space_authority(space))
        try:
            answer = await self._client.procedure(
                host,
                "com.atproto.space.getSpaceCredential",
                {"space": space},
                sign_space_exchange(holder, f"Bearer {token}"),
            )
        except SpaceNotHeldThere:
            raise
        except UpstreamError as e:
            raise AccessError(f"getSpaceCredential failed: {e.message}") from None
        jwt = answer.get("credential")
        try:
            claims = parse_jws(jwt).payload if isinstance(jwt, str) else None
        except JwsError:
            claims = None
        if (
            not claims
            or claims.get("sub") != space
            or (claims.get("cnf") or {}).get("kid") != holder.public_key.did_key
        ):
            raise AccessError("the space host answered a credential for another space or key")
        exp = claims.get("exp")
        if type(exp) is not int:
            raise AccessError("the credential has no exp")
        jti = claims.get("jti")
        return HeldCredential(space, jwt, holder, float(exp), jti if isinstance(jti, str) else None)


class HostedCredentials:
    """Credentials for the spaces engram hosts, minted here with the authority's key (no exchange: engram
    is the space host), to read the members' repos at their PDSes. Renewed like exchanged ones."""

    LIFETIME = 600

    def __init__(self, signer: Callable[[str], PrivateKey | None], *, now: Callable[[], float] = time.time):
        self._signer, self._now = signer, now
        self._held: dict[str, HeldCredential] = {}

    def get(self, space: str, authority: str) -> HeldCredential | None:
        held = self._held.get(space)
        if held is not None and self._now() < held.exp - RENEW_MARGIN:
            return held
        key = self._signer(authority)
        if key is None:
            return None
        holder = PrivateKey.generate("ES256")
        jwt = mint_space_credential(
            key, issuer=authority, space=space, holder_did_key=holder.public_key.did_key, ttl=self.LIFETIME
        )
        exp = parse_jws(jwt).payload["exp"]
        held = self._held[space] = HeldCredential(space, jwt, holder, float(exp))
        return held
