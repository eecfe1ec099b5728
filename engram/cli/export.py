"""`engram export <space> [--out file]` and `engram reindex <space>`."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tqdm import tqdm

from ..config import Settings
from ..service.embedding import hosts_model
from ..service.export import write_export
from ..service.reembed import reembed_space
from ..service.reindex import reindex_space
from .errors import CliError
from .local import resolve_space, run_local


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="write a space as an export tar (the exportSpace format)",
        description="Write a space's memories, with their vectors, as an engram-export/1 tar "
        "(what garden.engram.exportSpace serves); `engram import` reads it back.",
    )
    p.add_argument("space", help="space name or at:// URI")
    p.add_argument("--out", type=Path, help="file to write (default: standard output)")
    p.set_defaults(run=run_export)

    r = sub.add_parser(
        "reindex",
        help="rebuild a space's search index from the store",
        description="Rebuild a space's index from the memories in the store and save it. Where engram runs "
        "the space's model, memories without a vector of it (the model was changed with `engram space config "
        "--model`) are embedded with it first, each a signed update of its record.",
    )
    r.add_argument("space", help="space name or at:// URI")
    r.set_defaults(run=run_reindex)


def run_export(args: argparse.Namespace, settings: Settings) -> int:
    if args.out is None and sys.stdout.isatty():
        raise CliError("refusing to write a tar to a terminal: pass --out <file> or redirect stdout", 2)

    async def work(ctx):
        uri = resolve_space(ctx, args.space)
        await ctx.services.spaces.require(uri)
        if args.out is None:
            return uri, await write_export(ctx.store, ctx.services.spaces, ctx.pool, uri, sys.stdout.buffer)
        tmp = args.out.with_name(f".{args.out.name}.partial")
        try:
            with open(tmp, "wb") as f:  # noqa: ASYNC230 - a CLI run: nothing else waits on this loop
                count = await write_export(ctx.store, ctx.services.spaces, ctx.pool, uri, f)
            os.replace(tmp, args.out)  # never leave a truncated export under the requested name
        finally:
            tmp.unlink(missing_ok=True)
        return uri, count

    uri, count = run_local(settings, work)
    print(f"exported {count} memories of {uri}" + (f" to {args.out}" if args.out else ""), file=sys.stderr)
    return 0


def run_reindex(args: argparse.Namespace, settings: Settings) -> int:
    async def work(ctx):
        uri = resolve_space(ctx, args.space)
        space = await ctx.services.spaces.require(uri)
        embedded = 0
        if hosts_model(ctx.embedder, space) and (space.config is None or space.config.next is None):
            # memories without a vector of the space's model (its model was changed): embedded first
            total = (await ctx.services.spaces.status(uri)).memories
            with tqdm(total=total, unit="memory", desc="embedding", disable=None, file=sys.stderr) as bar:
                embedded = await reembed_space(
                    ctx.store, ctx.services.spaces, ctx.services.memories, ctx.embedder, uri, bar.update
                )
        built = await reindex_space(ctx.services.spaces, ctx.index, uri)
        status = await ctx.services.spaces.status(uri)
        return uri, embedded, built, status

    uri, embedded, built, status = run_local(settings, work, embedder=True)
    if embedded:
        print(f"embedded {embedded} memories of {uri} with the space's model")
    for spec in built:
        print(f"rebuilt the {spec.model} index of {uri}")
    skipped = sum(c for _, c in status.skipped)
    print(f"{status.memories - skipped} of {status.memories} memories indexed")
    return 0
