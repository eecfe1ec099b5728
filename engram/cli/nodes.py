"""`engram nodes`: the cluster's nodes, their space leases, and (with --spaces) which node serves what.

Reads the cluster tables in the PostgreSQL store named by ENGRAM_DATABASE_URL (the PostgreSQL store's migration 0008);
it runs anywhere that database is reachable, with or without a node running there.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
from collections import Counter
from typing import TYPE_CHECKING

from ..config import Settings
from .errors import CliError
from .output import print_json, print_table

if TYPE_CHECKING:
    from ..cluster import leases


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "nodes",
        help="list the cluster's nodes, their leases and the spaces each serves",
        description="List the nodes registered in the PostgreSQL store (ENGRAM_DATABASE_URL): whether each "
        "is live (heartbeat younger than ENGRAM_LEASE_TIMEOUT_MS), when it was last seen and how many space "
        "leases it holds. --spaces lists every lease: space, holder, epoch and time left.",
    )
    p.add_argument("--spaces", action="store_true", help="also list every space lease")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(run=run_nodes)


def run_nodes(args: argparse.Namespace, settings: Settings) -> int:
    if not settings.database_url:
        raise CliError("engram nodes reads the cluster from PostgreSQL: set ENGRAM_DATABASE_URL", 2)
    import psycopg  # only here: every other command would pay for importing it

    try:
        nodes, held = asyncio.run(_read(settings))
    except psycopg.Error as err:
        raise CliError(f"could not read the cluster from PostgreSQL: {err}".strip(), 1) from None
    now = datetime.datetime.now(datetime.UTC)
    per_node = Counter(lease.owner for lease in held if lease.valid)
    if args.json:
        print_json(
            {
                "nodes": [
                    {
                        "id": n.node_id,
                        "url": n.url,
                        "live": n.live,
                        "lastSeen": n.last_seen.isoformat(),
                        "spaces": per_node.get(n.node_id, 0),
                    }
                    for n in nodes
                ],
                "leases": [
                    {
                        "space": lease.space,
                        "owner": lease.owner,
                        "epoch": lease.epoch,
                        "valid": lease.valid,
                        "expiresAt": lease.expires_at.isoformat(),
                    }
                    for lease in held
                ]
                if args.spaces
                else None,
            }
        )
        return 0
    if not nodes:
        print("no nodes registered (is a node running with ENGRAM_NODE_URL set?)")
    else:
        rows = [
            (
                n.node_id,
                n.url,
                "live" if n.live else "dead",
                _ago(now - n.last_seen),
                per_node.get(n.node_id, 0),
            )
            for n in nodes
        ]
        print_table(("NODE", "URL", "STATE", "LAST SEEN", "SPACES"), rows)
    lapsed = sum(1 for lease in held if not lease.valid)
    print(f"\n{sum(per_node.values())} space leases held, {lapsed} lapsed (taken over on the next heartbeat)")
    if args.spaces and held:
        print()
        print_table(
            ("SPACE", "NODE", "EPOCH", "EXPIRES"),
            [
                (
                    lease.space,
                    lease.owner,
                    lease.epoch,
                    _left(lease.expires_at - now) if lease.valid else "lapsed",
                )
                for lease in held
            ],
        )
    return 0


async def _read(settings: Settings) -> tuple[list[leases.Node], list[leases.Lease]]:
    import psycopg

    from ..cluster import leases

    async with await psycopg.AsyncConnection.connect(settings.database_url, autocommit=True) as conn:
        exists = await (await conn.execute("SELECT to_regclass('space_leases') IS NOT NULL")).fetchone()
        if not exists[0]:
            return [], []
        return await leases.nodes(conn, settings.lease_timeout_ms), await leases.all_leases(conn)


def _ago(delta: datetime.timedelta) -> str:
    seconds = max(0.0, delta.total_seconds())
    return f"{seconds:.1f} s ago" if seconds < 120 else f"{seconds / 60:.0f} min ago"


def _left(delta: datetime.timedelta) -> str:
    return f"in {max(0.0, delta.total_seconds()):.1f} s"
