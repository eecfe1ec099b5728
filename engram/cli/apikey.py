"""`engram apikey create|list|revoke`: keys for the REST shims, bound to one hosted space."""

from __future__ import annotations

import argparse
import sys

from ..config import Settings
from ..service import apikeys
from ..views import api_key_view
from .local import resolve_space, run_local
from .output import print_json, print_table


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("apikey", help="API keys for the REST shims")
    ps = p.add_subparsers(dest="apikey_command", metavar="<subcommand>", required=True)
    c = ps.add_parser("create", help="create a key (shown once; only its hash is stored)")
    c.add_argument("space", help="space name or at:// URI")
    c.add_argument(
        "--scope",
        action="append",
        choices=("read", "write"),
        dest="scopes",
        help="read and/or write (repeatable; default: read)",
    )
    c.add_argument("--label", default="", help="a note to tell keys apart")
    c.add_argument("--json", action="store_true", help="print the key and its token as JSON")
    c.set_defaults(run=run_create)
    ls = ps.add_parser("list", help="list keys (never their tokens)")
    ls.add_argument("space", nargs="?", help="only the keys of this space")
    ls.add_argument("--json", action="store_true", help="print the keys as JSON")
    ls.set_defaults(run=run_list)
    r = ps.add_parser("revoke", help="revoke a key by id")
    r.add_argument("id", type=int, help="the key's id (from `engram apikey list`)")
    r.set_defaults(run=run_revoke)


def run_create(args: argparse.Namespace, settings: Settings) -> int:
    async def work(ctx):
        return await apikeys.create_api_key(
            ctx, resolve_space(ctx, args.space), args.scopes or ["read"], args.label
        )

    key, token = run_local(settings, work)
    if args.json:
        print_json({**api_key_view(key), "token": token})
    else:
        print(token)
        print(
            f"key {key.id} for {key.space_uri} ({' '.join(sorted(key.scopes))}): "
            "store the token now, it is not shown again",
            file=sys.stderr,
        )
    return 0


def run_list(args: argparse.Namespace, settings: Settings) -> int:
    async def work(ctx):
        return await apikeys.list_api_keys(ctx, resolve_space(ctx, args.space) if args.space else None)

    keys = run_local(settings, work)
    if args.json:
        print_json([api_key_view(k) for k in keys])
    elif not keys:
        print("no API keys")
    else:
        print_table(
            ("ID", "SCOPES", "STATE", "CREATED", "LABEL", "SPACE"),
            [
                (
                    k.id,
                    ",".join(sorted(k.scopes)),
                    "revoked" if k.revoked_at else "live",
                    k.created_at,
                    k.label,
                    k.space_uri,
                )
                for k in keys
            ],
        )
    return 0


def run_revoke(args: argparse.Namespace, settings: Settings) -> int:
    async def work(ctx):
        return await apikeys.revoke_api_key(ctx, args.id)

    key = run_local(settings, work)
    print(f"revoked key {key.id} of {key.space_uri}")
    return 0
