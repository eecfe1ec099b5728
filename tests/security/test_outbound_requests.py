"""No outbound request reaches an internal address, in any spelling, after name resolution
(docs/security.md#outbound-requests). A loopback canary records whether anything reached it; each path a
caller can aim (a delegation token's did:web issuer, a registered syncer, a synced account's PDS) is tried
with every spelling, and a control run with loopback allowed shows the canary would have seen it."""

from __future__ import annotations

import asyncio
import ipaddress
import re
import time
from dataclasses import replace
from urllib.parse import quote

import aiohttp
import pytest
from support.fakes.did_server import random_plc_did
from support.member_world import delegation_token, exchange_headers
from support.outbound_world import CANARY_NAME, NamesResolver

from engram.auth.crypto_keys import PrivateKey
from engram.auth.did_document import Service
from engram.outbound import OutboundPolicy, describe, guarded_session

# 127.0.0.1 as a caller may spell it; the C library's inet_aton reads every one of these as 127.0.0.1.
LOOPBACK_SPELLINGS = [
    "127.0.0.1", "0x7f000001", "0X7F000001", "0x7f.1", "0x7f.0.0.1", "0177.0.0.1", "017700000001",
    "2130706433", "127.1", "localhost", CANARY_NAME,
]  # fmt: skip
# What a caller must never read: exception classes, socket details (the canary's port is added per test).
LEAKS = re.compile(r"Client\w*Error|Connector|SSL|Errno|errno|Connect call failed|getaddrinfo", re.IGNORECASE)


async def _settle() -> None:
    """Give a connection attempt that slipped through time to land on the canary (it would be immediate)."""
    for _ in range(20):
        await asyncio.sleep(0.01)


def _clean(message: str, port: int) -> bool:
    return not LEAKS.search(message) and str(port) not in message.replace(f"%3A{port}", "")


# -- the guarded client itself ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "0x7f000001", CANARY_NAME]
)
async def test_the_guarded_client_refuses_loopback_after_resolution(canary, host):
    session = guarded_session(OutboundPolicy(), resolver=NamesResolver())
    async with session:
        with pytest.raises(aiohttp.ClientError) as info:
            await session.get(f"http://{host}:{canary.port}/", allow_redirects=False)
    await _settle()
    assert canary.contacts == 0
    assert describe(info.value) == "refused: not a public https host"


async def test_the_allow_list_and_dev_mode_let_loopback_through(canary):
    for policy in (OutboundPolicy(allow=(ipaddress.ip_network("127.0.0.0/8"),)), OutboundPolicy(dev=True)):
        before = canary.contacts
        async with guarded_session(policy, resolver=NamesResolver()) as session:
            with pytest.raises(aiohttp.ClientError):  # the canary closes without answering HTTP
                await session.get(f"http://{CANARY_NAME}:{canary.port}/", allow_redirects=False)
        assert canary.contacts > before  # the canary works: a request let through is seen


async def test_a_redirect_to_loopback_is_refused_at_the_hop(aiohttp_server, canary):
    """A public-looking host that redirects inward: the hop is a new connection, checked like the first."""
    from aiohttp import web

    app = web.Application()

    async def inward(_request):
        raise web.HTTPFound(f"http://127.0.0.1:{canary.port}/")

    app.router.add_get("/", inward)
    origin = await aiohttp_server(app, host="127.0.0.2")
    policy = OutboundPolicy(allow=(ipaddress.ip_network("127.0.0.2/32"),))
    async with guarded_session(policy) as session:
        with pytest.raises(aiohttp.ClientError) as info:
            await session.get(f"http://127.0.0.2:{origin.port}/")  # following redirects
    await _settle()
    assert canary.contacts == 0 and describe(info.value).startswith("refused")


@pytest.mark.parametrize(
    ("address", "internal"),
    [("10.1.2.3", True), ("172.16.0.1", True), ("192.168.1.1", True), ("169.254.169.254", True),
     ("100.64.0.1", True), ("224.0.0.1", True), ("0.0.0.0", True), ("::1", True), ("fe80::1", True),
     ("fc00::1", True), ("ff02::1", True), ("::", True), ("::ffff:10.0.0.1", True),
     ("2002:7f00:1::", True), ("64:ff9b::7f00:1", True), ("::127.0.0.1", True),
     ("93.184.216.34", False), ("2606:4700::1111", False), ("::ffff:93.184.216.34", False)],
)  # fmt: skip
def test_which_addresses_are_internal(address, internal):
    assert OutboundPolicy().permits(ipaddress.ip_address(address)) is not internal


# -- 1. getSpaceCredential: a delegation token's did:web issuer, before any auth ------------------------


def _web_issuer_headers(host, hostname: str, port: int) -> dict[str, str]:
    iss = "did:web:" + quote(f"{hostname}:{port}", safe="")
    token = delegation_token(PrivateKey.generate("ES256K"), iss, host.space)
    return exchange_headers(PrivateKey.generate("ES256"), token)


