"""Slow, malformed and vanishing clients over real sockets, against the server `engram serve` runs
(EngramAppRunner): header deadline, keep-alive timeout, connection cap, body deadline, JSON parser errors,
and client hang-ups that are not 500s. Timeouts are shortened; assertions are about what happened (closed,
answered), never how fast."""

from __future__ import annotations

import asyncio
import logging

import orjson
import pytest
from aiohttp import ClientSession
from support.api import settings_with
from support.serving import EngramTestServer, raw_exchange, split_response

from engram.app import create_app
from engram.app_keys import context_key
from engram.serving.request_limits import max_request_line

DESCRIBE = "/xrpc/garden.engram.describeService"
CREATE_SPACE = "/xrpc/garden.engram.admin.createSpace"
BOUND_S = 15.0  # generous: only bounds a hung test, never asserts speed


@pytest.fixture
async def serve(settings):
    servers = []

    async def start(**changes) -> EngramTestServer:
        server = EngramTestServer(await create_app(settings_with(settings, **changes)), host="127.0.0.1")
        await server.start_server()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.close()


async def _poll(condition, what: str) -> None:
    loop = asyncio.get_running_loop()
    give_up = loop.time() + BOUND_S
    while not condition():
        assert loop.time() < give_up, f"gave up waiting for {what}"
        await asyncio.sleep(0.02)


async def _describe_ok(port: int) -> bool:
    async with ClientSession() as session, session.get(f"http://127.0.0.1:{port}{DESCRIBE}") as r:
        return r.status == 200 and "did" in await r.json()


def _no_tracebacks(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


# -- malformed requests are answered {error, message}, with no traceback logged --------------------------


def _long_line(limit: int) -> bytes:
    return f"GET {DESCRIBE}?pad={'a' * (limit + 10)} HTTP/1.1\r\nHost: x\r\n\r\n".encode()


def _many_headers(_limit: int) -> bytes:
    headers = "".join(f"X-Filler-{i}: {i}\r\n" for i in range(200))
    return f"GET {DESCRIBE} HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode()


def _bad_content_length(_limit: int) -> bytes:
    return f"POST {CREATE_SPACE} HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n".encode()


def _long_header(_limit: int) -> bytes:
    return f"GET {DESCRIBE} HTTP/1.1\r\nHost: x\r\nX-Big: {'b' * 40000}\r\n\r\n".encode()


@pytest.mark.parametrize("build", [_long_line, _many_headers, _bad_content_length, _long_header])
async def test_parser_errors_answer_json_without_a_traceback(serve, caplog, build):
    caplog.set_level(logging.DEBUG)
    server = await serve()
    limit = max_request_line(server.app[context_key].registry)
    status, headers, body = split_response(await raw_exchange(server.port, build(limit), timeout=BOUND_S))
    assert status == 400
    assert headers["content-type"].startswith("application/json")
    payload = orjson.loads(body)
    assert payload["error"] == "InvalidRequest" and payload["message"]
    assert _no_tracebacks(caplog) == []
    assert await _describe_ok(server.port)  # and the server carries on


async def test_the_longest_query_the_lexicons_allow_passes_the_parser(serve):
    """Every searchMemories parameter at its lexicon maximum, every byte percent-encoded: the request
    line limit derived from the lexicons admits it (the answer is the XRPC layer's, not the parser's)."""
    server = await serve()
    params = {
        "vector": "%41" * 43000,
        "q": "%E6%97%A5" * (4000 // 3),
        "model": "%6D" * 1024,
        "space": "%73" * 1024,
        "modelDigest": "%64" * 1024,
    }
    query = "&".join(f"{k}={v}" for k, v in params.items())
    request = (
        f"GET /xrpc/garden.engram.searchMemories?{query} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    status, headers, body = split_response(await raw_exchange(server.port, request.encode(), timeout=BOUND_S))
    assert headers["content-type"].startswith("application/json")
    assert "longer than" not in orjson.loads(body)["message"]
    assert status in (400, 401)


# -- slow clients --------------------------------------------------------------------------------------


async def test_slowloris_half_requests_are_closed_and_others_still_served(serve):
    server = await serve(header_timeout_ms=400)
    slow = []
    for i in range(20):
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(f"GET {DESCRIBE} HTTP/1.1\r\nHost: x\r\nX-Slow-{i}: ".encode())
        slow.append((reader, writer))

    async def trickle() -> bytes:
        """A client that keeps sending a header byte at a time: the deadline is total, not per byte."""
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(f"GET {DESCRIBE} HTTP/1.1\r\nX-Trickle: ".encode())
        read = asyncio.ensure_future(reader.read())
        try:
            while not read.done():
                try:
                    writer.write(b"a")
                    await writer.drain()
                except ConnectionError:
                    break
                await asyncio.wait([read], timeout=0.05)
            return await read
        finally:
            writer.close()

    trickler = asyncio.ensure_future(asyncio.wait_for(trickle(), BOUND_S))
    assert await _describe_ok(server.port)  # served while the slow ones hang around
    for reader, writer in slow:
        assert await asyncio.wait_for(reader.read(), BOUND_S) == b""  # closed, no answer
        writer.close()
    assert await trickler == b""
    assert await _describe_ok(server.port)


async def test_idle_keep_alive_connections_are_closed(serve):
    server = await serve(keepalive_timeout_ms=300)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(f"GET {DESCRIBE} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), BOUND_S)
        status, headers, _ = split_response(head)
        assert status == 200
        await reader.readexactly(int(headers["content-length"]))
        assert await asyncio.wait_for(reader.read(), BOUND_S) == b""  # then closed for idling
    finally:
        writer.close()


async def test_a_body_that_does_not_arrive_gets_408(serve):
    server = await serve(body_timeout_ms=300)
    request = (
        f"POST {CREATE_SPACE} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        'Content-Length: 100\r\n\r\n{"name"'
    )
    status, headers, body = split_response(await raw_exchange(server.port, request.encode(), timeout=BOUND_S))
    assert status == 408 and headers["content-type"].startswith("application/json")
    assert orjson.loads(body)["error"] == "RequestTimeout"


async def test_connection_cap_turns_the_next_client_away_with_503(serve):
    server = await serve(max_connections=3, header_timeout_ms=60_000)
    held = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(3)]
    await _poll(lambda: len(server.runner.server.connections) == 3, "three open connections")
    status, headers, body = split_response(await raw_exchange(server.port, b"", timeout=BOUND_S))
    assert status == 503 and headers["retry-after"] == "1"
    assert orjson.loads(body)["error"] == "ServiceUnavailable"
    for _, writer in held:
        writer.close()
    await _poll(lambda: len(server.runner.server.connections) == 0, "the held connections to close")
    assert await _describe_ok(server.port)


# -- clients that vanish -------------------------------------------------------------------------------


async def test_a_client_hanging_up_mid_body_is_not_a_500(serve, caplog):
    caplog.set_level(logging.DEBUG)
    server = await serve()
    metrics = server.app[context_key].metrics

    def count(status: str) -> float:
        return metrics.requests.labels("garden.engram.admin.createSpace", status)._value.get()

    _reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(
        f"POST {CREATE_SPACE} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        'Content-Length: 1000\r\n\r\n{"name": "half'.encode()
    )
    await writer.drain()
    await _poll(lambda: metrics.in_flight._value.get() >= 1, "the request to reach the handler")
    writer.close()
    await _poll(lambda: count("499") == 1, "the hang-up to be recorded")
    assert count("500") == 0
    assert _no_tracebacks(caplog) == []
