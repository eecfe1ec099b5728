"""Run `python -m engram <args>` counting psycopg's waits for the server's answers, per thread
(docs/benchmarks.md#writes-fourth-pass-postgresql-round-trips).

A round trip here is one time a thread blocked until PostgreSQL's answer was readable: psycopg drives every
network exchange through `psycopg.waiting.wait(gen, fileno)`, whose generator yields a `Wait` flag each time
it cannot go on without the socket; the waits for reading alone are counted (a pipeline's flushes wait
for read-or-write and go on as soon as the socket is writable). A statement sent and
answered is one; statements sent together in pipeline mode, or as one simple query, share one. The counts,
keyed by the thread's name with its trailing `_N` / `-N` dropped, are written as JSON to the file named by
`BENCH_ROUND_TRIPS_FILE` every 100 ms, for `scripts/bench_writes.py --count` to difference around a run.
Used by the bench only: engram itself never imports it.

    BENCH_ROUND_TRIPS_FILE=/tmp/rt.json python scripts/pg_round_trips.py serve
"""

from __future__ import annotations

import json
import os
import re
import runpy
import sys
import threading
from collections import Counter

import psycopg.waiting
from psycopg.waiting import Wait

_counts: Counter[str] = Counter()
_lock = threading.Lock()
_original = psycopg.waiting.wait


def _group(name: str) -> str:
    return re.sub(r"([_-]\d+)+$", "", name)


def _counting(gen):
    """`gen` as is, counting the waits that read."""
    key = _group(threading.current_thread().name)
    try:
        flags = next(gen)
        while True:
            if flags == Wait.R:  # RW: flushing a pipeline's sends, which does not wait for the server
                with _lock:
                    _counts[key] += 1
            ready = yield flags
            flags = gen.send(ready)
    except StopIteration as stop:
        return stop.value


def wait(gen, fileno, interval=None, timeout=None):
    kwargs = {"timeout": timeout} if timeout is not None else {}
    if interval is not None:
        kwargs["interval"] = interval
    return _original(_counting(gen), fileno, **kwargs)


def _dump(path: str) -> None:
    while True:
        with _lock:
            snapshot = dict(_counts)
        tmp = path + ".tmp"
        with open(tmp, "w") as out:
            json.dump(snapshot, out)
        os.replace(tmp, path)
        threading.Event().wait(0.1)


psycopg.waiting.wait = wait
if "BENCH_ROUND_TRIPS_FILE" not in os.environ or sys.argv[1:2] in (["-h"], ["--help"]):
    print(__doc__, file=sys.stderr)
    raise SystemExit(2 if "BENCH_ROUND_TRIPS_FILE" not in os.environ else 0)
threading.Thread(target=_dump, args=(os.environ["BENCH_ROUND_TRIPS_FILE"],), daemon=True).start()
sys.argv = ["engram", *sys.argv[1:]]
runpy.run_module("engram", run_name="__main__", alter_sys=True)