@pytest.mark.parametrize("hostname", LOOPBACK_SPELLINGS)
async def test_a_did_web_issuer_on_loopback_is_never_fetched(host, canary, test_resolver, hostname):
    r = await host.exchange(_web_issuer_headers(host, hostname, canary.port))
    body = await r.json()
    assert r.status == 401 and body["error"] == "InvalidDelegationToken"
    await _settle()
    assert canary.contacts == 0
    assert _clean(body["message"], canary.port), body["message"]


async def test_control_a_did_web_issuer_is_fetched_when_loopback_is_allowed(
    start_engram, guarded_settings, canary
):
    from support.member_world import MODEL, Host

    allowed = replace(guarded_settings, outbound_allow=(ipaddress.ip_network("127.0.0.0/8"),))
    client = await start_engram(allowed)
    space = await client.ctx.services.spaces.create_hosted("team-notes", model=MODEL)
    host = Host(client, client.ctx, space.uri)
    r = await host.exchange(_web_issuer_headers(host, CANARY_NAME, canary.port))
    body = await r.json()
    assert r.status == 401
    assert canary.contacts >= 1  # the TLS ClientHello arrived: without the guard every spelling would
    assert _clean(body["message"], canary.port), body["message"]  # and the failure still names nothing


# -- 2. registerNotify: a member's syncer endpoint ---------------------------------------------------------


def _space_host_headers(host) -> dict[str, str]:
    from engram.auth.credential import mint_space_credential
    from engram.auth.space_signature import sign_space_request

    authority = host.ctx.settings.service_did
    holder = PrivateKey.generate("ES256")
    credential = mint_space_credential(
        host.ctx.keyring.private_key(authority), issuer=authority, space=host.space,
        holder_did_key=holder.public_key.did_key,
    )  # fmt: skip
    return sign_space_request(holder, credential, authority)


def _syncer(plc, endpoint: str) -> str:
    did = random_plc_did()
    plc.register(did, PrivateKey.generate("ES256").public_key,
                 {"#atproto_space_syncer": Service("AtprotoSpaceSyncer", endpoint)})  # fmt: skip
    return did


async def _register(host, did: str):
    return await host.client.post(
        "/xrpc/com.atproto.space.registerNotify",
        json={"space": host.space, "service": did},
        headers=_space_host_headers(host),
    )


@pytest.mark.parametrize(
    "hostname", [s for s in LOOPBACK_SPELLINGS if s != CANARY_NAME] + ["[::ffff:127.0.0.1]", "[::1]"]
)
async def test_a_syncer_endpoint_on_loopback_is_refused_at_registration(host, plc, canary, hostname):
    r = await _register(host, _syncer(plc, f"https://{hostname}:{canary.port}"))
    body = await r.json()
    assert r.status == 400 and body["error"] == "ServiceNotResolvable", body
    assert _clean(body["message"], canary.port)
    await _write_one(host)
    await _settle()
    assert canary.contacts == 0


async def test_a_syncer_name_resolving_to_loopback_gets_no_notification(host, plc, canary):
    host.ctx.notifier.backoff = (0.01, 0.01)
    r = await _register(host, _syncer(plc, f"https://{CANARY_NAME}:{canary.port}"))
    assert r.status == 200, await r.text()  # a name: only its addresses can tell, at delivery
    failed = host.ctx.notifier.failed
    await _write_one(host)
    deadline = time.monotonic() + 15
    while host.ctx.notifier.failed == failed:  # every retry refused, then given up
        assert time.monotonic() < deadline, "the notification was never given up"
        await asyncio.sleep(0.01)
    assert canary.contacts == 0


async def test_a_plain_http_syncer_endpoint_is_refused_outside_dev_mode(host, plc, start_engram):
    r = await _register(host, _syncer(plc, "http://syncer.example"))
    assert r.status == 400 and "https" in (await r.json())["message"]


async def _write_one(host) -> None:
    from support.member_world import MODEL

    from engram.store import Embedding, MemoryWrite

    await host.ctx.services.memories.write(host.space, [MemoryWrite(
        author=host.ctx.settings.service_did, text="a write that would be announced",
        embedding=Embedding(MODEL.model, MODEL.digest, MODEL.dims, [0.25] * MODEL.dims))])  # fmt: skip


# -- 3. addSyncedSpace: a DID document naming its PDS on loopback (the app password goes there) --------------


