"""`engram mcp`: the memory tools over MCP stdio for a local agent client (docs/mcp.md).

It opens the local data dir like the other local commands (`open_context`), so it needs no running
server. With `--key` (or `--key-file`) the tools see exactly what that API key allows, checked again on
every call; without one they act as the data dir's operator over every hosted space, which is no more
than the person who can read the data dir already has.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from ..config import Settings
from .errors import CliError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mcp", help="serve the memory tools to a local agent over MCP (stdio)",
                       description="Serve engram's memory tools over MCP on stdin/stdout.")  # fmt: skip
    who = p.add_mutually_exclusive_group()
    who.add_argument("--key", help="an engram API key: the tools see only its spaces")
    who.add_argument("--key-file", type=Path, help="read the API key from this file (keeps it out of `ps`)")
    p.set_defaults(run=run)


def read_key(args: argparse.Namespace) -> str | None:
    if args.key_file is not None:
        try:
            return args.key_file.read_text().strip()
        except OSError as exc:
            raise CliError(f"cannot read --key-file: {exc.strerror}") from None
    return args.key


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ..lifecycle import open_context
    from ..logs import configure_logging
    from ..mcp.access import McpAccess, key_access
    from ..mcp.server import build_server

    key = read_key(args)
    configure_logging(settings.log_level)  # JSON lines on stderr: stdout carries only MCP messages

    async def serve() -> None:
        async with open_context(settings) as ctx:
            if key is not None:
                key_access(ctx, key)  # fail at start-up, not on the first tool call

            async def access_of(_context) -> McpAccess:
                return key_access(ctx, key) if key is not None else await McpAccess.operator(ctx)

            await build_server(ctx, access_of).run_stdio_async()

    asyncio.run(serve())
    return 0
