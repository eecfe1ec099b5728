"""Whether the port `engram serve` is about to take is free: asked before anything starts.

Why: the serving processes bind with SO_REUSEPORT (processes.py), and the kernel lets any process of the
same user join such a port. A second `engram serve` on a port the first already serves would start "ready"
and take half its connections, on another data dir. A probe bound without SO_REUSEPORT fails on a port
anyone listens on, SO_REUSEPORT or not, so a second engram is refused with a plain message.
"""

from __future__ import annotations

import errno
import socket


def port_in_use(host: str, port: int) -> bool:
    """True when some address `host` resolves to cannot be bound at `port` because it is taken."""
    if port == 0:
        return False  # the kernel picks a free port
    try:
        addresses = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror:
        return False  # the server's own bind reports it
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(
                socket.SOL_SOCKET, socket.SO_REUSEADDR, 1
            )  # as aiohttp's bind: TIME_WAIT is free
            if family == socket.AF_INET6:
                probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind(address)
            except OSError as err:
                if err.errno == errno.EADDRINUSE:
                    return True
    return False
