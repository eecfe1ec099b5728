"""`engram console login`: print a one-time sign-in link to the web console for the operator;
`engram console logout-all`: end every console session.

Run it where the server's data dir is (it writes the link's hash into the store; the server redeems it). The link
works once, within 10 minutes, and signs the browser in as the operator, who sees every space."""

from __future__ import annotations

import argparse
import sys
import time

from ..config import Settings
from ..store.console_sessions import end_all_sessions
from .local import run_local

# The console package (jinja2 and its templates) loads only for this command: every `engram` call builds
# the whole parser, and `engram import` should not pay ~70 ms for a web console it never renders.


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("console", help="the web console (sign-in links, sessions)")
    ps = p.add_subparsers(dest="console_command", metavar="<subcommand>", required=True)
    login = ps.add_parser(
        "login", help="print a one-time operator sign-in link (valid 10 minutes, usable once)"
    )
    login.set_defaults(run=run_login)
    end = ps.add_parser(
        "logout-all",
        help="end every console session, the operator's included (a stolen cookie stops working)",
        description="End every console session at once. Sessions are kept in the store, so a restart of "
        "the server does not end them; this does, on every serving process and node.",
    )
    end.set_defaults(run=run_logout_all)


def run_login(args: argparse.Namespace, settings: Settings) -> int:
    from ..console.login_links import LINK_TTL_S, create_link_token

    async def work(ctx) -> str:  # the store the server reads, SQLite or PostgreSQL
        return await create_link_token(ctx.store, time.time())

    token = run_local(settings, work)
    print(f"{settings.public_url}/console/login?token={token}")
    print(
        f"open this link within {LINK_TTL_S // 60} minutes; it signs in once, as the operator",
        file=sys.stderr,
    )
    return 0


def run_logout_all(args: argparse.Namespace, settings: Settings) -> int:
    async def work(ctx) -> int:
        return await ctx.store.write(end_all_sessions)

    ended = run_local(settings, work)
    print(f"ended {ended} console session{'' if ended == 1 else 's'}")
    return 0
