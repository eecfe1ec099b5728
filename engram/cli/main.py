"""Entry point: parses the command line, reads settings, runs one command, maps failures to exit codes."""

from __future__ import annotations

import argparse
import sys
import tarfile

from .. import __version__
from ..config import ConfigError, read_env
from ..embed.base import EmbedderError
from ..errors import EngramError
from .errors import CliError

COMMAND_MODULES: tuple[str, ...] = (
    "serve",
    "space",
    "importer",
    "ingest",
    "export",
    "search",
    "apikey",
    "keygen",
    "model",
    "admin",
    "console",
    "mcp",
)
COMMAND_MODULES += ("evaluate",)  # engram eval (engram/evaluation/)
COMMAND_MODULES += ("nodes",)  # engram nodes (engram/cluster/)


def build_parser() -> argparse.ArgumentParser:
    import importlib

    parser = argparse.ArgumentParser(
        prog="engram",
        description="engram: memory search for AI agents on the AT Protocol.",
        epilog="Settings come from ENGRAM_* environment variables; run `engram <command> --help` for more.",
    )
    parser.add_argument("--version", action="version", version=f"engram {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    for name in COMMAND_MODULES:
        importlib.import_module(f"engram.cli.{name}").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        settings = read_env()
        return int(args.run(args, settings) or 0)
    except ConfigError as err:
        print(f"engram: configuration error: {err}", file=sys.stderr)
        return 2
    except CliError as err:
        print(f"engram: {err}", file=sys.stderr)
        return err.status
    except EngramError as err:
        # The service layer's errors (and a server's, re-raised by the clients) in the lexicon's terms.
        print(f"engram: {err.name}: {err.message}", file=sys.stderr)
        return 1
    except EmbedderError as err:  # the built-in model loads when first needed (engram/embed/lazy.py)
        print(f"engram: embedder: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    # Last resorts, so an operator reads one line, never a traceback: a path that cannot be written or
    # read, a damaged archive, a file that is not text, a value no parser took, an unreachable database.
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        print(f"engram: {where}{err.strerror or err}", file=sys.stderr)
        return 1
    except tarfile.TarError as err:
        print(f"engram: not a readable archive: {err}", file=sys.stderr)
        return 1
    except UnicodeDecodeError:
        print("engram: a file given is not UTF-8 text", file=sys.stderr)
        return 1
    except ValueError as err:
        print(f"engram: {err}", file=sys.stderr)
        return 1
    except Exception as err:
        psycopg = sys.modules.get("psycopg")  # loaded only when a database URL is set
        if psycopg is not None and isinstance(err, psycopg.Error):
            print(f"engram: the database: {str(err).strip() or type(err).__name__}", file=sys.stderr)
            return 1
        raise
