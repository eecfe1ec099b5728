"""`engram serve` out of file descriptors: on asyncio's loop, its "socket.accept() out of system resource"
is logged rate-limited (once per interval, no traceback) instead of once per pending connection per retry;
on uvloop, libuv accepts and closes what it cannot hold (its reserve-descriptor trick), so nothing repeats.
On both the service recovers when the connections go away. A real `engram serve` process with a low
`ulimit -n`."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from engram.serving.log_throttle import DEFAULT_INTERVAL_S

BOUND_S = 30.0  # only bounds a hung test
DESCRIPTORS = 48  # the process's soft limit: enough to start, far fewer than the flood below


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _describe_ok(port: int) -> bool:
    url = f"http://127.0.0.1:{port}/xrpc/garden.engram.describeService"
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


def _poll(condition, what: str) -> None:
    give_up = time.monotonic() + BOUND_S
    while not condition():
        assert time.monotonic() < give_up, f"gave up waiting for {what}"
        time.sleep(0.05)


# `engram serve` with a lower soft descriptor limit (set in the child itself: no preexec_fn in a threaded
# test process).
SERVE_LIMITED = (
    "import resource, sys\n"
    "hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]\n"
    f"resource.setrlimit(resource.RLIMIT_NOFILE, ({DESCRIPTORS}, hard))\n"
    "from engram.cli.main import main\n"
    "sys.argv = ['engram', 'serve']\n"
    "raise SystemExit(main())\n"
)


@pytest.mark.parametrize("event_loop", ["asyncio", "uvloop"])
def test_accept_exhaustion_is_logged_rate_limited_and_the_service_recovers(tmp_path, event_loop):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    env.update(
        ENGRAM_PORT=str(port),
        ENGRAM_DATA_DIR=str(tmp_path / "data"),
        ENGRAM_EMBEDDER="none",
        ENGRAM_MAX_CONNECTIONS="1000",
        ENGRAM_HEADER_TIMEOUT_MS="60000",
        ENGRAM_LOG_LEVEL="warning",
        # One process: this is about one server's descriptor budget (with N each would get 1/N of the cap).
        ENGRAM_PROCESSES="1",
        ENGRAM_EVENT_LOOP=event_loop,
    )
    log_path = tmp_path / "stderr.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-c", SERVE_LIMITED],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    flood: list[socket.socket] = []
    try:
        _poll(lambda: _describe_ok(port) or proc.poll() is not None, "engram serve to answer")
        assert proc.poll() is None, log_path.read_text()
        flood_started = time.monotonic()
        for _ in range(DESCRIPTORS * 2):  # idle connections: each one the server accepts holds a descriptor
            flood.append(socket.create_connection(("127.0.0.1", port)))
        if event_loop == "asyncio":
            _poll(lambda: "accept" in log_path.read_text(), "the exhaustion to be logged")
        # Let asyncio's accept loop keep failing for a while (it retries every second).
        give_up = time.monotonic() + 2
        while time.monotonic() < give_up:
            time.sleep(0.1)
        for s in flood:
            s.close()
        flood.clear()
        _poll(lambda: _describe_ok(port), "the service to accept connections again")
        exhausted_s = time.monotonic() - flood_started
    finally:
        for s in flood:
            s.close()
        proc.terminate()
        proc.wait(timeout=BOUND_S)
    text = log_path.read_text()
    assert "ENGRAM_MAX_CONNECTIONS=1000 but only 48 file descriptors" in text  # warned at start
    assert "out of system resource" not in text  # asyncio's own line, once per pending connection
    assert "Traceback" not in text
    if event_loop == "uvloop":
        return  # libuv's accept loop does not spin on EMFILE: no line to throttle (docs/architecture.md)
    # At most one line per throttle interval over however long the exhaustion lasted (a busy machine
    # stretches it), plus one for the interval already open: without the throttle it is one per failure.
    assert 1 <= text.count("cannot accept connections") <= 2 + int(exhausted_s / DEFAULT_INTERVAL_S)
