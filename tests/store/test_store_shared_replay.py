"""State every serving process shares through the store (docs/internals.md#using-every-core): replay
claims and console sessions. Two `Store`s opened on one file stand in for two processes: each has its own
connections and writer thread, exactly as a second `engram serve` process would."""

import pytest
from support.fakes.static_resolver import StaticResolver

from engram.auth.crypto_keys import PrivateKey
from engram.auth.replay import MemoryReplayGuard
from engram.auth.service_jwt import ServiceAuthVerifier, mint_service_jwt
from engram.console.sessions import OPERATOR, READER, SessionStore
from engram.errors import NotAuthenticated
from engram.store.replays import StoreReplayGuard, claim, claim_key

NOW = 1_790_000_000.0
ENGRAM = "did:web:engram.example.com"
AUTHORITY = "did:plc:" + "b" * 24
LXM = "com.atproto.space.notifyWrite"


class Clock:
    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


async def test_a_claim_holds_across_stores_until_it_expires(two_stores):
    first, second = two_stores
    clock = Clock(NOW)
    a, b = StoreReplayGuard(first, clock), StoreReplayGuard(second, clock)
    assert await a.claim("admin_nonce", "did:plc:ops", "n1", NOW + 10)
    assert not await b.claim("admin_nonce", "did:plc:ops", "n1", NOW + 10)
    assert not await a.claim("admin_nonce", "did:plc:ops", "n1", NOW + 10)
    # Other scopes, issuers and ids are independent claims.
    assert await b.claim("service_jwt", "did:plc:ops", "n1", NOW + 10)
    assert await b.claim("admin_nonce", "did:plc:other", "n1", NOW + 10)
    assert await b.claim("admin_nonce", "did:plc:ops", "n2", NOW + 10)
    # Once expired the row is pruned (an expired id cannot verify anyway), so the table stays bounded.
    clock.now = NOW + 10
    assert await b.claim("admin_nonce", "did:plc:ops", "n3", NOW + 20)
    count = await first.read(lambda conn: conn.execute("SELECT COUNT(*) FROM replay_claims").fetchone()[0])
    assert count == 1


async def test_a_replay_whose_claim_lands_at_the_windows_edge_is_refused(two_stores):
    """A verifier checks the time, then claims: a replay checked just inside the window may claim just
    after the first claim expired and was pruned. A claim made at or after its own expiry is refused, so
    the id still verifies once, whichever store's clock the claim meets (both guards alike)."""
    first, second = two_stores
    clock = Clock(NOW)
    a, b = StoreReplayGuard(first, clock), StoreReplayGuard(second, clock)
    memory = MemoryReplayGuard(100, clock)
    for guard, other in ((a, b), (memory, memory)):
        assert await guard.claim("service_jwt", "did:plc:ops", "edge", NOW + 10)
        clock.now = NOW + 10  # the replay's time check passed a moment ago; its claim meets the expiry
        assert not await other.claim("service_jwt", "did:plc:ops", "edge", NOW + 10)
        clock.now = NOW + 10.001
        assert not await other.claim("service_jwt", "did:plc:ops", "edge", NOW + 10)
        clock.now = NOW


def test_claim_keys_keep_issuer_and_id_apart():
    assert claim_key("a", "bc") != claim_key("ab", "c")
    assert len(claim_key("did:plc:x", "j" * 10_000)) == 64  # bounded whatever the id's size


async def test_concurrent_claims_of_one_id_succeed_once(two_stores):
    first, second = two_stores
    key = claim_key("did:plc:ops", "raced")
    ms = int(NOW * 1000)
    outcomes = [await s.write(claim, "service_jwt", key, ms + 5000, ms) for s in (first, second, first)]
    assert outcomes == [True, False, False]


async def test_a_service_jwt_verifies_once_across_processes(two_stores):
    key = PrivateKey.generate("ES256K")
    resolver = StaticResolver()
    resolver.add_key(AUTHORITY, key.public_key)
    clock = Clock(NOW)
    verifiers = [
        ServiceAuthVerifier(ENGRAM, resolver, now=clock, replays=StoreReplayGuard(store, clock))
        for store in two_stores
    ]
    header = f"Bearer {mint_service_jwt(key, iss=AUTHORITY, aud=ENGRAM, lxm=LXM, now=clock)}"
    await verifiers[0].verify(header, LXM)
    with pytest.raises(NotAuthenticated) as refused:
        await verifiers[1].verify(header, LXM)
    assert refused.value.name == "JwtReplayed"


async def test_console_sessions_are_shared_and_end_everywhere(two_stores):
    first, second = two_stores
    clock = Clock(NOW)
    here, there = SessionStore(first, clock), SessionStore(second, clock)
    cookie, made = await here.start(OPERATOR)
    seen = await there.get(cookie)
    assert seen == made and seen.role == OPERATOR and seen.key_id is None
    assert await there.get(cookie + "x") is None and await there.get(None) is None

    reader_cookie, _ = await there.start(READER, key_id=7)
    assert (await here.get(reader_cookie)).key_id == 7
    await here.end_key(7)  # the key was revoked in one process: the session ends in every process
    assert await there.get(reader_cookie) is None

    await there.end(cookie)
    assert await here.get(cookie) is None


async def test_console_sessions_expire_and_are_pruned(two_stores):
    first, _ = two_stores
    clock = Clock(NOW)
    sessions = SessionStore(first, clock, ttl_s=60)
    old, _ = await sessions.start(OPERATOR)
    clock.now = NOW + 60
    assert await sessions.get(old) is None
    await sessions.start(OPERATOR)
    assert await sessions.count() == 1  # starting a session pruned the expired one
