"""`engram apikey create|list|bind|unbind|revoke`: keys for the REST shims.

A key has a primary hosted space (shim writes go there) and may be bound to more (`--space`, `bind`);
`list` shows each space's short id, the name a shim body uses for it (a GPTBots `group_id`)."""

from __future__ import annotations

import argparse
import sys

from ..config import Settings
from ..service import apikeys
from ..views import api_key_view
from .local import resolve_space, run_local
from .output import print_json, print_table


def key_create_arguments(c: argparse.ArgumentParser) -> None:
    """What a new key is made of, the same for `engram apikey create` and `engram admin apikey create`."""
    c.add_argument("space", help="space name or at:// URI")
    c.add_argument(
        "--scope",
        action="append",
        choices=("read", "write"),
        dest="scopes",
        help="read and/or write (repeatable; default: read)",
    )
    c.add_argument("--label", default="", help="a note to tell keys apart")
    c.add_argument(
        "--space",
        action="append",
        dest="extra_spaces",
        default=[],
        metavar="SPACE",
        help="one more hosted space the key may read (repeatable; e.g. more GPTBots knowledge bases)",
    )


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("apikey", help="API keys for the REST shims")
    ps = p.add_subparsers(dest="apikey_command", metavar="<subcommand>", required=True)
    c = ps.add_parser("create", help="create a key (shown once; only its hash is stored)")
    key_create_arguments(c)
    c.add_argument(
        "--for",
        dest="shim",
        choices=("gptbots", "sim", "memorybank"),
        help="print how to call this shim with the new key",
    )
    c.add_argument("--json", action="store_true", help="print the key and its token as JSON")
    c.set_defaults(run=run_create)
    b = ps.add_parser("bind", help="let a key use one more hosted space")
    b.add_argument("id", type=int, help="the key's id (engram apikey list)")
    b.add_argument("space", help="space name or at:// URI")
    b.set_defaults(run=run_bind)
    u = ps.add_parser("unbind", help="take a (non-primary) space away from a key, at once")
    u.add_argument("id", type=int, help="the key's id (engram apikey list)")
    u.add_argument("space", help="space name or at:// URI")
    u.set_defaults(run=run_unbind)
    ls = ps.add_parser("list", help="list keys (never their tokens)")
    ls.add_argument("space", nargs="?", help="only the keys of this space")
    ls.add_argument("--json", action="store_true", help="print the keys as JSON")
    ls.set_defaults(run=run_list)
    r = ps.add_parser("revoke", help="revoke a key by id")
    r.add_argument("id", type=int, help="the key's id (from `engram apikey list`)")
    r.set_defaults(run=run_revoke)


def run_create(args: argparse.Namespace, settings: Settings) -> int:
    async def work(ctx):
        extra = [resolve_space(ctx, s) for s in args.extra_spaces]
        return await apikeys.create_api_key(
            ctx.store, resolve_space(ctx, args.space), args.scopes or ["read"], args.label, extra
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
        print(f"spaces (short id = uri): {_spaces(key)}", file=sys.stderr)
        if args.shim:
            print(SHIM_HINTS[args.shim].format(primary=next(iter(key.spaces))), file=sys.stderr)
    return 0


# One example call per shim, shown by `engram apikey create --for <shim>` (README "REST shims").
SHIM_HINTS = {
    "gptbots": "GPTBots: curl -X POST $ENGRAM_URL/v1/vector/match -H 'Authorization: Bearer <token>' "
    '-H \'Content-Type: application/json\' -d \'{{"prompt": "...", "top_k": 5, "group_ids": ["{primary}"]}}\'',
    "sim": "Sim: curl -X POST $ENGRAM_URL/api/memory -H 'Authorization: Bearer <token>' "
    '-H \'Content-Type: application/json\' -d \'{{"key": "chat-1", "type": "agent", '
    '"workflowId": "wf-1", "data": {{"role": "user", "content": "hi"}}}}\'',
    "memorybank": "Memory Bank: use the token as the plugin's bearer token (scopes read -> read:documents, "
    "write -> write:documents)",
}


def _spaces(key) -> str:
    return ", ".join(f"{short}={uri}" for short, uri in key.spaces.items())


def run_list(args: argparse.Namespace, settings: Settings) -> int:
    async def work(ctx):
        return await apikeys.list_api_keys(ctx.store, resolve_space(ctx, args.space) if args.space else None)

    keys = run_local(settings, work)
    if args.json:
        print_json([api_key_view(k) for k in keys])
    elif not keys:
        print("no API keys")
    else:
        print_table(
            ("ID", "SCOPES", "STATE", "CREATED", "LABEL", "SPACE", "SPACES (SHORT ID=URI)"),
            [
                (
                    k.id,
                    ",".join(sorted(k.scopes)),
                    "revoked" if k.revoked_at else "live",
                    k.created_at,
                    k.label,
                    k.space_uri,
                    _spaces(k),
                )
                for k in keys
            ],
        )
    return 0


def _change_binding(operation):
    """`engram apikey bind|unbind <id> <space>`: the same command around one service operation."""

    def run(args: argparse.Namespace, settings: Settings) -> int:
        async def work(ctx):
            return await operation(ctx.store, args.id, resolve_space(ctx, args.space))

        key = run_local(settings, work)
        print(f"key {key.id} spaces: {_spaces(key)}")
        return 0

    return run


run_bind = _change_binding(apikeys.bind_space)
run_unbind = _change_binding(apikeys.unbind_space)


def run_revoke(args: argparse.Namespace, settings: Settings) -> int:
    async def work(ctx):
        return await apikeys.revoke_api_key(ctx.store, args.id)

    key = run_local(settings, work)
    print(f"revoked key {key.id} of {key.space_uri}")
    return 0
