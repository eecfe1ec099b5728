"""A small XRPC client for the hosts engram syncs from: bounded time and size, errors as UpstreamError.

Every call has a total timeout (ENGRAM_SYNC_TIMEOUT) and a body cap, so a PDS that stalls or streams
garbage costs one bounded slot, never a stuck sync or unbounded memory.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson

from engram.outbound import OutboundPolicy, OutboundRefused, describe
from engram.sync.errors import MalformedAnswer, UpstreamError, retry_after_seconds, upstream_error

MAX_JSON_BYTES = 32 * 1024 * 1024
MAX_CAR_BYTES = 256 * 1024 * 1024


def endpoint_base(url: str) -> str:
    """A service endpoint from a DID document as a base URL; UpstreamError if it is not http(s)."""
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
    except ValueError:  # a malformed IPv6 literal ("https://[")
        raise UpstreamError("the service endpoint is not an http(s) URL") from None
    if parts.scheme not in ("http", "https") or not hostname:
        raise UpstreamError("the service endpoint is not an http(s) URL")
    return url.rstrip("/")


def check_endpoint(url: str, policy: OutboundPolicy) -> str:
    """Service endpoints come from DID documents anyone can publish: refuse internal IP literals in any
    spelling (the guarded session refuses names resolving to them), and plain http outside dev mode,
    since every sync request carries an app password or a token (docs/security.md#outbound-requests)."""
    base = endpoint_base(url)
    try:
        policy.check_url(base, credential=True)
    except OutboundRefused as exc:
        raise UpstreamError(
            f"service endpoint refused: {exc} (docs/security.md#outbound-requests: ENGRAM_DEV, ENGRAM_OUTBOUND_ALLOW)"
        ) from None
    return base


class XrpcClient:
    def __init__(self, session: aiohttp.ClientSession, timeout: float, policy: OutboundPolicy):
        self._session = session  # the guarded one (engram/outbound.py)
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._policy = policy

    async def query(
        self, base: str, nsid: str, params: dict[str, Any], headers: dict[str, str]
    ) -> dict[str, Any]:
        body = await self._call("GET", base, nsid, params=params, headers=headers, limit=MAX_JSON_BYTES)
        return _json_object(body, nsid)

    async def query_bytes(
        self, base: str, nsid: str, params: dict[str, Any], headers: dict[str, str]
    ) -> bytes:
        return await self._call("GET", base, nsid, params=params, headers=headers, limit=MAX_CAR_BYTES)

    async def procedure(
        self, base: str, nsid: str, body: dict[str, Any] | None, headers: dict[str, str]
    ) -> dict[str, Any]:
        data = orjson.dumps(body) if body is not None else None
        hdrs = {**headers, "Content-Type": "application/json"} if data is not None else headers
        raw = await self._call("POST", base, nsid, data=data, headers=hdrs, limit=MAX_JSON_BYTES)
        return _json_object(raw, nsid) if raw.strip() else {}

    async def _call(self, method: str, base: str, nsid: str, *, limit: int, **kw: Any) -> bytes:
        url = f"{check_endpoint(base, self._policy)}/xrpc/{nsid}"
        params = kw.pop("params", None)
        if params is not None:
            kw["params"] = {
                k: ("true" if v is True else "false" if v is False else str(v))
                for k, v in params.items()
                if v is not None
            }
        try:
            async with self._session.request(
                method, url, timeout=self._timeout, allow_redirects=False, **kw
            ) as resp:
                body = bytearray()
                async for chunk in resp.content.iter_chunked(65536):
                    body += chunk
                    if len(body) > limit:
                        raise UpstreamError(f"{nsid}: answer larger than {limit} bytes")
                if resp.status != 200:
                    error = _error_name(bytes(body))
                    retry_after = retry_after_seconds(resp.headers.get("Retry-After"), time.time())
                    raise upstream_error(
                        f"{nsid} answered {resp.status} {error or ''}".strip(),
                        error,
                        resp.status,
                        retry_after,
                    )
                return bytes(body)
        except TimeoutError:
            raise UpstreamError(f"{nsid}: no answer in time") from None
        except (aiohttp.ClientError, OSError) as e:
            raise UpstreamError(f"{nsid}: {describe(e)}") from None


def _json_object(body: bytes, nsid: str) -> dict[str, Any]:
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise MalformedAnswer(f"{nsid}: answer is not JSON") from None
    if not isinstance(value, dict):
        raise MalformedAnswer(f"{nsid}: answer is not a JSON object")
    return value


def _error_name(body: bytes) -> str | None:
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    error = value.get("error") if isinstance(value, dict) else None
    return error if isinstance(error, str) else None
