"""The verifiers engram needs as the space host of its hosted spaces, built once per service."""

from __future__ import annotations

from dataclasses import dataclass

import aiohttp

from engram.auth.client_attestation import ClientAttestationVerifier
from engram.auth.delegation import DelegationVerifier
from engram.auth.did_resolver import DocumentSource
from engram.auth.replay import ReplayGuard


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
        replays: ReplayGuard | None = None,
    ) -> SpaceHostAuth:
        return cls(DelegationVerifier(resolver), ClientAttestationVerifier(session, dev=dev, replays=replays))
