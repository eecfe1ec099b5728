"""Delegation tokens, checked by engram as the space host of its hosted spaces (docs/space-host.md).

A member's PDS vouches for the member with a short-lived JWT that engram exchanges for a space credential
(com.atproto.space.getSpaceCredential). Two forms are accepted, both verified by the service-auth verifier
(``engram/auth/service_jwt.py``: issuer's ``#atproto`` key through did:plc / did:web, ``exp``, one use per
``jti``, claimed through the replay guard the server passes: the store's, so a token is spent once across
every serving process, restart and cluster node):

- the spaces delegation token: ``typ`` ``atproto-space-delegation+jwt``, ``sub`` = the space, no ``lxm``;
- a plain service-auth token (what ``com.atproto.server.getServiceAuth`` issues on a PDS without spaces
  support): ``lxm`` = ``com.atproto.space.getSpaceCredential``; ``sub``, if present, = the space.

``aud`` is the authority's space-host service id (``<authority>#atproto_space_host``, the protocol's form)
or the bare authority DID (what getServiceAuth clients usually ask for). Every failure is 401
``InvalidDelegationToken`` carrying the underlying reason (``JwtReplayed: ...``, ``BadJwtAudience: ...``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from engram.auth.did_resolver import DocumentSource
from engram.auth.jws import JwsError, parse_jws
from engram.auth.replay import ReplayGuard
from engram.auth.service_jwt import ServiceAuth, ServiceAuthVerifier
from engram.errors import NotAuthenticated

DELEGATION_TYP = "atproto-space-delegation+jwt"
EXCHANGE_NSID = "com.atproto.space.getSpaceCredential"


class DelegationVerifier:
    def __init__(
        self,
        resolver: DocumentSource,
        *,
        now: Callable[[], float] = time.time,
        replays: ReplayGuard | None = None,
    ):
        # Its own verifier and replay scope: a delegation jti is consumed here, whatever other service JWTs
        # engram sees. The server passes the store's guard (engram/store/replays.py): a per-process memory
        # would let each serving process, each restart and each cluster node accept the token once more.
        # No audience of its own: each call passes the space authority's (see `verify`).
        self._jwt = ServiceAuthVerifier(
            "", resolver, now=now, audiences=("",), replays=replays, replay_scope="delegation"
        )

    async def verify(self, authorization: str, space: str, authority: str) -> ServiceAuth:
        """The verified token (``iss`` is the member) for a request about ``space`` of ``authority``."""
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise NotAuthenticated("getSpaceCredential requires Authorization: Bearer <delegation token>")
        try:
            typ = parse_jws(token.strip()).header.get("typ")
        except JwsError as exc:
            raise _invalid(f"malformed delegation token: {exc}") from None
        lxm = None if typ == DELEGATION_TYP else EXCHANGE_NSID
        audiences = frozenset({f"{authority}#atproto_space_host", authority})
        try:
            verified = await self._jwt.verify(authorization, lxm, audiences=audiences)
        except NotAuthenticated as exc:
            raise _invalid(f"{exc.name}: {exc.message}") from None
        if typ == DELEGATION_TYP and verified.sub is None:
            raise _invalid("a delegation token must name the space in sub")
        if verified.sub is not None and verified.sub != space:
            raise _invalid("the delegation token is for another space")
        return verified


def _invalid(message: str) -> NotAuthenticated:
    return NotAuthenticated(message, "InvalidDelegationToken")
