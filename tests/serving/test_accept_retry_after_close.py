"""The accept loop's retry timers that fire after shutdown (engram/serving/log_throttle.py): asyncio
schedules `_start_serving` a second after each accept that failed for lack of descriptors; one that fires
after the listening socket closed raises ValueError on descriptor -1. That is dropped; any other callback's
error still reaches the previous exception handler."""

import asyncio
import logging
import socket

from engram.serving.log_throttle import Throttle, install_accept_throttle


async def test_a_retry_on_a_closed_listening_socket_is_not_reported_and_other_errors_are():
    loop = asyncio.get_running_loop()
    seen: list[dict] = []
    loop.set_exception_handler(lambda _loop, context: seen.append(context))
    restore = install_accept_throttle(loop, logging.getLogger("test-accept"), Throttle())
    try:
        sock = socket.socket()
        sock.close()  # what shutdown leaves behind: fileno() is -1
        retry = loop.call_later(3600, loop._start_serving, None, sock)  # the timer asyncio schedules
        fired = {"message": "Exception in callback", "exception": ValueError("Invalid file descriptor: -1")}
        loop.call_exception_handler(fired | {"handle": retry})  # what that timer reports when it fires
        retry.cancel()
        assert seen == []
        other = loop.call_later(3600, print)
        loop.call_exception_handler({"message": "boom", "exception": ValueError("other"), "handle": other})
        other.cancel()
        assert [c["message"] for c in seen] == ["boom"]
    finally:
        restore()
