"""The parts of a DID document engram uses: verification methods and services, looked up by fragment.

Ids may be absolute (``did:plc:x#atproto``) or relative (``#atproto``); an absolute id naming another DID
is ignored. Keys are decoded lazily (a malformed key in a method nobody asks for must not break the rest).
Accepted key types: ``Multikey`` and the legacy ``EcdsaSecp256k1VerificationKey2019`` /
``EcdsaSecp256r1VerificationKey2019`` (old did:plc documents: multibase of the bare point, no multicodec).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engram.auth.crypto_keys import Alg, KeyFormatError, PublicKey, decode_multibase

_LEGACY_TYPES = {"EcdsaSecp256k1VerificationKey2019": "ES256K", "EcdsaSecp256r1VerificationKey2019": "ES256"}


class DidDocumentError(ValueError):
    """A DID document that is malformed or does not belong to the DID asked for."""


@dataclass(frozen=True)
class Service:
    type: str
    endpoint: str


@dataclass(frozen=True)
class DidDocument:
    id: str
    methods: dict[str, tuple[str, str]] = field(
        default_factory=dict
    )  # fragment -> (type, publicKeyMultibase)
    services: dict[str, Service] = field(default_factory=dict)  # fragment -> service
    also_known_as: tuple[str, ...] = ()

    def key(self, fragment: str) -> PublicKey | None:
        """The public key of verification method ``#fragment`` (e.g. "#atproto"), or None."""
        method = self.methods.get(fragment)
        if method is None:
            return None
        vm_type, multibase = method
        try:
            if vm_type == "Multikey":
                return PublicKey.from_multibase(multibase)
            legacy_alg: Alg = _LEGACY_TYPES[vm_type]  # type: ignore[assignment]
            return PublicKey.from_point(legacy_alg, decode_multibase(multibase))
        except KeyFormatError:
            return None

    def service(self, fragment: str) -> Service | None:
        return self.services.get(fragment)

    @staticmethod
    def parse(did: str, raw: Any) -> DidDocument:
        if not isinstance(raw, dict):
            raise DidDocumentError("DID document is not a JSON object")
        if raw.get("id") != did:
            raise DidDocumentError(f"DID document id {raw.get('id')!r} does not match {did}")
        methods: dict[str, tuple[str, str]] = {}
        for vm in _list(raw.get("verificationMethod")):
            fragment = _own_fragment(did, vm.get("id"))
            vm_type, multibase = vm.get("type"), vm.get("publicKeyMultibase")
            known_type = isinstance(vm_type, str) and (vm_type == "Multikey" or vm_type in _LEGACY_TYPES)
            if fragment and isinstance(multibase, str) and known_type:
                methods.setdefault(fragment, (vm_type, multibase))
        services: dict[str, Service] = {}
        for svc in _list(raw.get("service")):
            fragment = _own_fragment(did, svc.get("id"))
            endpoint, svc_type = svc.get("serviceEndpoint"), svc.get("type")
            if fragment and isinstance(endpoint, str) and isinstance(svc_type, str):
                services.setdefault(fragment, Service(svc_type, endpoint))
        aka = tuple(a for a in _list_any(raw.get("alsoKnownAs")) if isinstance(a, str))
        return DidDocument(did, methods, services, aka)

    def to_json(self) -> dict[str, Any]:
        """The W3C JSON form (used for documents engram publishes or serves from fakes)."""
        return {
            "@context": ["https://www.w3.org/ns/did/v1", "https://w3id.org/security/multikey/v1"],
            "id": self.id,
            "alsoKnownAs": list(self.also_known_as),
            "verificationMethod": [
                {"id": f"{self.id}{frag}", "type": t, "controller": self.id, "publicKeyMultibase": mb}
                for frag, (t, mb) in self.methods.items()
            ],
            "service": [
                {"id": frag, "type": s.type, "serviceEndpoint": s.endpoint}
                for frag, s in self.services.items()
            ],
        }

    @staticmethod
    def build(
        did: str, keys: dict[str, PublicKey], services: dict[str, Service] | None = None
    ) -> DidDocument:
        """A document for ``did`` with Multikey verification methods ``{"#atproto": key, ...}``."""
        return DidDocument(did, {f: ("Multikey", k.multibase) for f, k in keys.items()}, dict(services or {}))


def _list(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _list_any(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _own_fragment(did: str, vm_id: Any) -> str | None:
    if not isinstance(vm_id, str) or "#" not in vm_id:
        return None
    owner, _, fragment = vm_id.partition("#")
    if owner not in ("", did) or not fragment:
        return None
    return "#" + fragment
