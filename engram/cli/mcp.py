"""`engram mcp`: the memory tools over MCP stdio for a local agent client (docs/mcp.md).

By default it opens the local data dir like the other local commands (`open_context`), so it needs no
running server. With `--key` (or `--key-file`) the tools see exactly what that API key allows, checked
again on every call; without one they act as the data dir's operator over every hosted space, which is
no more than the person who can read the data dir already has. With `--url` it holds no data at all and
forwards every call to that engram's `/mcp` with the key as the bearer credential.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from ..config import Settings
from .errors import CliError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "mcp",
        help="serve the memory tools to a local agent over MCP (stdio)",
        description="Serve engram's memory tools over MCP on stdin/stdout.",
    )
    who = p.add_mutually_exclusive_group()
    who.add_argument("--key", help="an engram API key: the tools see only its spaces")
    who.add_argument("--key-file", type=Path, help="read the API key from this file (keeps it out of `ps`)")
    p.add_argument("--url", help="a running engram to forward to (its /mcp), instead of the local data dir")
    p.set_defaults(run=run)


def read_key(args: argparse.Namespace) -> str | None:
    if args.key_file is not None:
        try:
            return args.key_file.read_text().strip()
        except OSError as exc:
            raise CliError(f"cannot read --key-file: {exc.strerror}") from None
    return args.key


async def serve_local(settings: Settings, key: str | None) -> None:
    """Answers `initialize` and `tools/list` at once: the embedding model (most of the start-up time)
    loads in the background and only tool calls wait for it, so hosts with short start timeouts connect."""
    from ..embed import EmbedderLoadError
    from ..errors import EngramError, Unavailable
    from ..lifecycle import attach_embedder, open_context
    from ..mcp.access import McpAccess, key_access
    from ..mcp.operations import MemoryOperations
    from ..mcp.server import build_server
    from ..mcp.stdio import run_stdio
    from ..store import database_path

    where = (
        "the PostgreSQL store of ENGRAM_DATABASE_URL"
        if settings.database_url
        else str(database_path(settings.data_dir.resolve()))
    )
    if key is not None and not settings.data_dir.is_dir():
        # A host starts `engram mcp` in a working directory of its own: never make a data dir there.
        raise CliError(
            f"InvalidApiKey: there is no engram data directory at {settings.data_dir.resolve()}; set "
            "ENGRAM_DATA_DIR (in the host's MCP server config) to the directory of the engram that made the key"
        )
    async with open_context(settings, embedder=False) as ctx:
        if key is not None:
            try:
                await key_access(ctx, key)  # fail at start-up, not on the first tool call
            except EngramError as err:
                raise CliError(
                    f"{err.name}: {err.message} (looked in {where}; set ENGRAM_DATA_DIR to the data "
                    "directory of the engram that made the key)"
                ) from None
        loading = asyncio.create_task(attach_embedder(ctx))

        async def access_of(_context) -> McpAccess:
            try:
                await asyncio.shield(loading)  # tool calls wait for the model; initialize does not
            except (EmbedderLoadError, OSError, RuntimeError) as exc:
                raise Unavailable(f"the embedding model did not load: {exc}", "EmbedderUnavailable") from None
            return await key_access(ctx, key) if key is not None else await McpAccess.operator(ctx)

        try:
            await run_stdio(build_server(MemoryOperations(ctx), access_of))
        finally:
            loading.cancel()


async def serve_remote(url: str, key: str) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    from ..mcp.remote import NO_ACCESS, RemoteOperations
    from ..mcp.server import build_server
    from ..mcp.stdio import run_stdio

    async def access_of(_context):
        return NO_ACCESS

    endpoint = url.rstrip("/") + ("" if url.rstrip("/").endswith("/mcp") else "/mcp")
    try:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http,
            Client(streamable_http_client(endpoint, http_client=http)) as remote,
        ):
            await run_stdio(build_server(RemoteOperations(remote), access_of))
    except (MCPError, httpx2.HTTPError) as exc:
        raise CliError(f"cannot use {endpoint}: {exc}") from None


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ..logs import configure_logging

    key = read_key(args)
    configure_logging(settings.log_level)  # JSON lines on stderr: stdout carries only MCP messages
    if args.url is not None:
        if key is None:
            raise CliError("--url needs --key or --key-file: the remote server only serves a credential")
        asyncio.run(serve_remote(args.url, key))
    else:
        asyncio.run(serve_local(settings, key))
    return 0
