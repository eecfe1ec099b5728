"""`engram admin --remote <url> --key <file> [--did <did>] <command>`: the operator commands, run against a
remote engram through garden.engram.admin.*, each request signed by the operator's DID
(engram.auth.admin_signature). The server must list that DID in ENGRAM_ADMIN_DIDS."""

from __future__ import annotations

import argparse
import asyncio
import base64
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from tqdm import tqdm
from yarl import URL

from ..auth.admin_signature import sign_admin_request
from ..auth.crypto_keys import PrivateKey
from ..config import Settings
from ..service.imports import decode_lines
from .apikey import key_create_arguments
from .errors import CliError
from .importer import open_lines
from .ingest import collect, summary
from .keyfiles import read_key
from .members import add_remote_parsers as add_remote_member_parsers
from .output import confirm_or_stop, print_json, print_table
from .xrpc_client import RemoteError, XrpcClient, query_pairs

IMPORT_BATCH = 500  # under importMemories' 1000 and well under the default 16 MiB body limit


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "admin",
        help="run operator commands against a remote engram (DID-signed)",
        description="Operator commands over garden.engram.admin.*, signed with your DID's "
        "#atproto key. The server must list the DID in ENGRAM_ADMIN_DIDS.",
    )
    p.add_argument(
        "--remote", required=True, metavar="URL", help="the server's public URL (ENGRAM_PUBLIC_URL)"
    )
    p.add_argument("--key", required=True, type=Path, help="key file of the DID's #atproto key")
    p.add_argument("--did", help="the operator DID (default: the DID named in the key file)")
    p.add_argument("--json", action="store_true", help="print the server's answers as JSON")
    a = p.add_subparsers(dest="admin_command", metavar="<command>", required=True)

    s = a.add_parser("space", help="create, configure, list and delete spaces")
    ss = s.add_subparsers(dest="space_command", metavar="<subcommand>", required=True)
    c = ss.add_parser("create", help="create a hosted space on the server and print its at:// URI")
    c.add_argument("name", help="the space's name (record key: letters, digits, . _ : ~ -)")
    c.add_argument(
        "--authority",
        metavar="DID",
        help="the DID that owns the space and mints its readers' credentials (default: the server's DID)",
    )
    _model_flags(c)
    c.set_defaults(admin=_space_create)
    g = ss.add_parser("config", help="set a space's model (or the next model, during a model change)")
    g.add_argument("space", help="space name or at:// URI")
    _model_flags(g)
    g.add_argument("--next", action="store_true", help="the model flags name the next model")
    g.add_argument("--clear-next", action="store_true", help="drop a pending model change")
    g.set_defaults(admin=_space_config)
    ss.add_parser("list", help="list the server's spaces").set_defaults(admin=_space_list)
    d = ss.add_parser("delete", help="delete a space and all its memories")
    d.add_argument("space", help="space name or at:// URI")
    d.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    d.set_defaults(admin=_space_delete)
    add_remote_member_parsers(ss)  # grant | revoke | members (engram/cli/members.py)

    i = a.add_parser("import", help="import a JSONL file or export tar in batches")
    i.add_argument("space", help="space name or at:// URI")
    i.add_argument("file", type=Path, help="a JSONL file (one memory a line) or an `engram export` tar")
    i.set_defaults(admin=_import)
    g = a.add_parser("ingest", help="ingest documents into a space (garden.engram.admin.ingestDocument)")
    g.add_argument("space", help="space name or at:// URI")
    g.add_argument(
        "paths", nargs="+", type=Path, metavar="FILE|DIR", help="files, or directories read recursively"
    )
    g.set_defaults(admin=_ingest)
    r = a.add_parser("reindex", help="rebuild a space's indexes")
    r.add_argument("space", help="space name or at:// URI")
    r.set_defaults(admin=_reindex)

    k = a.add_parser("apikey", help="API keys of the REST shims")
    ks = k.add_subparsers(dest="apikey_command", metavar="<subcommand>", required=True)
    kc = ks.add_parser("create", help="create a key (shown once; only its hash is stored)")
    key_create_arguments(kc)
    kc.set_defaults(admin=_apikey_create)
    kl = ks.add_parser("list", help="list keys (never their tokens)")
    kl.add_argument("space", nargs="?", help="only the keys of this space")
    kl.set_defaults(admin=_apikey_list)
    kr = ks.add_parser("revoke", help="revoke a key by id")
    kr.add_argument("id", type=int, help="the key's id (from `engram admin apikey list`)")
    kr.set_defaults(admin=_apikey_revoke)
    p.set_defaults(run=run)


