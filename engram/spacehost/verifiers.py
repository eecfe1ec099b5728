"""The verifiers engram needs as the space host of its hosted spaces, built once per service."""

from __future__ import annotations

from dataclasses import dataclass

import aiohttp

from engram.auth.client_attestation import ClientAttestationVerifier
from engram.auth.delegation import DelegationVerifier
from engram.auth.did_resolver import DocumentSource
from engram.auth.replay import ReplayGuard
from engram.outbound import OutboundPolicy


@dataclass
class SpaceHostAuth:
    delegations: DelegationVerifier
    attestations: ClientAttestationVerifier

    @classmethod
    def build(
        cls,
        resolver: DocumentSource,
        session: aiohttp.ClientSession,
        *,
        dev: bool,
        policy: OutboundPolicy | None = None,
        replays: ReplayGuard | None = None,
    ) -> SpaceHostAuth:
        # One replay guard for both: the server passes the store's, so a delegation token or an attestation
        # is spent once across every serving process, restart and cluster node (docs/space-host.md).
        return cls(
            DelegationVerifier(resolver, replays=replays),
            ClientAttestationVerifier(session, dev=dev, policy=policy, replays=replays),
        )
