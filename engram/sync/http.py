"""A small XRPC client for the hosts engram syncs from: bounded time and size, errors as UpstreamError.

Every call has a total timeout (ENGRAM_SYNC_TIMEOUT) and a body cap, so a PDS that stalls or streams
garbage costs one bounded slot, never a stuck sync or unbounded memory.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson

from engram.auth.did_resolver import _is_internal_ip_literal
from engram.sync.errors import UpstreamError

MAX_JSON_BYTES = 32 * 1024 * 1024
MAX_CAR_BYTES = 256 * 1024 * 1024


def check_endpoint(url: str, *, allow_internal: bool = False) -> str:
    """Service endpoints come from DID documents anyone can publish: unless ENGRAM_DEV is set, refuse
    loopback, private and link-local IP literals so a member's document cannot aim engram's requests at
    the operator's internal network (names resolving to such addresses need a connector-level check)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UpstreamError(f"service endpoint {url!r} is not an http(s) URL")
    if not allow_internal and _is_internal_ip_literal(parts.hostname):
        raise UpstreamError(
            f"service endpoint {url!r} is an internal address (allowed only with ENGRAM_DEV=1)"
        )
    return url.rstrip("/")


class XrpcClient:
    def __init__(self, session: aiohttp.ClientSession, timeout: float, *, allow_internal: bool = False):
        self._session = session
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._allow_internal = allow_internal

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
        url = f"{check_endpoint(base, allow_internal=self._allow_internal)}/xrpc/{nsid}"
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
                    raise UpstreamError(
                        f"{nsid} answered {resp.status} {error or ''}".strip(),
                        xrpc_error=error,
                        status=resp.status,
                    )
                return bytes(body)
        except TimeoutError:
            raise UpstreamError(f"{nsid}: no answer in time") from None
        except aiohttp.ClientError as e:
            raise UpstreamError(f"{nsid}: {type(e).__name__}") from None


def _json_object(body: bytes, nsid: str) -> dict[str, Any]:
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise UpstreamError(f"{nsid}: answer is not JSON") from None
    if not isinstance(value, dict):
        raise UpstreamError(f"{nsid}: answer is not a JSON object")
    return value


def _error_name(body: bytes) -> str | None:
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    error = value.get("error") if isinstance(value, dict) else None
    return error if isinstance(error, str) else None