def _model_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", help="embedding model name (with --digest and --dims)")
    p.add_argument("--digest", help="the model's digest (pins the exact build)")
    p.add_argument("--dims", type=int, help="the model's vector dimensions")
    p.add_argument("--document-prefix", help="text prepended to memories before embedding")
    p.add_argument("--query-prefix", help="text prepended to queries before embedding")


class AdminClient:
    def __init__(self, client: XrpcClient, key: PrivateKey, did: str):
        self.client, self.key, self.did = client, key, did

    async def query(self, nsid: str, params: dict[str, Any] | None = None) -> Any:
        url = str(URL(self.client.url(nsid)).with_query(query_pairs(params or {})))
        headers = sign_admin_request(self.key, self.did, "GET", url, b"")
        return await self.client.call("GET", URL(url), headers=headers)

    async def procedure(self, nsid: str, body: dict[str, Any]) -> Any:
        url = self.client.url(nsid)
        raw = orjson.dumps(body)
        headers = sign_admin_request(
            self.key, self.did, "POST", url, raw, {"Content-Type": "application/json"}
        )
        return await self.client.call("POST", URL(url), headers=headers, body=raw)


def run(args: argparse.Namespace, settings: Settings) -> int:
    key, named = read_key(args.key)
    did = args.did or named
    if not did:
        raise CliError("give --did: the key file does not name its DID", 2)

    async def go() -> Any:
        async with aiohttp.ClientSession(headers={"User-Agent": "engram-admin"}) as session:
            return await args.admin(
                args, AdminClient(XrpcClient(args.remote, session, flag="--remote"), key, did)
            )

    result = asyncio.run(go())
    status = 0
    if isinstance(result, Partial):  # an import or ingest with refused parts exits as the local one does
        result, status = result.result, result.status
    if args.json:
        print_json(result)
    return status


@dataclass(frozen=True)
class Partial:
    """An admin command's result with the exit status its refused parts call for."""

    result: Any
    status: int


def _model(args: argparse.Namespace) -> dict | None:
    given = (args.model, args.digest, args.dims)
    if all(v is None for v in given):
        return None
    if any(v is None for v in given):
        raise CliError("--model, --digest and --dims go together", 2)
    return {"model": args.model, "modelDigest": args.digest, "dims": args.dims}


def _prefixes(args: argparse.Namespace) -> dict:
    out = {}
    if args.document_prefix is not None:
        out["documentPrefix"] = args.document_prefix
    if args.query_prefix is not None:
        out["queryPrefix"] = args.query_prefix
    return out


async def _space_create(args, admin: AdminClient) -> Any:
    body = {"name": args.name, **_prefixes(args)}
    if args.authority:
        body["authority"] = args.authority
    if (model := _model(args)) is not None:
        body["model"] = model
    out = await admin.procedure("garden.engram.admin.createSpace", body)
    if not args.json:
        print(out["space"]["uri"])
    return out


async def _space_config(args, admin: AdminClient) -> Any:
    body: dict = {"space": args.space, **_prefixes(args)}
    model = _model(args)
    if args.next and model is None:
        raise CliError("--next names the model being migrated to: give it with --model", 2)
    if args.clear_next:
        body["clearNext"] = True
    if model is not None:
        body["next" if args.next else "model"] = model
    out = await admin.procedure("garden.engram.admin.configureSpace", body)
    if not args.json:
        config = out["space"].get("config", {})
        print(
            f"{out['space']['uri']}: {config.get('model')} ({config.get('modelDigest')}, "
            f"{config.get('dims')} dims)" + (f", next {config['next']['model']}" if "next" in config else "")
        )
    return out


async def _space_list(args, admin: AdminClient) -> Any:
    spaces: list[dict] = []
    cursor = None
    while True:  # the server pages (1,000 at most per call); the CLI shows them all
        page = await admin.query("garden.engram.admin.listSpaces", {"limit": 1000, "cursor": cursor})
        spaces.extend(page["spaces"])
        cursor = page.get("cursor")
        if not cursor:
            break
    out = {"spaces": spaces}
    if not args.json:
        print_table(
            ("NAME", "MEMORIES", "MODEL", "URI"),
            [
                (s["name"], s.get("memories", 0), s.get("config", {}).get("model", "-"), s["uri"])
                for s in spaces
            ],
        )
    return out


async def _space_delete(args, admin: AdminClient) -> Any:
    confirm_or_stop(f"Delete {args.space} and all its memories on {args.remote}?", args.yes)
    out = await admin.procedure("garden.engram.admin.deleteSpace", {"space": args.space})
    if not args.json:
        print(f"deleted {out['uri']}")
    return out


