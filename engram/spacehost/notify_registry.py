"""registerNotify / unregisterNotify for hosted spaces (docs/space-host.md): a syncer names a service entry
of its DID document (``did:web:syncer.example#atproto_space_syncer``; a bare DID means that fragment) and
engram, as the space host, pushes notifyWrite there after each commit until the registration lapses.

The endpoint must be https on a public host (plain http and internal addresses only in dev mode or on
ENGRAM_OUTBOUND_ALLOW): notifications carry the authority's service-auth JWTs and must not be aimed at
internal services. The guarded session checks the resolved address again at every delivery
(docs/security.md#outbound-requests)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..auth.did_resolver import DidResolutionError
from ..errors import InvalidInput
from ..outbound import OutboundPolicy, OutboundRefused
from ..store import notify_registrations as store_registrations
from ..store.models import Space

if TYPE_CHECKING:
    from ..auth.did_resolver import DidResolver
    from ..store.database import Store

REGISTRATION_TTL = 24 * 3600  # syncers renew at half of it (docs/space-host.md#write-notifications)
DEFAULT_FRAGMENT = "#atproto_space_syncer"


def service_id(service: str) -> tuple[str, str]:
    """(DID, #fragment) of a registered service name."""
    did, _, fragment = service.partition("#")
    if not did.startswith("did:"):
        raise InvalidInput(f"service must be a DID with an optional #fragment, got {service!r}")
    return did, f"#{fragment}" if fragment else DEFAULT_FRAGMENT


def _check_endpoint(endpoint: str, policy: OutboundPolicy) -> None:
    try:
        scheme = urlsplit(endpoint).scheme
    except ValueError:
        raise InvalidInput("the service endpoint is not a URL", "ServiceNotResolvable") from None
    if scheme != "https" and not policy.dev:
        raise InvalidInput("the service endpoint is not https", "ServiceNotResolvable")
    try:
        policy.check_url(endpoint, credential=True)
    except OutboundRefused as exc:
        raise InvalidInput(f"the service endpoint is refused: {exc}", "ServiceNotResolvable") from None


async def register(
    store: Store, resolver: DidResolver, policy: OutboundPolicy, space: Space, service: str
) -> float:
    """Register (or renew) ``service`` for ``space``; returns when the registration lapses (unix time)."""
    did, fragment = service_id(service)
    try:
        doc = await resolver.resolve(did)
    except DidResolutionError as exc:
        raise InvalidInput(f"cannot resolve {did}: {exc}", "ServiceNotResolvable") from None
    entry = doc.service(fragment)
    if entry is None:
        raise InvalidInput(f"{did} publishes no {fragment} service", "ServiceNotResolvable")
    _check_endpoint(entry.endpoint, policy)
    now = time.time()
    expires_at = now + REGISTRATION_TTL
    await store.write(store_registrations.register, space.id, did + fragment, entry.endpoint, expires_at, now)
    return expires_at


async def unregister(store: Store, space: Space, service: str) -> None:
    did, fragment = service_id(service)
    await store.write(store_registrations.unregister, space.id, did + fragment)