@pytest.mark.parametrize(
    "pds",
    ["http://0x7f000001:{port}", "https://0x7f000001:{port}", "https://127.1:{port}",
     "https://2130706433:{port}", "https://[::ffff:127.0.0.1]:{port}", "https://" + CANARY_NAME + ":{port}",
     "http://" + CANARY_NAME + ":{port}"],
)  # fmt: skip
async def test_sync_never_sends_the_app_password_to_loopback(
    start_engram, guarded_settings, plc, canary, pds
):
    engram = await start_engram(replace(guarded_settings, poll_interval=0, sync_timeout=2.0))
    account = random_plc_did()
    plc.register(account, PrivateKey.generate("ES256K").public_key,
                 {"#atproto_pds": Service("AtprotoPersonalDataServer", pds.format(port=canary.port))})  # fmt: skip
    space = f"at://{random_plc_did()}/space/garden.engram.space/team"
    await engram.ctx.syncer.add_space(space, account, "app-password-secret")
    from engram.store import synced as store_synced

    deadline = time.monotonic() + 15
    while (synced := await engram.ctx.store.read(store_synced.get_synced_space, space)).last_error is None:
        assert time.monotonic() < deadline, "no sync pass failed"
        await asyncio.sleep(0.02)
    await _settle()
    assert canary.contacts == 0 and b"app-password-secret" not in canary.received
    assert "refused" in synced.last_error and _clean(synced.last_error, canary.port), synced.last_error


# -- 4. client attestations: the metadata URL is the attestation's iss ---------------------------------------


async def _exchange_attested_by(host, plc, client_id: str) -> dict:
    """A member's credential exchange with a client attestation naming `client_id`: refused (401)."""
    import secrets

    from support.member_world import new_member

    from engram.auth.client_attestation import ATTESTATION_TYP
    from engram.auth.jws import sign_jws

    member = new_member(plc)
    await host.ctx.services.members.grant(host.space, member.did)
    now = int(time.time())
    claims = {"iss": client_id, "sub": client_id, "aud": f"{host.ctx.settings.service_did}#atproto_space_host",
              "iat": now, "exp": now + 60, "jti": secrets.token_hex(8)}  # fmt: skip
    attestation = sign_jws(PrivateKey.generate("ES256"), {"typ": ATTESTATION_TYP, "kid": "k"}, claims)
    r = await host.exchange(member.headers(host.space), clientAttestation=attestation)
    body = await r.json()
    assert (r.status, body["error"]) == (401, "InvalidClientAttestation"), body
    return body


@pytest.mark.parametrize("hostname", LOOPBACK_SPELLINGS + ["[::ffff:127.0.0.1]"])
async def test_client_metadata_on_loopback_is_never_fetched(host, plc, canary, hostname):
    body = await _exchange_attested_by(host, plc, f"https://{hostname}:{canary.port}/client-metadata.json")
    await _settle()
    assert canary.contacts == 0
    assert _clean(body["message"], canary.port), body["message"]


# -- 5. URLs no request can be built from: refused as bad input, never a 500 ------------------------------

MALFORMED_HOSTS = ["a..b", "." + "a" * 10, "a" * 64 + ".example", "a...b"]


def test_check_url_refuses_what_no_request_can_be_built_from():
    from engram.outbound import OutboundRefused, valid_host_name

    policy = OutboundPolicy()
    for url in ["https://[", "https://[::1", "https://a..b/", "https://.example/", "https://x.example:99999/",
                "https://user:pw@x.example/", "https://user@x.example/", "https://" + "a" * 64 + ".example/",
                "ftp://x.example/"]:  # fmt: skip
        with pytest.raises(OutboundRefused):
            policy.check_url(url, credential=True)
    policy.check_url("https://x.example:8443/path", credential=True)  # the control: a plain public URL
    assert valid_host_name("bücher.example") and valid_host_name("x.example.")
    assert not valid_host_name("a..b") and not valid_host_name("⒈.example")


async def test_the_guarded_resolver_treats_an_invalid_name_as_one_that_does_not_resolve():
    policy = OutboundPolicy()
    async with guarded_session(policy) as session:
        for hostname in MALFORMED_HOSTS:
            with pytest.raises(aiohttp.ClientConnectorError) as failed:
                await session.get(f"https://{hostname}/")
            assert describe(failed.value) == "the host could not be reached"


@pytest.mark.parametrize("hostname", MALFORMED_HOSTS)
async def test_a_did_web_issuer_with_a_malformed_host_is_a_401(host, hostname):
    r = await host.exchange(_web_issuer_headers(host, hostname, 443))
    body = await r.json()
    assert (r.status, body["error"]) == (401, "InvalidDelegationToken"), body


@pytest.mark.parametrize(
    "endpoint", ["https://user:pw@x.example", "https://a..b", "https://[", "https://x.example:99999"]
)
async def test_a_syncer_endpoint_no_request_can_reach_is_refused_at_registration(host, plc, endpoint):
    r = await _register(host, _syncer(plc, endpoint))
    body = await r.json()
    assert (r.status, body["error"]) == (400, "ServiceNotResolvable"), body


@pytest.mark.parametrize("hostname", ["[", "a..b", "⒈.example", "a" * 64 + ".example"])
async def test_client_metadata_with_a_malformed_url_is_a_401(host, plc, hostname):
    await _exchange_attested_by(host, plc, f"https://{hostname}/client-metadata.json")
