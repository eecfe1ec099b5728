"""Cost of reader auth on a cached credential vs one raw P-256 verify (same process, same run).

    .venv/bin/python scripts/bench_auth.py [--n 5000]

The ratio is the number to watch: header parsing + cache lookup + the RFC 9421 verify should stay close
to the single ECDSA verify it cannot avoid.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from multidict import CIMultiDict, CIMultiDictProxy

from engram.auth.credential import mint_space_credential
from engram.auth.crypto_keys import PrivateKey
from engram.auth.keyring import LocalKeyring
from engram.auth.reader import ReaderVerifier
from engram.auth.space_signature import sign_space_request

SERVICE_DID = "did:web:engram.example.com"


class KeyringSource:
    def __init__(self, keyring: LocalKeyring):
        self.keyring = keyring

    async def resolve(self, did: str, force_refresh: bool = False):
        return self.keyring.document(did)


def _per_call_us(fn, n: int, repeats: int = 5) -> float:
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        runs.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(runs)


async def _cached_reader(alg: str):
    """A ReaderVerifier with its credential cache filled, and the request headers to verify."""
    authority, key = "did:plc:" + "b" * 24, PrivateKey.generate(alg)  # type: ignore[arg-type]
    keyring = LocalKeyring()
    keyring.add(authority, key)
    space = f"at://{authority}/space/garden.engram.space/bench"
    holder = PrivateKey.generate("ES256")
    token = mint_space_credential(
        key, issuer=authority, space=space, holder_did_key=holder.public_key.did_key
    )
    headers = CIMultiDictProxy(CIMultiDict(sign_space_request(holder, token, SERVICE_DID)))
    verifier = ReaderVerifier(SERVICE_DID, KeyringSource(keyring))
    await verifier.verify(headers, space)
    return verifier, headers, space


async def _time_reader(verifier, headers, space, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        await verifier.verify(headers, space)
    return (time.perf_counter() - t0) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    holder = PrivateKey.generate("ES256")
    msg = b'"authorization": Atproto-Space ' + b"x" * 600
    sig = holder.sign(msg)
    k256 = PrivateKey.generate("ES256K")
    ksig = k256.sign(msg)

    async def run() -> tuple[list[float], list[float], list[float]]:
        verifier, headers, space = await _cached_reader("ES256K")
        raw, raw_k, cached = [], [], []
        for _ in range(args.rounds):  # interleaved rounds: machine noise hits both sides alike
            raw.append(
                _per_call_us(lambda: holder.public_key.verify(msg, sig, strict_low_s=False), args.n, 1)
            )
            raw_k.append(
                _per_call_us(lambda: k256.public_key.verify(msg, ksig, strict_low_s=True), args.n, 1)
            )
            cached.append(await _time_reader(verifier, headers, space, args.n))
        return raw, raw_k, cached

    raw, raw_k, cached = asyncio.run(run())
    ratios = [c / r for c, r in zip(cached, raw, strict=True)]
    print(f"raw P-256 verify (64-byte r||s), median:    {statistics.median(raw):8.1f} us")
    print(f"raw secp256k1 verify (coincurve), median:   {statistics.median(raw_k):8.1f} us")
    print(f"ReaderVerifier.verify, cached credential:   {statistics.median(cached):8.1f} us")
    print(
        f"ratio cached-request / raw P-256 (median of {args.rounds} interleaved rounds): {statistics.median(ratios):.2f}x"
    )


if __name__ == "__main__":
    main()
