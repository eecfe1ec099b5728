"""Reader-auth cases (docs/protocol.md#reader-auth, steps 2-5) as data + builders, reusable against any
server.

A ``ReaderWorld`` holds the keys and DIDs; ``world.documents()`` are the DID documents the server's
resolver must serve (e.g. via ``FakeDidServer.register_raw(did, doc.to_json())``); ``world.space`` and
``world.space_p256`` must exist on the server. Each ``ReaderCase.build(world)`` returns the ``space``
query value and the header field lines (duplicates allowed) to send; ``status``/``error`` are the expected
answer (``error`` None = accepted). Signatures are built by hand here, independently of engram's signer.
"""

from __future__ import annotations

import base64
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from engram.auth.crypto_keys import CURVE_ORDER, PrivateKey
from engram.auth.did_document import DidDocument
from support.fakes.did_server import random_plc_did

CREDENTIAL_TYP = "atproto-space-credential+jwt"
USE = ("authorization", "atproto-space-audience")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def high_s(sig: bytes, alg: str) -> bytes:
    s = int.from_bytes(sig[32:], "big")
    return sig[:32] + (CURVE_ORDER[alg] - s if s <= CURVE_ORDER[alg] // 2 else s).to_bytes(32, "big")


def forge_jws(
    key: PrivateKey, header: dict[str, Any], payload: dict[str, Any], *, make_high_s: bool = False
) -> str:
    """Sign exactly the given header (no alg fix-up), so bad headers can be produced."""
    signing_input = f"{b64url(orjson.dumps(header))}.{b64url(orjson.dumps(payload))}"
    sig = key.sign(signing_input.encode())
    return f"{signing_input}.{b64url(high_s(sig, key.alg) if make_high_s else sig)}"


@dataclass
class ReaderWorld:
    service_did: str
    now: float = field(default_factory=time.time)
    k256_authority: str = field(default_factory=random_plc_did)
    k256_key: PrivateKey = field(default_factory=lambda: PrivateKey.generate("ES256K"))
    p256_authority: str = field(default_factory=random_plc_did)
    p256_space_key: PrivateKey = field(default_factory=lambda: PrivateKey.generate("ES256"))
    p256_account_key: PrivateKey = field(default_factory=lambda: PrivateKey.generate("ES256K"))
    holder: PrivateKey = field(default_factory=lambda: PrivateKey.generate("ES256"))

    @property
    def space(self) -> str:
        return f"at://{self.k256_authority}/space/garden.engram.space/memories"

    @property
    def space_p256(self) -> str:
        return f"at://{self.p256_authority}/space/garden.engram.space/shared"

    def documents(self) -> dict[str, DidDocument]:
        return {
            self.k256_authority: DidDocument.build(
                self.k256_authority, {"#atproto": self.k256_key.public_key}
            ),
            self.p256_authority: DidDocument.build(
                self.p256_authority,
                {
                    "#atproto": self.p256_account_key.public_key,
                    "#atproto_space": self.p256_space_key.public_key,
                },
            ),
        }

    def credential(
        self,
        *,
        key: PrivateKey | None = None,
        header: dict | None = None,
        payload: dict | None = None,
        drop: tuple[str, ...] = (),
        space: str | None = None,
        make_high_s: bool = False,
        holder: PrivateKey | None = None,
    ) -> str:
        key = key or self.k256_key
        space = space or self.space
        iat = int(self.now)
        h = {"typ": CREDENTIAL_TYP, "alg": key.alg, "kid": "#atproto", **(header or {})}
        p = {
            "iss": space.split("/")[2],
            "sub": space,
            "cnf": {"kid": (holder or self.holder).public_key.did_key},
            "iat": iat,
            "exp": iat + 600,
            "jti": secrets.token_hex(16),
            **(payload or {}),
        }
        for name in drop:
            h.pop(name, None)
            p.pop(name, None)
        return forge_jws(key, h, p, make_high_s=make_high_s)

    def p256_credential(self, **kw: Any) -> str:
        return self.credential(
            key=self.p256_space_key,
            space=self.space_p256,
            header={"kid": "#atproto_space", **kw.pop("header", {})},
            **kw,
        )

    def signed(
        self,
        token: str,
        *,
        audience: str | None = None,
        params: str = "",
        holder: PrivateKey | None = None,
        components: tuple[str, ...] = USE,
        pad: bool = False,
        make_high_s: bool = False,
        der: bool = False,
        scheme: str = "Atproto-Space",
        label: str = "atproto-space",
        extra: list[tuple[str, str]] | None = None,
        inner: str | None = None,
    ) -> list[tuple[str, str]]:
        holder = holder or self.holder
        authorization = f"{scheme} {token}"
        audience = self.service_did if audience is None else audience
        values = {"authorization": authorization, "atproto-space-audience": audience}
        inner = inner or "(" + " ".join(f'"{c}"' for c in components) + ")" + params
        base = "\n".join([*(f'"{c}": {values[c]}' for c in components), f'"@signature-params": {inner}'])
        sig = holder.sign(base.encode())
        if make_high_s:
            sig = high_s(sig, holder.alg)
        if der:
            sig = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
        b64 = base64.b64encode(sig).decode()
        if not pad:
            b64 = b64.rstrip("=")
        return [
            ("Authorization", authorization),
            ("Atproto-Space-Audience", audience),
            ("Signature-Input", f"{label}={inner}"),
            ("Signature", f"{label}=:{b64}:"),
            *(extra or []),
        ]

    def holder_params(self, order: str = "keyid,alg") -> str:
        parts = {"keyid": f';keyid="{self.holder.public_key.did_key}"', "alg": ';alg="ecdsa-p256-sha256"'}
        return "".join(parts[p] for p in order.split(",") if p)


@dataclass(frozen=True)
class CaseRequest:
    space: str
    headers: list[tuple[str, str]]


@dataclass(frozen=True)
class ReaderCase:
    name: str
    build: Callable[[ReaderWorld], CaseRequest]
    status: int = 401
    error: str | None = None  # None: accepted (200)


def _req(
    fn: Callable[[ReaderWorld], list[tuple[str, str]]], space: str = "k256"
) -> Callable[[ReaderWorld], CaseRequest]:
    return lambda w: CaseRequest(w.space if space == "k256" else w.space_p256, fn(w))


def _without(headers: list[tuple[str, str]], name: str) -> list[tuple[str, str]]:
    return [(k, v) for k, v in headers if k.lower() != name.lower()]


def _replace(headers: list[tuple[str, str]], name: str, value: str) -> list[tuple[str, str]]:
    return [(k, value if k.lower() == name.lower() else v) for k, v in headers]


def _dup(headers: list[tuple[str, str]], name: str) -> list[tuple[str, str]]:
    return headers + [(k, v) for k, v in headers if k.lower() == name.lower()]


def _other_holder_credential(w: ReaderWorld) -> list[tuple[str, str]]:
    other = PrivateKey.generate("ES256")
    return w.signed(w.credential(), holder=other)  # credential binds w.holder, request signed by another key


def _k256_holder(w: ReaderWorld) -> list[tuple[str, str]]:
    k256_holder = PrivateKey.generate("ES256K")
    return w.signed(w.credential(holder=k256_holder), holder=k256_holder)


def _tampered_audience(w: ReaderWorld) -> list[tuple[str, str]]:
    return _replace(
        w.signed(w.credential(), audience="did:web:elsewhere.example"),
        "Atproto-Space-Audience",
        w.service_did,
    )


def _tampered_scheme_case(w: ReaderWorld) -> list[tuple[str, str]]:
    headers = w.signed(w.credential())
    return _replace(
        headers, "Authorization", dict(headers)["Authorization"].replace("Atproto-Space", "atproto-space")
    )


def _other_label_too(w: ReaderWorld) -> list[tuple[str, str]]:
    headers = w.signed(w.credential())
    return headers + [("Signature-Input", 'sig1=("@method");created=1'), ("Signature", "sig1=:AAAA:")]


REJECTED: list[ReaderCase] = [
    # step 2: header shape → AuthRequired
    ReaderCase(
        "missing-authorization",
        _req(lambda w: _without(w.signed(w.credential()), "Authorization")),
        error="AuthRequired",
    ),
    ReaderCase(
        "missing-audience",
        _req(lambda w: _without(w.signed(w.credential()), "Atproto-Space-Audience")),
        error="AuthRequired",
    ),
    ReaderCase("no-headers-at-all", _req(lambda w: []), error="AuthRequired"),
    ReaderCase(
        "duplicate-authorization",
        _req(lambda w: _dup(w.signed(w.credential()), "Authorization")),
        error="AuthRequired",
    ),
    ReaderCase(
        "duplicate-audience",
        _req(lambda w: _dup(w.signed(w.credential()), "Atproto-Space-Audience")),
        error="AuthRequired",
    ),
    ReaderCase(
        "bearer-scheme", _req(lambda w: w.signed(w.credential(), scheme="Bearer")), error="AuthRequired"
    ),
    ReaderCase("dpop-scheme", _req(lambda w: w.signed(w.credential(), scheme="DPoP")), error="AuthRequired"),
    ReaderCase(
        "scheme-without-token",
        _req(lambda w: _replace(w.signed(w.credential()), "Authorization", "Atproto-Space")),
        error="AuthRequired",
    ),
    # step 3: credential → InvalidToken
    ReaderCase("malformed-credential", _req(lambda w: w.signed("not.a-jwt")), error="InvalidToken"),
    ReaderCase(
        "expired",
        _req(lambda w: w.signed(w.credential(payload={"iat": int(w.now) - 700, "exp": int(w.now) - 6}))),
        error="InvalidToken",
    ),
    ReaderCase(
        "iat-in-future",
        _req(lambda w: w.signed(w.credential(payload={"iat": int(w.now) + 60, "exp": int(w.now) + 660}))),
        error="InvalidToken",
    ),
    ReaderCase(
        "lifetime-over-3600",
        _req(lambda w: w.signed(w.credential(payload={"iat": int(w.now) - 10, "exp": int(w.now) + 3591}))),
        error="InvalidToken",
    ),
    ReaderCase(
        "exp-before-iat",
        _req(lambda w: w.signed(w.credential(payload={"exp": int(w.now) - 1}))),
        error="InvalidToken",
    ),
    ReaderCase(
        "float-exp",
        _req(lambda w: w.signed(w.credential(payload={"exp": w.now + 600.5}))),
        error="InvalidToken",
    ),
    ReaderCase(
        "typ-jwt", _req(lambda w: w.signed(w.credential(header={"typ": "JWT"}))), error="InvalidToken"
    ),
    ReaderCase(
        "typ-delegation",
        _req(lambda w: w.signed(w.credential(header={"typ": "atproto-space-delegation+jwt"}))),
        error="InvalidToken",
    ),
    ReaderCase(
        "alg-does-not-match-key",
        _req(lambda w: w.signed(w.credential(header={"alg": "ES256"}))),
        error="InvalidToken",
    ),
    ReaderCase(
        "alg-none", _req(lambda w: w.signed(w.credential(header={"alg": "none"}))), error="InvalidToken"
    ),
    ReaderCase(
        "kid-unknown",
        _req(lambda w: w.signed(w.credential(header={"kid": "#atproto_label"}))),
        error="InvalidToken",
    ),
    ReaderCase(
        "kid-is-a-list",
        _req(lambda w: w.signed(w.credential(header={"kid": ["#atproto"]}))),
        error="InvalidToken",
    ),
    ReaderCase("kid-missing", _req(lambda w: w.signed(w.credential(drop=("kid",)))), error="InvalidToken"),
    ReaderCase(
        "kid-names-another-key",
        _req(lambda w: w.signed(w.p256_credential(header={"kid": "#atproto"})), "p256"),
        error="InvalidToken",
    ),
    *(
        ReaderCase(
            f"missing-{claim}",
            _req(lambda w, c=claim: w.signed(w.credential(drop=(c,)))),
            error="InvalidToken",
        )
        for claim in ("iss", "sub", "cnf", "iat", "exp", "jti")
    ),
    ReaderCase(
        "cnf-kid-not-a-did-key",
        _req(lambda w: w.signed(w.credential(payload={"cnf": {"kid": "did:web:x"}}))),
        error="InvalidToken",
    ),
    ReaderCase(
        "sub-is-another-space",
        _req(lambda w: w.signed(w.credential(space=w.space + "-other"))),
        error="InvalidToken",
    ),
    ReaderCase(
        "iss-is-not-the-authority",
        _req(
            lambda w: w.signed(
                w.credential(
                    key=w.p256_space_key, header={"kid": "#atproto_space"}, payload={"iss": w.p256_authority}
                )
            ),
        ),
        error="InvalidToken",
    ),
    ReaderCase(
        "credential-signed-by-another-key",
        _req(lambda w: w.signed(w.credential(key=PrivateKey.generate("ES256K")))),
        error="InvalidToken",
    ),
    ReaderCase(
        "high-s-credential", _req(lambda w: w.signed(w.credential(make_high_s=True))), error="InvalidToken"
    ),
    # step 4: audience → BadSpaceSignature
    ReaderCase(
        "wrong-audience",
        _req(lambda w: w.signed(w.credential(), audience="did:web:elsewhere.example")),
        error="BadSpaceSignature",
    ),
    ReaderCase(
        "audience-with-fragment",
        _req(lambda w: w.signed(w.credential(), audience=w.service_did + "#engram")),
        error="BadSpaceSignature",
    ),
    # step 5: request signature → BadSpaceSignature
    ReaderCase("signed-by-another-holder-key", _req(_other_holder_credential), error="BadSpaceSignature"),
    ReaderCase(
        "der-signature", _req(lambda w: w.signed(w.credential(), der=True)), error="BadSpaceSignature"
    ),
    ReaderCase("tampered-audience-header", _req(_tampered_audience), error="BadSpaceSignature"),
    ReaderCase("tampered-authorization-scheme-case", _req(_tampered_scheme_case), error="BadSpaceSignature"),
    ReaderCase(
        "extra-unknown-param-created",
        _req(lambda w: w.signed(w.credential(), params=";created=1790000000")),
        error="BadSpaceSignature",
    ),
    ReaderCase(
        "extra-unknown-param-with-keyid",
        _req(lambda w: w.signed(w.credential(), params=w.holder_params() + ';nonce="abc"')),
        error="BadSpaceSignature",
    ),
    ReaderCase("secp256k1-holder-key", _req(_k256_holder), error="BadSpaceSignature"),
    ReaderCase(
        "keyid-not-cnf-kid",
        _req(
            lambda w: w.signed(
                w.credential(), params=f';keyid="{PrivateKey.generate("ES256").public_key.did_key}"'
            )
        ),
        error="BadSpaceSignature",
    ),
    ReaderCase(
        "keyid-as-did-fragment",
        _req(lambda w: w.signed(w.credential(), params=';keyid="did:web:x#atproto"')),
        error="BadSpaceSignature",
    ),
    ReaderCase(
        "alg-not-p256",
        _req(lambda w: w.signed(w.credential(), params=';alg="ecdsa-p384-sha384"')),
        error="BadSpaceSignature",
    ),
    ReaderCase(
        "alg-as-token-not-string",
        _req(lambda w: w.signed(w.credential(), params=";alg=ES256")),
        error="BadSpaceSignature",
    ),
    ReaderCase(
        "alg-token-form",
        _req(lambda w: w.signed(w.credential(), params=";alg=ecdsa-p256-sha256")),
        error="BadSpaceSignature",
    ),
    ReaderCase(
        "components-as-tokens",
        _req(lambda w: w.signed(w.credential(), inner="(authorization atproto-space-audience)")),
        error="BadSpaceSignature",
    ),
    ReaderCase(
        "component-with-parameter",
        _req(lambda w: w.signed(w.credential(), inner='("authorization";sf "atproto-space-audience")')),
        error="BadSpaceSignature",
    ),
    ReaderCase(
        "covers-only-authorization",
        _req(lambda w: w.signed(w.credential(), components=("authorization",))),
        error="BadSpaceSignature",
    ),
    ReaderCase(
        "covers-components-reversed",
        _req(lambda w: w.signed(w.credential(), components=("atproto-space-audience", "authorization"))),
        error="BadSpaceSignature",
    ),
    ReaderCase(
        "missing-signature",
        _req(lambda w: _without(w.signed(w.credential()), "Signature")),
        error="BadSpaceSignature",
    ),
    ReaderCase(
        "missing-signature-input",
        _req(lambda w: _without(w.signed(w.credential()), "Signature-Input")),
        error="BadSpaceSignature",
    ),
    ReaderCase(
        "other-label-only", _req(lambda w: w.signed(w.credential(), label="sig1")), error="BadSpaceSignature"
    ),
    ReaderCase(
        "duplicate-atproto-space-label",
        _req(lambda w: _dup(w.signed(w.credential()), "Signature-Input")),
        error="BadSpaceSignature",
    ),
    ReaderCase(
        "signature-not-structured",
        _req(lambda w: _replace(w.signed(w.credential()), "Signature", "atproto-space=not base64")),
        error="BadSpaceSignature",
    ),
    ReaderCase(
        "signature-truncated",
        _req(lambda w: _replace(w.signed(w.credential()), "Signature", "atproto-space=:" + "A" * 84 + ":")),
        error="BadSpaceSignature",
    ),
]

ACCEPTED: list[ReaderCase] = [
    ReaderCase("params-absent", _req(lambda w: w.signed(w.credential())), 200),
    ReaderCase(
        "keyid-then-alg", _req(lambda w: w.signed(w.credential(), params=w.holder_params("keyid,alg"))), 200
    ),
    ReaderCase(
        "alg-then-keyid", _req(lambda w: w.signed(w.credential(), params=w.holder_params("alg,keyid"))), 200
    ),
    ReaderCase("keyid-only", _req(lambda w: w.signed(w.credential(), params=w.holder_params("keyid"))), 200),
    ReaderCase("alg-only", _req(lambda w: w.signed(w.credential(), params=w.holder_params("alg"))), 200),
    ReaderCase("padded-base64", _req(lambda w: w.signed(w.credential(), pad=True)), 200),
    ReaderCase("unpadded-base64", _req(lambda w: w.signed(w.credential(), pad=False)), 200),
    ReaderCase("high-s-request-signature", _req(lambda w: w.signed(w.credential(), make_high_s=True)), 200),
    ReaderCase("es256k-authority-kid-atproto", _req(lambda w: w.signed(w.credential())), 200),
    ReaderCase(
        "es256-authority-kid-atproto-space", _req(lambda w: w.signed(w.p256_credential()), "p256"), 200
    ),
    ReaderCase("lowercase-scheme", _req(lambda w: w.signed(w.credential(), scheme="atproto-space")), 200),
    ReaderCase(
        "lifetime-exactly-3600",
        _req(lambda w: w.signed(w.credential(payload={"exp": int(w.now) + 3600}))),
        200,
    ),
    ReaderCase("other-signature-labels-ignored", _req(_other_label_too), 200),
]

ALL_CASES = REJECTED + ACCEPTED
