"""The OAuth2 token logic: grants, PKCE, rotation, lookups (RFC 6749, RFC 7636). No aiohttp here.

Clients are backed by engram API keys: a client's id is its key's id and its secret is the key itself,
so an operator needs nothing but `engram apikey create` to configure one. The person who approves an
authorization request proves access with an engram key of their own; the grant then carries the scopes
they approved, never more than that key has. Every lookup re-reads the key, so revoking it ends all
codes and tokens issued for it at once.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..store import ApiKey
from ..store import apikeys as store_apikeys
from . import clients as oauth_clients
from . import store as oauth_store
from .clients import Client
from .store import CodeRow, TokenRow

if TYPE_CHECKING:
    from ..store.database import Store

ACCESS_PREFIX = "eoa_"  # access tokens: told apart from API keys ("engram_") at a glance
REFRESH_PREFIX = "eor_"


class OAuthError(Exception):
    """An OAuth2 error answer (docs/oauth.md#grants): `error` is the registered code, `status` the HTTP status to answer with."""

    def __init__(self, error: str, description: str, status: int = 400):
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status


@dataclass(frozen=True)
class TokenGrant:
    """What a live access token grants: some OAuth scopes of one API key, to one client."""

    key: ApiKey
    client_id: str
    scopes: frozenset[str]  # OAuth scope names
    key_scopes: frozenset[str]  # the same, mapped to key scopes and cut to what the key still has


_VERIFIER = re.compile(r"[A-Za-z0-9._~-]{43,128}")


def s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest()).rstrip(b"=").decode()


