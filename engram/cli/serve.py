"""`engram serve`: run the service on the configured (or embedded default) settings."""

from __future__ import annotations

import argparse

from aiohttp import web

from ..config import Settings


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="run the engram service",
        description="Run the engram service. Settings come from ENGRAM_* environment variables (see README).",
    )
    p.add_argument("--host", help="override ENGRAM_HOST")
    p.add_argument("--port", type=int, help="override ENGRAM_PORT")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ..app import create_app
    from ..config import override
    from ..logs import AccessLogger, configure_logging

    if args.host or args.port is not None:
        settings = override(
            settings, host=args.host or settings.host, port=settings.port if args.port is None else args.port
        )
    configure_logging(settings.log_level)
    web.run_app(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        access_log_class=AccessLogger,
        print=lambda *_: None,
        handle_signals=True,
    )
    return 0
