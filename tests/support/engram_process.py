"""Run `engram serve` as a real subprocess on a free loopback port and wait until it answers.

A port found free by binding port 0 can be taken by another process (another test run on a shared CI
machine) before the server binds it. So the port is not trusted: if the server exits because the
address is in use, it is started again on a fresh port.
"""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

ADDRESS_IN_USE = ("address already in use", "errno 98", "errno 48")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listeners(port: int) -> int:
    """Sockets listening on 127.0.0.1:<port> (one per serving process with SO_REUSEPORT)."""
    wanted = f"0100007F:{port:04X}"
    lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return sum(1 for line in lines if line.split()[1] == wanted and line.split()[3] == "0A")


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


def start_engram(
    command: list[str] | Callable[[int], list[str]],
    env_for_port: Callable[[int], dict[str, str]],
    log: Path,
    *,
    cwd: Path | None = None,
    ready_path: str = "/xrpc/_health",
    timeout_s: float = 120,
    attempts: int = 5,
) -> tuple[subprocess.Popen, int]:
    """Start `command` (or `command(port)`) with `env_for_port(port)` until
    `http://127.0.0.1:<port><ready_path>` answers 200. The bound is generous on purpose: it only ends a
    server that will never come up."""
    for _ in range(attempts):
        port = free_port()
        argv = command(port) if callable(command) else command
        with open(log, "wb") as out:
            proc = subprocess.Popen(argv, env=env_for_port(port), cwd=cwd, stdout=out, stderr=out)
        deadline = time.monotonic() + timeout_s
        while proc.poll() is None and time.monotonic() < deadline:
            if _answers(f"http://127.0.0.1:{port}{ready_path}"):
                return proc, port
            time.sleep(0.1)
        stop(proc)
        output = log.read_text(errors="replace")
        if not any(marker in output.lower() for marker in ADDRESS_IN_USE):
            raise RuntimeError(f"{' '.join(argv)} did not start on port {port}:\n{output}")
    raise RuntimeError(f"no free port after {attempts} attempts:\n{log.read_text(errors='replace')}")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
