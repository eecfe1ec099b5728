"""`engram serve`: run the service on the configured (or embedded default) settings."""

from __future__ import annotations

import argparse
import functools

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
    from ..serving.malloc_thresholds import fix_malloc_thresholds, log_malloc_thresholds

    thresholds = (
        fix_malloc_thresholds()
    )  # first, before a thread allocates (engram/serving/malloc_thresholds.py)
    from ..app import create_app
    from ..config import read_env_with
    from ..logs import AccessLogger, configure_logging
    from ..serving.runner import run_server

    flags = {"ENGRAM_HOST": args.host, "ENGRAM_PORT": None if args.port is None else str(args.port)}
    if any(flags.values()):
        # Re-read rather than patch the port: the public URL and DID derive from it.
        settings = read_env_with({name: value for name, value in flags.items() if value})
    from ..serving.port_check import port_in_use
    from .errors import CliError

    if port_in_use(settings.host, settings.port):  # before anything starts or logs (port_check.py)
        raise CliError(
            f"port {settings.port} on {settings.host} is already in use (another engram serve?)", 2
        )
    configure_logging(settings.log_level, batched=True)
    log_malloc_thresholds(thresholds)
    # Several processes share one port (docs/internals.md#using-every-core); port 0 asks the kernel for
    # a free port, which would give each process a different one, so it is served by one process.
    if settings.processes > 1 and settings.port != 0:
        from ..serving.processes import serve_processes

        return serve_processes(settings, access_log_class=AccessLogger)
    # engram's runner, not web.run_app: it adds the header deadline and connection cap (engram/serving)
    run_server(functools.partial(create_app, settings), settings, access_log_class=AccessLogger)
    return 0