async def _import(args, admin: AdminClient) -> Any:
    if not args.file.is_file():
        raise CliError(f"{args.file}: {'a directory, not a file' if args.file.is_dir() else 'no such file'}")
    totals: dict[str, Any] = {"created": 0, "updated": 0, "unchanged": 0, "notIndexed": 0, "skipped": []}
    with (
        open(args.file, "rb") as f,  # noqa: ASYNC230 - a CLI run: nothing else waits on this loop
        tqdm(unit="memory", desc="importing", disable=None, file=sys.stderr) as bar,
    ):
        lines, bar.total, _ = open_lines(args.file, f)
        batch: list[tuple[int, Any]] = []
        for number, value in decode_lines(lines):
            if isinstance(value, Exception) or not isinstance(value, dict):
                # refused here as `engram import` refuses it, so it never costs its batch's other lines
                reason = str(value) if isinstance(value, Exception) else "each line must be a JSON object"
                totals["skipped"].append({"line": number, "reason": reason})
                bar.update(1)
                continue
            batch.append((number, value))
            if len(batch) == IMPORT_BATCH:
                await _send_batch(admin, args.space, batch, totals)
                bar.update(len(batch))
                batch = []
        if batch:
            await _send_batch(admin, args.space, batch, totals)
            bar.update(len(batch))
    totals["skipped"].sort(key=lambda s: s["line"])
    if not args.json:
        print(
            f"{totals['created']} created, {totals['updated']} updated, {totals['unchanged']} unchanged, "
            f"{len(totals['skipped'])} skipped"
        )
        for skip in totals["skipped"]:
            print(f"  line {skip['line']}: skipped: {skip['reason']}", file=sys.stderr)
    written = totals["created"] + totals["updated"] + totals["unchanged"]
    return Partial(totals, 0 if written or not totals["skipped"] else 1)  # as importer.py's run


async def _ingest(args, admin: AdminClient) -> Any:
    """Each file in one ingestDocument call (a refused file is reported and the rest go on)."""
    results = []
    paths = list(collect(args.paths))
    for path in tqdm(paths, unit="file", desc="ingesting", disable=None, file=sys.stderr):
        content = {"$bytes": base64.b64encode(path.read_bytes()).decode()}
        body = {"space": args.space, "name": str(path), "content": content}
        try:
            results.append(
                {"file": str(path), **await admin.procedure("garden.engram.admin.ingestDocument", body)}
            )
        except RemoteError as exc:
            results.append(
                {"file": str(path), "status": "refused", "error": exc.message, "errorName": exc.name}
            )
    if not args.json:
        summary(args.space, results)
    refused = any(r.get("status") == "refused" for r in results)
    return Partial({"space": args.space, "documents": results}, 1 if refused else 0)  # as ingest.py's run


async def _send_batch(admin: AdminClient, space: str, batch: list[tuple[int, Any]], totals: dict) -> None:
    out = await admin.procedure(
        "garden.engram.admin.importMemories", {"space": space, "memories": [value for _, value in batch]}
    )
    for name in ("created", "updated", "unchanged", "notIndexed"):
        totals[name] += out[name]
    totals["skipped"].extend({"line": batch[s["index"]][0], "reason": s["reason"]} for s in out["skipped"])


async def _reindex(args, admin: AdminClient) -> Any:
    out = await admin.procedure("garden.engram.admin.reindexSpace", {"space": args.space})
    if not args.json:
        space = out["space"]
        indexed, total = space.get("indexed", 0), space.get("memories", 0)
        print(f"rebuilt {space['uri']}: {indexed} of {total} memories indexed")
    return out


async def _apikey_create(args, admin: AdminClient) -> Any:
    body = {"space": args.space, "scopes": args.scopes or ["read"], "label": args.label}
    if args.extra_spaces:
        body["extraSpaces"] = args.extra_spaces
    out = await admin.procedure("garden.engram.admin.createApiKey", body)
    if not args.json:
        print(out["token"])
        print(f"key {out['key']['id']}: store the token now, it is not shown again", file=sys.stderr)
    return out


async def _apikey_list(args, admin: AdminClient) -> Any:
    out = await admin.query("garden.engram.admin.listApiKeys", {"space": args.space})
    if not args.json:
        print_table(
            ("ID", "SCOPES", "STATE", "LABEL", "SPACE"),
            [
                (
                    k["id"],
                    ",".join(k["scopes"]),
                    "revoked" if "revokedAt" in k else "live",
                    k["label"],
                    k["space"],
                )
                for k in out["keys"]
            ],
        )
    return out


async def _apikey_revoke(args, admin: AdminClient) -> Any:
    out = await admin.procedure("garden.engram.admin.revokeApiKey", {"id": args.id})
    if not args.json:
        print(f"revoked key {out['key']['id']}")
    return out
