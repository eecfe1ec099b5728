"""Console page time against the XRPC call behind it, side by side in one run (docs/benchmarks.md).

Over the README's 300 example memories embedded with the built-in model, interleaved over rounds:
  - text search: signed searchMemories with `q` vs the space page with the same `q` (which also renders
    the newest-first list and the space's counts);
  - graph: signed getMemoryGraph (150 nodes, minSimilarity 0.4) vs the console's graph JSON;
  - status: signed getSpaceStatus vs the spaces page.

    .venv/bin/python scripts/bench_console.py [--rounds 5] [--count 40]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from pathlib import Path

from benchlib import engram_server, interleave, load_average

from engram.console.login_links import create_link_token
from engram.service.imports import decode_lines, import_values

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "memories.jsonl"
QUESTIONS = [
    "Which JavaScript package manager does Dana prefer?",
    "Which Postgres version does production use?",
    "Why were some customers billed twice?",
    "Who has to sign off on token-handling changes in the auth gateway?",
    "When does Dana's passport run out?",
]


async def sign_in(srv) -> dict[str, str]:
    """An operator session cookie, the way a browser gets one (link page, then the form's POST)."""
    token = create_link_token(srv.ctx.settings.data_dir, time.time())
    async with srv.session.get(f"{srv.base}/console/login", params={"token": token}) as r:
        csrf = re.search(r"engram_console_login=([^;]+)", r.headers["Set-Cookie"]).group(1)
    async with srv.session.post(
        f"{srv.base}/console/login",
        data={"token": token, "csrf": csrf},
        headers={"Cookie": f"engram_console_login={csrf}"},
        allow_redirects=False,
    ) as r:
        assert r.status == 303, r.status
        session = re.search(r"engram_console=([^;]+)", r.headers.getone("Set-Cookie")).group(1)
    return {"Cookie": f"engram_console={session}"}


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--count", type=int, default=40)
    args = parser.parse_args()

    async with engram_server(embedder="builtin", text_search_rate=0) as srv:
        space = (await srv.ctx.services.spaces.create_hosted("notes")).uri
        lines = ((n, line) for n, line in enumerate(EXAMPLES.read_bytes().splitlines(), 1) if line.strip())
        await import_values(
            srv.ctx.store, srv.ctx.services.spaces, srv.ctx.services.memories, space, decode_lines(lines)
        )
        signed, cookie = srv.signed(space), await sign_in(srv)
        xrpc = f"{srv.base}/xrpc/garden.engram."

        def getter(url: str, params: dict | None, headers: dict[str, str]):
            async def call(i: int) -> None:
                p = {k: (v[i % len(v)] if isinstance(v, list) else v) for k, v in (params or {}).items()}
                async with srv.session.get(url, params=p, headers=headers, allow_redirects=False) as r:
                    assert r.status == 200, (url, r.status)
                    await r.read()

            return call

        series = {
            "api_search": getter(xrpc + "searchMemories", {"space": space, "q": QUESTIONS}, signed),
            "page_search": getter(f"{srv.base}/console/space", {"space": space, "q": QUESTIONS}, cookie),
            "api_graph": getter(xrpc + "getMemoryGraph", {"space": space, "limit": "150"}, signed),
            "page_graph": getter(f"{srv.base}/console/graph.json", {"space": space, "limit": "150"}, cookie),
            "api_status": getter(xrpc + "getSpaceStatus", {"space": space}, signed),
            "page_spaces": getter(f"{srv.base}/console/", None, cookie),
        }
        for call in series.values():  # warm: index loaded, first-request costs paid
            await call(0)
        load_before = load_average()
        results = await interleave(args.rounds, args.count, **series)
        summary = {
            name: {"p50_ms": round(r["p50_ms"], 2), "p99_ms": round(r["p99_ms"], 2)}
            for name, r in results.items()
        }
        for page, api in (
            ("page_search", "api_search"),
            ("page_graph", "api_graph"),
            ("page_spaces", "api_status"),
        ):
            summary[page]["p50_vs_api"] = round(results[page]["p50_ms"] / results[api]["p50_ms"], 2)
        print(json.dumps({"load_before": load_before, "load_after": load_average(), **summary}, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
