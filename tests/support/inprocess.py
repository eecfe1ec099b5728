"""In-process cluster nodes: the real app on a real port, in this test's event loop, in cluster mode over
one PostgreSQL store (each node with a data directory of its own). Faster than `engram serve` processes
(tests/support/cluster.py) when a test needs to look inside a node.

(Not in conftest.py: test modules import these by name.)"""

from __future__ import annotations

import errno
from dataclasses import dataclass, replace

from engram.app import create_app
from engram.app_keys import context_key
from support.engram_process import free_port


@dataclass
class InProcessNode:
    server: object  # aiohttp TestServer
    ctx: object
    url: str
    node_id: str


async def start_node(aiohttp_server, settings, tmp_path, name: str) -> InProcessNode:
    """The node URL must name the port before the app is built: pick a free one, retry if it was taken."""
    for attempt in range(5):
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        node_settings = replace(settings, node_url=url, node_id=name, data_dir=tmp_path / f"data-{name}")
        try:
            server = await aiohttp_server(await create_app(node_settings), port=port)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or attempt == 4:
                raise
            continue
        return InProcessNode(server, server.app[context_key], url, name)
    raise AssertionError("unreachable")
