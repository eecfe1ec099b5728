"""Relaying a request to the node that holds its space's lease, and its answer back, unchanged.

The request keeps its method, path, query, body and headers (Authorization, Signature-Input, Signature,
Atproto-Space-Audience, Content-Digest, Host...): the owner verifies the caller's signature itself, exactly
as if the caller had reached it directly, which works because every node shares engram's DID, public URL
and keys. Only hop-by-hop headers are dropped, and `X-Engram-Forwarded-By` is added: the loop guard (a
forwarded request is never forwarded again). The header carries an HMAC under a key derived from that
shared signing key, over the sender, a timestamp, the method, the target and the body, so only a node can
set it: a client sending one of its own is routed like any other request (docs/scale-out.md#forwarding). The answer's status, headers and body come back verbatim; the
session does not decompress, so a compressed body is relayed as it came.

One `aiohttp.ClientSession` with keep-alive connections to the peers serves every forward.
docs/scale-out.md#forwarding.
"""

from __future__ import annotations

import hashlib
import hmac
import time

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from engram.errors import Unavailable

FORWARDED_BY = "X-Engram-Forwarded-By"
# Hop-by-hop headers, plus the framing one aiohttp recomputes for the body it sends
# (docs/scale-out.md#forwarding).
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
    }
)
HOP_WINDOW_S = 60  # a signed hop is honoured this long (nodes' clocks agree to well within it)
_STREAM_ABOVE = 1 << 20  # answers bigger than this (or of unknown size: exportSpace's tar) are streamed


def hop_key(signing_key) -> bytes:
    """The nodes' shared HMAC key, derived from engram's signing key (the same on every node)."""
    return hmac.new(signing_key.to_multibase().encode(), b"engram cluster forwarding v1", "sha256").digest()


def _hop_mac(key: bytes, node_id: str, ts: int, method: str, target: str, body: bytes) -> str:
    message = f"{node_id}\n{ts}\n{method}\n{target}\n{hashlib.sha256(body).hexdigest()}".encode()
    return hmac.new(key, message, "sha256").hexdigest()


def sign_hop(
    key: bytes, node_id: str, method: str, target: str, body: bytes, now: float | None = None
) -> str:
    """The `X-Engram-Forwarded-By` value: `<node id>;<unix s>;<hmac>`."""
    ts = int(time.time() if now is None else now)
    return f"{node_id};{ts};{_hop_mac(key, node_id, ts, method, target, body)}"


def verified_hop(
    key: bytes, value: str | None, method: str, target: str, body: bytes, now: float | None = None
) -> str | None:
    """The sending node's id if `value` is a hop a node signed for this very request recently; else None."""
    if not value:
        return None
    parts = value.rsplit(";", 2)  # a node id may itself hold ';'
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    node_id, ts, mac = parts[0], int(parts[1]), parts[2]
    if abs((time.time() if now is None else now) - ts) > HOP_WINDOW_S:
        return None
    if not hmac.compare_digest(mac, _hop_mac(key, node_id, ts, method, target, body)):
        return None
    return node_id


def peer_session(timeout_s: float) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0, limit_per_host=64, keepalive_timeout=60),
        timeout=aiohttp.ClientTimeout(total=timeout_s, connect=min(timeout_s, 2.0)),
        auto_decompress=False,
        # One session serves every caller: a cookie one owner sets must never ride along on another caller's
        # request (and cookie handling is work for nothing; engram's XRPC answers set none).
        cookie_jar=aiohttp.DummyCookieJar(),
        # Nothing of the client's own: the peer sees exactly the caller's headers.
        skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
    )


async def forward(
    session: aiohttp.ClientSession,
    base_url: str,
    request: web.Request,
    body: bytes,
    node_id: str,
    key: bytes,
) -> web.StreamResponse:
    """Send `request` (its body already read: `body`) to `base_url` and relay the answer. Raises
    `Unavailable("OwnerUnavailable")` when the owner cannot be reached."""
    headers = CIMultiDict((k, v) for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP)
    headers[FORWARDED_BY] = sign_hop(key, node_id, request.method, request.raw_path, body)
    try:
        async with session.request(
            request.method,
            # The target exactly as the caller sent it (raw, not re-quoted): what a signature covers stays
            # byte-identical, and yarl skips re-parsing a long query (a base64 vector).
            URL(base_url + request.raw_path, encoded=True),
            headers=headers,
            data=body if body else None,
            allow_redirects=False,
        ) as answer:
            relayed = CIMultiDict((k, v) for k, v in answer.headers.items() if k.lower() not in HOP_BY_HOP)
            size = answer.content_length
            if size is not None and size <= _STREAM_ABOVE:
                return web.Response(status=answer.status, body=await answer.read(), headers=relayed)
            out = web.StreamResponse(status=answer.status, headers=relayed)
            await out.prepare(request)
            try:
                async for chunk in answer.content.iter_chunked(65536):
                    await out.write(chunk)
            except (aiohttp.ClientError, TimeoutError):
                return out  # headers are gone already: the body is cut short, as the owner's own would be
            await out.write_eof()
            return out
    except (aiohttp.ClientConnectionError, TimeoutError) as exc:
        raise Unavailable(
            f"the node serving this space did not answer ({type(exc).__name__}); retry",
            "OwnerUnavailable",
            retry_after=1,
        ) from exc
