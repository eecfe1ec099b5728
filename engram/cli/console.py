"""`engram console login`: print a one-time sign-in link to the web console for the operator.

Run it where the server's data dir is (it writes the link's hash into the store; the server redeems it). The link
works once, within 10 minutes, and signs the browser in as the operator, who sees every space."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from ..config import Settings
from ..store.database import Store, database_path
from .local import require_data_dir

# The console package (jinja2 and its templates) loads only for this command: every `engram` call builds
# the whole parser, and `engram import` should not pay ~70 ms for a web console it never renders.


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("console", help="the web console (sign-in links)")
    ps = p.add_subparsers(dest="console_command", metavar="<subcommand>", required=True)
    login = ps.add_parser(
        "login", help="print a one-time operator sign-in link (valid 10 minutes, usable once)"
    )
    login.set_defaults(run=run_login)


def run_login(args: argparse.Namespace, settings: Settings) -> int:
    from ..console.login_links import LINK_TTL_S

    require_data_dir(settings)  # a link for a service that has no data dir signs in nowhere
    token = asyncio.run(_new_link(settings))
    print(f"{settings.public_url}/console/login?token={token}")
    print(
        f"open this link within {LINK_TTL_S // 60} minutes; it signs in once, as the operator",
        file=sys.stderr,
    )
    return 0


async def _new_link(settings: Settings) -> str:
    from ..console.login_links import create_link_token

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    store = await Store.open(database_path(settings.data_dir))
    try:
        return await create_link_token(store, time.time())
    finally:
        await store.close()
