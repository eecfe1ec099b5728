"""`engram space grant|revoke|members` (local data dir) and the same three under `engram admin space`
(remote, DID-signed garden.engram.admin.grantMember/revokeMember/listMembers).

A member may exchange a delegation token from its own PDS for a space credential at engram
(com.atproto.space.getSpaceCredential); revoking refuses the member's next exchange."""

from __future__ import annotations

import argparse
from typing import Any

from ..config import Settings
from ..views import member_view
from .local import resolve_space, run_local
from .output import print_json, print_table


def _grant_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("space", help="space name or at:// URI")
    p.add_argument("member", metavar="did", help="the member's DID")
    access = p.add_mutually_exclusive_group()
    access.add_argument("--read", action="store_true", help="read access (the default)")
    access.add_argument("--write", action="store_true", help="read and write access")


def add_local_parsers(ss: argparse._SubParsersAction) -> None:
    g = ss.add_parser("grant", help="let a DID read (or also write) a hosted space")
    _grant_flags(g)
    g.add_argument("--json", action="store_true", help="print the member as JSON")
    g.set_defaults(run=run_grant)
    r = ss.add_parser("revoke", help="remove a member; its next credential exchange is refused")
    r.add_argument("space", help="space name or at:// URI")
    r.add_argument("member", metavar="did", help="the member's DID")
    r.set_defaults(run=run_revoke)
    m = ss.add_parser("members", help="list the members of a hosted space")
    m.add_argument("space", help="space name or at:// URI")
    m.add_argument("member", metavar="did", nargs="?", help="show only this DID")
    m.add_argument("--json", action="store_true", help="print the members as JSON")
    m.set_defaults(run=run_members)


def add_remote_parsers(ss: argparse._SubParsersAction) -> None:
    g = ss.add_parser("grant", help="let a DID read (or also write) a hosted space")
    _grant_flags(g)
    g.set_defaults(admin=_remote_grant)
    r = ss.add_parser("revoke", help="remove a member; its next credential exchange is refused")
    r.add_argument("space", help="space name or at:// URI")
    # `member`: `engram admin --did` is the operator
    r.add_argument("member", metavar="did", help="the member's DID")
    r.set_defaults(admin=_remote_revoke)
    m = ss.add_parser("members", help="list the members of a hosted space")
    m.add_argument("space", help="space name or at:// URI")
    m.set_defaults(admin=_remote_members)


def _print_members(views: list[dict]) -> None:
    if not views:
        print("no members yet: add one with `engram space grant <space> <did>`")
        return
    rows = [(v["did"], "read+write" if v["write"] else "read", v["grantedAt"]) for v in views]
    print_table(("DID", "ACCESS", "GRANTED"), rows)


def run_grant(args: argparse.Namespace, settings: Settings) -> int:
    async def work(ctx):
        return await ctx.services.members.grant(resolve_space(ctx, args.space), args.member, write=args.write)

    member = run_local(settings, work)
    if args.json:
        print_json(member_view(member))
    else:
        print(f"granted {'read+write' if member.write else 'read'} on {member.space_uri} to {member.did}")
    return 0


def run_revoke(args: argparse.Namespace, settings: Settings) -> int:
    async def work(ctx):
        uri = resolve_space(ctx, args.space)
        return uri, await ctx.services.members.revoke(uri, args.member)

    uri, revoked = run_local(settings, work)
    print(f"revoked {args.member} on {uri}" if revoked else f"{args.member} was not a member of {uri}")
    return 0


def run_members(args: argparse.Namespace, settings: Settings) -> int:
    async def work(ctx):
        return await ctx.services.members.list_members(resolve_space(ctx, args.space))

    views = [member_view(m) for m in run_local(settings, work) if args.member in (None, m.did)]
    if args.json:
        print_json(views)
    else:
        _print_members(views)
    return 0


async def _remote_grant(args, admin) -> Any:
    out = await admin.procedure(
        "garden.engram.admin.grantMember", {"space": args.space, "did": args.member, "write": args.write}
    )
    if not args.json:
        member = out["member"]
        print(f"granted {'read+write' if member['write'] else 'read'} to {member['did']}")
    return out


async def _remote_revoke(args, admin) -> Any:
    out = await admin.procedure("garden.engram.admin.revokeMember", {"space": args.space, "did": args.member})
    if not args.json:
        print(f"revoked {args.member}" if out["revoked"] else f"{args.member} was not a member")
    return out


async def _remote_members(args, admin) -> Any:
    out = await admin.query("garden.engram.admin.listMembers", {"space": args.space})
    if not args.json:
        _print_members(out["members"])
    return out
