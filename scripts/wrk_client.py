"""Drive signed searches with wrk (a C load generator) instead of a Python client.

The space-credential signature covers only `authorization` and `atproto-space-audience`
(docs/protocol.md#space-credentials), so one set of signed headers is valid for every query string: wrk sends
fixed headers and rotates over the prepared query paths. Its CPU per request is a tenth of an aiohttp
client's, which on a 2-core machine leaves that much more CPU to the server under test (the Python client
took ~0.2 ms per request, a fifth of the server's cost).

    drive_wrk(target, concurrency=32, seconds=5)  # same result keys as bench_throughput.drive
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import urlencode, urlsplit

# wrk's `done`: one JSON line of the run's totals and latency percentiles.
REPORT = """
done = function(summary, latency, requests)
  io.write(string.format('{"requests": %d, "duration_us": %d, "p50_us": %d, "p99_us": %d, ' ..
    '"non2xx": %d, "errors": %d}\\n', summary.requests, summary.duration, latency:percentile(50),
    latency:percentile(99), summary.errors.status, summary.errors.connect + summary.errors.read +
    summary.errors.write + summary.errors.timeout))
end
"""

_SCRIPT = """
local paths = %(paths)s
local i = 0
wrk.headers = %(headers)s
request = function()
  i = i + 1
  return wrk.format("GET", paths[(i %% #paths) + 1])
end
"""


def available() -> bool:
    return shutil.which("wrk") is not None


def _lua_string(text: str) -> str:
    return json.dumps(text)  # a JSON string of ASCII text is a valid Lua string literal


def drive_wrk(target: dict, concurrency: int, seconds: float, threads: int = 1) -> dict:
    """Run wrk for `seconds` with `concurrency` connections; returns qps, p50_ms, p99_ms, statuses and
    client_cpu_s (wrk's own user + system CPU)."""
    url = urlsplit(target["url"])
    paths = [f"{url.path}?{urlencode(params)}" for params in target["params"]]
    headers = {name: value for name, value in target["headers"].items() if name.lower() != "host"}
    lua = _SCRIPT % {
        "paths": lua_table(paths),
        "headers": "{"
        + ", ".join(f"[{_lua_string(k)}] = {_lua_string(v)}" for k, v in headers.items())
        + "}",
    }
    return run_wrk(lua, f"{url.scheme}://{url.netloc}/", concurrency, seconds, threads)


def lua_table(values: list[str]) -> str:
    """A Lua array of these strings."""
    return "{" + ", ".join(_lua_string(v) for v in values) + "}"


def run_wrk(lua: str, base_url: str, concurrency: int, seconds: float, threads: int = 1) -> dict:
    """Run wrk with the Lua script `lua` (its `request` function makes each request; `REPORT` is appended
    as its `done`) against `base_url`; the result keys of `drive_wrk`, and the requests answered 2xx
    (`ok`) over wrk's own `duration_s`."""
    with tempfile.TemporaryDirectory(prefix="engram-wrk-") as tmp:
        script = Path(tmp) / "requests.lua"
        script.write_text(lua + REPORT)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(
            ["wrk", f"-t{threads}", f"-c{concurrency}", f"-d{max(1, round(seconds))}s", "-s", str(script)]
            + ["--timeout", "30s", base_url],
            capture_output=True,
            text=True,
            check=True,
            env=os.environ,
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    ok = summary["requests"] - summary["non2xx"]
    statuses = {200: ok} | ({"non-2xx": summary["non2xx"]} if summary["non2xx"] else {})
    if summary["errors"]:
        statuses["socket errors"] = summary["errors"]
    return {
        "qps": summary["requests"] / (summary["duration_us"] / 1e6),
        "requests": summary["requests"],
        "ok": ok,
        "duration_s": summary["duration_us"] / 1e6,
        "p50_ms": summary["p50_us"] / 1000,
        "p99_ms": summary["p99_us"] / 1000,
        "statuses": statuses,
        "client_cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
    }
