"""Admin DID-signed requests (docs/protocol.md#admin-signatures)."""

import pytest
from aiohttp import web
from multidict import CIMultiDict
from support.fakes.static_resolver import StaticResolver

from engram.auth.admin_signature import AdminVerifier, sign_admin_request
from engram.auth.crypto_keys import PrivateKey
from engram.errors import NotAllowed, NotAuthenticated
from engram.xrpc.errors import http_status

PUBLIC = "https://engram.example.com"
OPERATOR = "did:plc:" + "o" * 24
PATH = "/xrpc/garden.engram.admin.importMemories?space=at%3A%2F%2Fx&dry=1"


class Clock:
    t = 1_790_000_000.0

    def __call__(self):
        return self.t


@pytest.fixture(params=["ES256", "ES256K"])
def setup(request):
    key, clock = PrivateKey.generate(request.param), Clock()
    resolver = StaticResolver()
    resolver.add_key(OPERATOR, key.public_key)
    return key, clock, resolver, AdminVerifier(PUBLIC + "/", [OPERATOR], resolver, now=clock)


def _signed(key, clock, body=b'{"a":1}', method="POST", url=PUBLIC + PATH, did=OPERATOR, **kw):
    return CIMultiDict(
        sign_admin_request(key, did, method, url, body, {"Content-Type": "application/json"}, now=clock, **kw)
    )


async def _refused(verifier, *args, error="BadAdminSignature"):
    with pytest.raises((NotAuthenticated, NotAllowed)) as e:
        await verifier.verify(*args)
    assert e.value.name == error, e.value.message
    return e.value


async def test_valid_request_from_an_allowed_did(setup):
    key, clock, _, verifier = setup
    headers = _signed(key, clock)
    assert 'tag="engram-admin"' in headers["Signature-Input"] and "nonce=" in headers["Signature-Input"]
    assert await verifier.verify("POST", PATH, headers, b'{"a":1}') == OPERATOR


async def test_empty_body_get_still_carries_a_signed_digest(setup):
    key, clock, _, verifier = setup
    headers = _signed(key, clock, body=b"", method="GET")
    assert "content-digest" in headers["Signature-Input"]
    assert await verifier.verify("GET", PATH, headers, b"") == OPERATOR
    del headers["Content-Digest"]
    await _refused(verifier, "GET", PATH, headers, b"")


async def test_unsigned_request(setup):
    _, _, _, verifier = setup
    await _refused(verifier, "POST", PATH, CIMultiDict({"Content-Type": "application/json"}), b"{}")


async def test_replayed_nonce(setup):
    key, clock, _, verifier = setup
    headers = _signed(key, clock, nonce="n-1")
    await verifier.verify("POST", PATH, headers, b'{"a":1}')
    clock.t += 10
    err = await _refused(verifier, "POST", PATH, headers, b'{"a":1}')
    assert "nonce" in err.message


async def test_stale_or_future_created(setup):
    key, clock, _, verifier = setup
    headers = _signed(key, clock)
    clock.t += 306
    err = await _refused(verifier, "POST", PATH, headers, b'{"a":1}')
    assert "older" in err.message
    clock.t -= 306 + 60
    await _refused(verifier, "POST", PATH, headers, b'{"a":1}')


async def test_did_not_on_the_allow_list_is_forbidden(setup):
    key, clock, resolver, verifier = setup
    stranger = "did:plc:" + "s" * 24
    resolver.add_key(stranger, key.public_key)
    err = await _refused(
        verifier, "POST", PATH, _signed(key, clock, did=stranger), b'{"a":1}', error="Forbidden"
    )
    assert http_status(err) == 403
    assert resolver.calls[(stranger, False)] == 0  # refused before any resolution


async def test_signature_by_a_key_the_did_does_not_hold(setup):
    key, clock, resolver, verifier = setup
    await _refused(verifier, "POST", PATH, _signed(PrivateKey.generate(key.alg), clock), b'{"a":1}')
    assert resolver.calls[(OPERATOR, True)] == 1  # a crypto failure retries once with a fresh document


async def test_tampered_body_url_or_method(setup):
    key, clock, _, verifier = setup
    await _refused(verifier, "POST", PATH, _signed(key, clock), b'{"a":2}')
    await _refused(verifier, "POST", PATH.replace("dry=1", "dry=0"), _signed(key, clock), b'{"a":1}')
    await _refused(verifier, "PUT", PATH, _signed(key, clock), b'{"a":1}')
    other_host = _signed(key, clock, url="https://evil.example" + PATH)
    await _refused(verifier, "POST", PATH, other_host, b'{"a":1}')


async def test_wrong_tag_or_keyid_shape(setup):
    key, clock, _, verifier = setup
    headers = _signed(key, clock)
    headers["Signature-Input"] = headers["Signature-Input"].replace('tag="engram-admin"', 'tag="other"')
    await _refused(verifier, "POST", PATH, headers, b'{"a":1}')
    headers = _signed(key, clock)
    headers["Signature-Input"] = headers["Signature-Input"].replace("#atproto", "#atproto_space")
    await _refused(verifier, "POST", PATH, headers, b'{"a":1}')


async def test_through_a_real_server_behind_a_proxy_url(aiohttp_client):
    """The client signs the public https URL; the server sees http://127.0.0.1:port and must rebuild it."""
    key, clock = PrivateKey.generate("ES256"), Clock()
    resolver = StaticResolver()
    resolver.add_key(OPERATOR, key.public_key)
    verifier = AdminVerifier(PUBLIC, [OPERATOR], resolver, now=clock)

    async def admin(request: web.Request) -> web.Response:
        try:
            did = await verifier.verify(
                request.method, request.raw_path, request.headers, await request.read()
            )
        except (NotAuthenticated, NotAllowed) as e:
            return web.json_response(e.payload(), status=http_status(e))
        return web.json_response({"did": did})

    app = web.Application()
    app.router.add_post("/xrpc/garden.engram.admin.importMemories", admin)
    client = await aiohttp_client(app)
    body = b'{"memories":[]}'
    headers = sign_admin_request(
        key, OPERATOR, "POST", PUBLIC + PATH, body, {"Content-Type": "application/json"}, now=clock
    )
    resp = await client.post(PATH, data=body, headers=headers)
    assert (resp.status, await resp.json()) == (200, {"did": OPERATOR})
    resp = await client.post(PATH, data=body, headers=headers)
    assert (resp.status, (await resp.json())["error"]) == (401, "BadAdminSignature")
    resp = await client.post(PATH, data=body)
    assert resp.status == 401
