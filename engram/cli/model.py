"""`engram model info`: the configured embedder (ENGRAM_EMBEDDER)."""

from __future__ import annotations

import argparse

from ..config import Settings
from ..embed import EmbedderError, load_embedder
from .errors import CliError
from .output import print_json


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("model", help="the configured embedding model")
    ms = p.add_subparsers(dest="model_command", metavar="<subcommand>", required=True)
    i = ms.add_parser("info", help="name, digest, dims and backend of the configured embedder")
    i.add_argument("--json", action="store_true", help="print the model info as JSON")
    i.set_defaults(run=run_info)


def run_info(args: argparse.Namespace, settings: Settings) -> int:
    try:
        embedder = load_embedder(settings.embedder)
    except EmbedderError as exc:
        raise CliError(f"cannot load the embedder {settings.embedder!r}: {exc}") from None
    if embedder is None:
        raise CliError("no embedder is configured (ENGRAM_EMBEDDER=none): text search is off")
    info = embedder.info()
    if args.json:
        print_json(info)
        return 0
    for name in ("name", "digest", "dims", "backend", "max_tokens"):
        if name in info:
            print(f"{name:<11} {info[name]}")
    return 0
