"""`engram import <space> <file>`: a JSONL file of memories, or a tar written by `engram export`."""

from __future__ import annotations

import argparse
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from tqdm import tqdm

from ..config import Settings
from ..service.export import open_export
from ..service.imports import BATCH, ImportReport, decode_lines, import_values
from .errors import CliError
from .local import resolve_space, run_local
from .output import print_json

SHOWN_SKIPS = 20  # a file full of bad lines should not scroll the summary away; --json has them all


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "import",
        help="import memories from a JSONL file or an export tar",
        description="Import memories into a space. Each JSONL line is an object with `text` and optional "
        "`tags`, `source`, `createdAt`, `attrs`, `rkey`, `key` and `embedding` ({model, modelDigest, dims, "
        'vector} with the vector as base64 f16 or {"$bytes": ...}). Lines without a vector are embedded '
        "with the hosted model. Importing the same file twice changes nothing (each line has a stable key). "
        "A tar written by `engram export` is accepted as well.",
    )
    p.add_argument("space", help="space name or at:// URI")
    p.add_argument("file", type=Path, help="memories.jsonl, or an engram export .tar")
    p.add_argument("--batch", type=int, default=BATCH, help=f"memories per transaction (default {BATCH})")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(run=run)


def open_lines(path: Path, f: IO[bytes]) -> tuple[Iterator[tuple[int, bytes]], int | None, dict | None]:
    """(numbered lines, total if known, export manifest if the file is an export tar)."""
    if tarfile.is_tarfile(path):
        reader = open_export(f)
        total = reader.manifest.get("memories")
        return reader.lines, total if isinstance(total, int) else None, reader.manifest
    with open(path, "rb") as counting:
        total = sum(1 for line in counting if line.strip())
    numbered = ((n, line) for n, line in enumerate(f, start=1) if line.strip())
    return numbered, total, None


def run(args: argparse.Namespace, settings: Settings) -> int:
    if not args.file.is_file():
        raise CliError(f"{args.file}: {'a directory, not a file' if args.file.is_dir() else 'no such file'}")
    if not 1 <= args.batch <= 1000:
        raise CliError("--batch must be between 1 and 1000", 2)

    async def work(ctx):
        uri = resolve_space(ctx, args.space)
        space = await ctx.services.spaces.require(uri)
        with open(args.file, "rb") as f:  # noqa: ASYNC230 - a CLI run: nothing else waits on this loop
            lines, total, manifest = open_lines(args.file, f)
            if manifest is not None:
                _warn_model_change(manifest, space)
            with tqdm(total=total, unit="memory", desc="importing", disable=None, file=sys.stderr) as bar:
                report = await import_values(
                    ctx.store,
                    ctx.services.spaces,
                    ctx.services.memories,
                    uri,
                    decode_lines(lines),
                    batch_size=args.batch,
                    progress=bar.update,
                )
        return uri, report

    uri, report = run_local(settings, work, embedder=True)
    _print_report(uri, report, args.json)
    return 0 if report.written or not report.skipped else 1


def _warn_model_change(manifest: dict, space) -> None:
    config = manifest.get("config") or {}
    if space.config is None or not config:
        return
    theirs = (config.get("model"), config.get("modelDigest"), config.get("dims"))
    ours = space.config.active
    if theirs != (ours.model, ours.digest, ours.dims):
        print(
            f"engram: warning: the export's vectors are of {theirs[0]} ({theirs[1]}), the space's model is "
            f"{ours.model} ({ours.digest}): memories keep their vectors but only those embedded with the "
            "space's model are searchable",
            file=sys.stderr,
        )


def _print_report(uri: str, report: ImportReport, as_json: bool) -> None:
    if as_json:
        print_json(
            {
                "space": uri,
                "created": report.created,
                "updated": report.updated,
                "unchanged": report.unchanged,
                "notIndexed": report.not_indexed,
                "skipped": [{"line": n, "reason": reason} for n, reason in report.skipped],
            }
        )
        return
    print(
        f"{uri}: {report.created} created, {report.updated} updated, {report.unchanged} unchanged, "
        f"{len(report.skipped)} skipped"
    )
    if report.not_indexed:
        print(f"{report.not_indexed} stored but not searchable: their vector is not of the space's model")
    for number, reason in report.skipped[:SHOWN_SKIPS]:
        print(f"  line {number}: skipped: {reason}", file=sys.stderr)
    if len(report.skipped) > SHOWN_SKIPS:
        print(f"  ... and {len(report.skipped) - SHOWN_SKIPS} more (use --json for all)", file=sys.stderr)
