"""`engram ingest <space> FILE|DIR...`: files become chunk memories that cite them (docs/documents.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tqdm import tqdm

from ..config import Settings
from ..errors import EngramError
from ..service.documents.chunking import DEFAULT_BUDGET, DEFAULT_OVERLAP
from ..service.documents.pipeline import ChunkSettings
from .errors import CliError
from .local import resolve_space, run_local
from .output import print_json, print_table, truncate


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ingest",
        help="ingest documents (PDF, DOCX, PPTX, XLSX, HTML, Markdown, CSV, text) into a space",
        description="Read files into a space as chunk memories that cite them (document id and name, page, "
        "chunk index). The type is told from the content. A directory is read recursively (hidden files "
        "skipped). A document's id is its path as given, unless --id names it; ingesting it again replaces "
        "its chunks in one transaction, and the same file again changes nothing.",
    )
    p.add_argument("space", help="space name or at:// URI")
    p.add_argument(
        "paths", nargs="+", type=Path, metavar="FILE|DIR", help="files, or directories read recursively"
    )
    p.add_argument("--id", dest="document_id", help="the document id (one file only)")
    p.add_argument("--source-url", help="the URL the chunks cite (one file only)")
    p.add_argument(
        "--chunk-tokens", type=int, default=DEFAULT_BUDGET, help=f"chunk budget (default {DEFAULT_BUDGET})"
    )
    p.add_argument(
        "--overlap", type=int, default=DEFAULT_OVERLAP, help=f"overlap tokens (default {DEFAULT_OVERLAP})"
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(run=run)


def collect(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and not any(part.startswith(".") for part in p.parts[len(path.parts) :])
            )
        elif path.is_file():
            found.append(path)
        else:
            raise CliError(f"{path}: no such file or directory")
    return found


def run(args: argparse.Namespace, settings: Settings) -> int:
    targets = collect(args.paths)
    if (args.document_id or args.source_url) and len(targets) != 1:
        raise CliError("--id and --source-url name one document: give exactly one file", 2)
    chunking = ChunkSettings(args.chunk_tokens, args.overlap)
    try:
        chunking.check()
    except EngramError as exc:
        raise CliError(exc.message, 2) from None

    async def work(ctx):
        uri = resolve_space(ctx, args.space)
        await ctx.services.spaces.require(uri)
        results = []
        with (
            tqdm(total=len(targets), unit="file", desc="ingesting", disable=None, file=sys.stderr) as bar,
            tqdm(unit="chunk", desc="embedding", disable=None, file=sys.stderr, leave=False) as chunks,
        ):

            def embedded(done: int, total: int) -> None:  # a long file moves its own bar
                chunks.total = total
                chunks.n = done
                chunks.refresh()

            for path in targets:
                chunks.reset()
                try:
                    data = path.read_bytes()
                    result = await ctx.services.documents.ingest(
                        uri,
                        data,
                        name=str(path),
                        document_id=args.document_id,
                        source_url=args.source_url,
                        chunking=chunking,
                        progress=embedded,
                    )
                    results.append({"file": str(path), **result.json()})
                except EngramError as exc:
                    results.append(
                        {"file": str(path), "status": "refused", "error": exc.message, "errorName": exc.name}
                    )
                except OSError as exc:
                    results.append(
                        {"file": str(path), "status": "refused", "error": str(exc), "errorName": "Unreadable"}
                    )
                bar.update(1)
        return uri, results

    uri, results = run_local(settings, work, embedder=True)
    refused = [r for r in results if r["status"] == "refused"]
    if args.json:
        print_json({"space": uri, "documents": results})
    else:
        summary(uri, results)
    return 1 if refused else 0


def summary(uri: str, results: list[dict]) -> None:
    rows = []
    for r in results:
        note = r.get("error") or (
            f"{r['ocrSkipped']} page(s) not OCR-ed: {r.get('ocrSkipReason')}" if r.get("ocrSkipped") else ""
        )
        rows.append(
            (
                r["file"],
                r.get("kind", ""),
                r.get("pages", ""),
                r.get("chunks", ""),
                r["status"],
                truncate(note, 80),
            )
        )
    print_table(("file", "kind", "pages", "chunks", "status", "note"), rows)
    chunks = sum(r.get("chunks", 0) for r in results)
    refused = sum(r["status"] == "refused" for r in results)
    skipped = sum(r.get("ocrSkipped", 0) for r in results)
    line = f"{uri}: {len(results) - refused} document(s), {chunks} chunk(s), {refused} refused"
    print(line + (f", {skipped} page(s) not OCR-ed" if skipped else ""))
