"""The server's log handler (engram/logs.py BatchedStderrHandler): JSON lines on stderr, warnings written at
once, info lines (the access log) in batches by a flusher thread, everything written by a normal exit."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

CHILD = r"""
import logging, sys
from engram.logs import configure_logging
configure_logging("info", batched=True)
log = logging.getLogger("engram.test")
for line in sys.stdin:
    level, message = line.split()
    getattr(log, level)(message)
"""


def _lines(stream, into: list, seen: threading.Condition) -> None:
    for raw in stream:
        with seen:
            into.append(json.loads(raw))
            seen.notify_all()


def test_info_lines_are_written_in_batches_and_warnings_at_once():
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    got: list[dict] = []
    seen = threading.Condition()
    reader = threading.Thread(target=_lines, args=(child.stderr, got, seen), daemon=True)
    reader.start()

    def send_and_wait(line: str, count: int) -> list[str]:
        child.stdin.write(line + "\n")
        child.stdin.flush()
        with seen:
            assert seen.wait_for(lambda: len(got) >= count, timeout=60), got
            return [entry["msg"] for entry in got]

    # an info line reaches stderr without any later line pushing it out (the flusher thread writes it)
    assert send_and_wait("info first", 1) == ["first"]
    # a warning is written at once, after the info lines before it
    child.stdin.write("info second\n")
    assert send_and_wait("warning third", 3) == ["first", "second", "third"]
    assert [entry["level"] for entry in got] == ["info", "info", "warning"]
    # a normal exit writes what is still buffered
    child.stdin.write("info last\n")
    child.stdin.close()
    assert child.wait(timeout=60) == 0
    reader.join(60)
    child.stderr.close()
    assert [entry["msg"] for entry in got] == ["first", "second", "third", "last"]