class OAuthServer:
    def __init__(
        self,
        store: Store,
        scope_map: Mapping[str, str],
        *,
        issuer: str,
        access_ttl_s: int = 3600,
        refresh_ttl_s: int = 30 * 86400,
        code_ttl_s: int = 600,
        clock: Callable[[], float] = time.time,
    ):
        self.store = store
        # Which mount this is ("mcp", "memorybank"): every code and token it issues records it, and only
        # its own are honoured here, though all mounts share one table (docs/oauth.md#grants).
        if not issuer or "/" in issuer:
            raise ValueError("issuer must be a short name without '/'")
        self.issuer = issuer
        self.scope_map = dict(scope_map)  # OAuth scope name -> API key scope
        self.access_ttl_s, self.refresh_ttl_s, self.code_ttl_s = access_ttl_s, refresh_ttl_s, code_ttl_s
        self.clock = clock

    def now(self) -> int:
        return int(self.clock())

    # -- scopes and keys ---------------------------------------------------------------------------
    def parse_scopes(self, raw: str | None, key: ApiKey) -> frozenset[str]:
        """Requested scope names (all the key allows when none are named); `invalid_scope` otherwise."""
        allowed = frozenset(name for name, key_scope in self.scope_map.items() if key_scope in key.scopes)
        if not raw or not raw.strip():
            if not allowed:
                raise OAuthError("invalid_scope", "the key grants none of this server's scopes")
            return allowed
        wanted = frozenset(raw.split())
        unknown = wanted - set(self.scope_map)
        if unknown:
            raise OAuthError("invalid_scope", f"unknown scope {min(unknown)!r}")
        if not wanted <= allowed:
            raise OAuthError("invalid_scope", f"the key does not allow {min(wanted - allowed)!r}")
        return wanted

    async def key_for_secret(self, secret: str | None) -> ApiKey | None:
        if not secret:
            return None
        return await self.store.read(store_apikeys.lookup_api_key, secret)

    async def live_key(self, key_id: int) -> ApiKey | None:
        key = await self.store.read(store_apikeys.get_api_key, key_id)
        if key is None or key.revoked_at is not None or key.space_uri not in key.spaces.values():
            return None  # revoked, or its primary space deleted
        return key

    async def find_client(self, client_id: str) -> Client | None:
        """A key-backed client (its id is a live API key's id) or a registered one; None if unknown."""
        if oauth_clients.is_key_backed(client_id):
            key = await self.live_key(int(client_id))
            return None if key is None else Client(client_id, key.label or f"key {key.id}", (), key_id=key.id)
        return await self.store.read(oauth_clients.get_registered, self.issuer, client_id)

    async def authenticate_client(self, client_id: str | None, secret: str | None) -> Client:
        """The client a confidential request authenticates as; `invalid_client` (401) otherwise. A
        key-backed client may leave out its id (client_credentials): the key names it."""
        failed = OAuthError("invalid_client", "client authentication failed", 401)
        if not secret:
            raise failed
        if client_id and not oauth_clients.is_key_backed(client_id):
            client = await self.store.read(oauth_clients.get_registered, self.issuer, client_id)
            if client is None or not client.secret_matches(secret):
                raise failed
            return client
        key = await self.key_for_secret(secret)
        if key is None or (client_id and client_id != str(key.id)):
            raise failed
        return Client(str(key.id), key.label or f"key {key.id}", (), key_id=key.id)

    async def register_client(self, name: str, redirect_uris: list[str], confidential: bool = True):
        """(Client, secret or None): a client with fixed redirect URIs (for front doors that need their own)."""
        return await self.store.write(
            oauth_clients.register_client, self.issuer, name, redirect_uris, confidential
        )

    def _new_family(self) -> str:
        """A grant family id that names this server: `<issuer>/<random>` (docs/oauth.md#grants)."""
        return f"{self.issuer}/{secrets.token_hex(16)}"

    def _ours(self, family: str) -> bool:
        return family.startswith(self.issuer + "/")

    async def _authenticate_for(self, client_id: str, secret: str | None) -> None:
        """A confidential client authenticates on every token request, PKCE or not
        (docs/oauth.md#grants); a public one has no secret to send."""
        client = await self.find_client(client_id)
        if client is None:
            raise OAuthError("invalid_client", "unknown client", 401)
        if client.confidential:
            await self.authenticate_client(client_id, secret)
        elif secret:
            raise OAuthError("invalid_client", "a public client has no secret", 401)

    # -- authorization codes -----------------------------------------------------------------------
    async def issue_code(
        self, *, client_id: str, user_key: ApiKey, scopes: frozenset[str], redirect_uri: str,
        code_challenge: str | None,
    ) -> str:  # fmt: skip
        code = secrets.token_urlsafe(32)
        row = CodeRow(client_id, user_key.id, scopes, redirect_uri, code_challenge, self._new_family(),
                      self.now() + self.code_ttl_s, None)  # fmt: skip
        await self.store.write(oauth_store.put_code, code, row)
        return code

    # -- the token endpoint ------------------------------------------------------------------------
    async def token(self, form: Mapping[str, str], client_id: str | None, secret: str | None) -> dict:
        grant_type = form.get("grant_type")
        if grant_type == "client_credentials":
            client = await self.authenticate_client(client_id, secret)
            key = await self.live_key(client.key_id) if client.key_id is not None else None
            if key is None:
                raise OAuthError("unauthorized_client", "only a key-backed client has credentials of its own")
            scopes = self.parse_scopes(form.get("scope"), key)
            return await self._issue(key, client.client_id, scopes, refresh=False)
        if grant_type == "authorization_code":
            return await self._exchange_code(form, client_id, secret)
        if grant_type == "refresh_token":
            return await self._refresh(form, client_id, secret)
        raise OAuthError("unsupported_grant_type", f"grant_type {grant_type!r} is not supported")

    async def _exchange_code(
        self, form: Mapping[str, str], client_id: str | None, secret: str | None
    ) -> dict:
        code = form.get("code") or ""
        now = self.now()
        row = await self.store.read(oauth_store.get_code, code) if code else None
        if row is None or not self._ours(row.family):
            raise OAuthError("invalid_grant", "unknown authorization code")  # another mount's is unknown here
        if row.used_at is not None:
            # A replayed code revokes every token issued from it (docs/oauth.md#grants).
            await self.store.write(oauth_store.revoke_family, row.family, now)
            raise OAuthError("invalid_grant", "authorization code already used")
        if row.expires_at < now:
            raise OAuthError("invalid_grant", "authorization code expired")
        client_id = client_id or form.get("client_id")
        if client_id != row.client_id:
            raise OAuthError("invalid_grant", "the code was issued to another client")
        if form.get("redirect_uri") != row.redirect_uri:
            raise OAuthError("invalid_grant", "redirect_uri does not match the authorization request")
        await self._authenticate_for(client_id, secret)
        if row.code_challenge is not None:
            verifier = form.get("code_verifier") or ""
            if not _VERIFIER.fullmatch(verifier):  # docs/oauth.md#the-consent-page (and s256 encodes ASCII)
                raise OAuthError(
                    "invalid_grant", "code_verifier must be 43-128 characters of A-Z a-z 0-9 - . _ ~"
                )
            if not hmac.compare_digest(s256(verifier), row.code_challenge):
                raise OAuthError("invalid_grant", "code_verifier does not match the code_challenge")
        key = await self.live_key(row.key_id)
        if key is None:
            raise OAuthError("invalid_grant", "the key behind this grant is revoked")
        # The code is spent in the transaction that stores the tokens: of parallel exchanges exactly one
        # wins; a loser revokes the family, the winner's new tokens included (docs/oauth.md#grants).
        return await self._issue(
            key, row.client_id, row.scopes, refresh=True, family=row.family,
            spend=lambda conn: oauth_store.spend_code(conn, code, now),
        )  # fmt: skip

    async def _refresh(self, form: Mapping[str, str], client_id: str | None, secret: str | None) -> dict:
        token = form.get("refresh_token") or ""
        now = self.now()
        row = await self.store.read(oauth_store.get_token, token, "refresh")
        if row is None or not self._ours(row.family):
            raise OAuthError("invalid_grant", "unknown refresh token")
        if row.revoked_at is not None:
            await self.store.write(oauth_store.revoke_family, row.family, now)  # a stolen token replayed
            raise OAuthError("invalid_grant", "refresh token already used or revoked")
        if row.expires_at < now:
            raise OAuthError("invalid_grant", "refresh token expired")
        if (client_id or form.get("client_id") or row.client_id) != row.client_id:
            raise OAuthError("invalid_grant", "the token was issued to another client")
        await self._authenticate_for(row.client_id, secret)
        key = await self.live_key(row.key_id)
        if key is None:
            raise OAuthError("invalid_grant", "the key behind this grant is revoked")
        scopes = frozenset((form.get("scope") or " ".join(row.scopes)).split())
        if not scopes <= row.scopes:
            raise OAuthError("invalid_scope", "a refresh cannot widen the granted scopes")
        # Rotation and the new tokens in one transaction: exactly one of parallel refreshes wins.
        return await self._issue(
            key, row.client_id, scopes, refresh=True, family=row.family,
            spend=lambda conn: oauth_store.revoke_token(conn, token, now) == 1,
        )  # fmt: skip

    async def _issue(self, key: ApiKey, client_id: str, scopes: frozenset[str], *, refresh: bool,
                     family: str | None = None, spend: Callable | None = None) -> dict:  # fmt: skip
        """New tokens; `spend(conn)`, when given, consumes what they are issued for (a code, a refresh
        token) in the same transaction and returns False if another request consumed it first."""
        now = self.now()
        family = family or self._new_family()
        access = ACCESS_PREFIX + secrets.token_urlsafe(32)
        rows = [
            (access, TokenRow("access", client_id, key.id, scopes, family, now + self.access_ttl_s, None))
        ]
        answer = {"access_token": access, "token_type": "Bearer", "expires_in": self.access_ttl_s,
                  "scope": " ".join(sorted(scopes))}  # fmt: skip
        if refresh:
            refresh_token = REFRESH_PREFIX + secrets.token_urlsafe(32)
            rows.append(
                (
                    refresh_token,
                    TokenRow("refresh", client_id, key.id, scopes, family, now + self.refresh_ttl_s, None),
                )
            )
            answer["refresh_token"] = refresh_token

        def put(conn) -> bool:
            if spend is not None and not spend(conn):
                oauth_store.revoke_family(conn, family, now)  # lost a race: someone else holds a copy
                return False
            for token, row in rows:
                oauth_store.put_token(conn, token, row)
            oauth_store.prune_expired(conn, now)
            return True

        if not await self.store.write(put):
            raise OAuthError("invalid_grant", "already used: every token of this grant is revoked")
        return answer

    # -- resource servers --------------------------------------------------------------------------
    async def resolve_access(self, token: str) -> TokenGrant | None:
        """The grant of a live access token; None for anything else (unknown, expired, revoked, or its
        key revoked since)."""
        if not token.startswith(ACCESS_PREFIX):
            return None
        row = await self.store.read(oauth_store.get_token, token, "access")
        if row is None or row.revoked_at is not None or row.expires_at < self.now():
            return None
        if not self._ours(row.family):
            return None  # issued by another mount (docs/oauth.md#grants)
        key = await self.live_key(row.key_id)
        if key is None:
            return None
        key_scopes = frozenset(self.scope_map[s] for s in row.scopes if s in self.scope_map) & key.scopes
        return TokenGrant(key, row.client_id, row.scopes, key_scopes)
