"""`engram search`: a real reader client of a running engram.

It does what any agent does: holds a P-256 holder key, obtains a space credential for it (mints one when
the local data dir holds the space authority's key, else reads `--credential <file>`), signs each request
with the atproto-space profile, embeds the query itself when it runs the space's model (else sends `q` and
lets the service embed it), and calls garden.engram.searchMemories over HTTP.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import time
from pathlib import Path

import aiohttp
from yarl import URL

from ..auth.crypto_keys import PrivateKey
from ..auth.jws import JwsError, parse_jws
from ..auth.space_signature import sign_space_request
from ..config import Settings
from ..identifiers import is_record_key, space_authority
from ..spacehost.minting import mint_for_space
from ..store.uris import space_uri
from .errors import CliError
from .keyfiles import load_or_create_holder_key, local_keyring
from .output import print_json, print_table, truncate
from .query_vector import QueryModel, encode_vector_file, local_query_vector
from .xrpc_client import XrpcClient, query_pairs


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "search",
        help="search a space on a running engram (signed like any reader)",
        description="Search a space on a running engram over HTTP, authenticating as a space reader: a "
        "holder key (~/.config/engram/holder.key, made on first use, or --key), a space credential (minted "
        "from the local data dir's keys when it holds the space authority's key, or --credential), and an "
        "atproto-space request signature. The query is embedded locally when the space's model is the "
        "local embedder, else sent as text for the service to embed.",
    )
    p.add_argument("space", help="space name (under the server's DID) or at:// URI")
    p.add_argument("text", nargs="?", help="what to search for")
    p.add_argument("--vector-file", type=Path, help="query vector instead of text: a JSON array of floats")
    p.add_argument("--author", help="only memories by this DID")
    p.add_argument("--tag", action="append", default=[], help="only memories with this tag (repeatable: all)")
    p.add_argument("--since", help="only memories created at or after this RFC 3339 time")
    p.add_argument("--limit", type=int, default=10, help="results (1-50, default 10)")
    p.add_argument(
        "--url",
        help="engram's URL (default: the local server, http://127.0.0.1:<ENGRAM_PORT>, "
        "i.e. http://127.0.0.1:8080)",
    )
    p.add_argument("--service-did", help="engram's DID (default: asked from describeService)")
    p.add_argument("--key", type=Path, help="holder key file (default ~/.config/engram/holder.key)")
    p.add_argument("--credential", type=Path, help="file holding a space credential (JWT) for the holder key")
    p.add_argument("--model", help="the space's model (with --digest, --dims): skips asking the service")
    p.add_argument("--digest", help="with --model: the model's digest")
    p.add_argument("--dims", type=int, help="with --model: the model's vector dimensions")
    p.add_argument("--query-prefix", default="", help="with --model: the space's query prefix")
    p.add_argument("--remote-embed", action="store_true", help="always send text for the service to embed")
    p.add_argument("--json", action="store_true", help="print the raw searchMemories answer")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    if not args.text and not args.vector_file:
        raise CliError("give the text to search for (or --vector-file)", 2)
    if args.text and args.vector_file:
        raise CliError("give the text to search for or --vector-file, not both (the vector would win)", 2)
    if not 1 <= args.limit <= 50:
        raise CliError("--limit must be between 1 and 50", 2)
    result = asyncio.run(_search(args, settings))
    if args.json:
        print_json(result)
    else:
        _print_hits(result)
    return 0


async def _search(args: argparse.Namespace, settings: Settings) -> dict:
    holder = load_or_create_holder_key(args.key)
    async with aiohttp.ClientSession(headers={"User-Agent": "engram-cli"}) as session:
        client = XrpcClient(args.url or local_server_url(settings), session)
        service_did = (
            args.service_did or (await client.call("GET", client.url("garden.engram.describeService")))["did"]
        )
        uri = _space_uri(args.space, service_did)
        jwt = _credential(args, settings, uri, holder, service_did)
        headers = sign_space_request(holder, jwt, service_did)
        model = await _space_model(args, client, uri, headers)
        params: dict = {
            "space": uri,
            "limit": args.limit,
            "author": args.author,
            "tags": args.tag,
            "since": args.since,
        }
        vector = None
        if args.vector_file:
            if model is None:
                raise CliError("the space has no model: a vector cannot be searched")
            vector = encode_vector_file(args.vector_file, model.dims)
        elif model is not None and not args.remote_embed:
            vector = await asyncio.to_thread(local_query_vector, settings.embedder, model, args.text)
        if vector is not None:
            params.update(vector=vector, model=model.model, modelDigest=model.digest)
        else:
            params["q"] = args.text
        url = client.url("garden.engram.searchMemories")
        return await client.call("GET", URL(url).with_query(query_pairs(params)), headers=headers)


def local_server_url(settings: Settings) -> str:
    """Where `engram serve` with the same settings listens (a wildcard address is reached on loopback)."""
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "", "::") else settings.host
    return f"http://[{host}]:{settings.port}" if ":" in host else f"http://{host}:{settings.port}"


def _space_uri(space: str, service_did: str) -> str:
    if space.startswith("at://"):
        if space_authority(space) is None:
            raise CliError(f"not a space URI: {space!r}", 2)
        return space
    if not is_record_key(space):
        raise CliError(f"not a space URI or name: {space!r}", 2)
    return space_uri(service_did, space)


def _credential(
    args: argparse.Namespace, settings: Settings, uri: str, holder: PrivateKey, service_did: str
) -> str:
    if args.credential is None:
        keyring = local_keyring(settings, service_did)  # the server's DID, not the one these settings make
        if space_authority(uri) not in keyring:
            raise CliError(
                f"no credential for {uri}: the local data dir does not hold its authority's key; "
                "ask the authority for one and pass --credential <file>"
            )
        return mint_for_space(keyring, uri, holder.public_key.did_key)
    try:
        jwt = args.credential.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read credential file {args.credential}: {exc}") from None
    check_credential(jwt, uri, holder, str(args.credential))
    return jwt


def check_credential(jwt: str, uri: str, holder: PrivateKey, name: str) -> None:
    """Catch a wrong, expired or mangled credential file here with a clear message; the service still
    verifies the signature (a credential whose payload was edited fails there as InvalidToken)."""
    try:
        payload = parse_jws(jwt).payload
    except JwsError as exc:
        raise CliError(f"{name} is not a valid space credential ({exc})") from None
    if payload.get("sub") != uri:
        raise CliError(f"{name} is a credential for {payload.get('sub')!r}, not for {uri}")
    cnf = payload.get("cnf")
    if not isinstance(cnf, dict) or cnf.get("kid") != holder.public_key.did_key:
        raise CliError(f"{name} is bound to another holder key, not {holder.public_key.did_key} (see --key)")
    exp = payload.get("exp")
    if not isinstance(exp, int) or exp <= time.time():
        raise CliError(f"{name} has expired: ask the space's authority for a new one")


async def _space_model(
    args: argparse.Namespace, client: XrpcClient, uri: str, headers: dict
) -> QueryModel | None:
    flags = (args.model, args.digest, args.dims)
    if all(f is not None for f in flags):
        return QueryModel(args.model, args.digest, args.dims, args.query_prefix)
    if any(f is not None for f in flags):
        raise CliError("--model, --digest and --dims go together", 2)
    if args.remote_embed and not args.vector_file:
        return None
    url = URL(client.url("garden.engram.getSpaceStatus")).with_query({"space": uri})
    config = (await client.call("GET", url, headers=headers)).get("config")
    if not config:
        return None
    return QueryModel(config["model"], config["modelDigest"], config["dims"], config.get("queryPrefix", ""))


def _print_hits(result: dict) -> None:
    hits = result.get("memories", [])
    if not hits:
        print("no matching memories")
        return
    width = max(shutil.get_terminal_size((120, 24)).columns - 44, 30)
    print_table(
        ("SIM", "CREATED", "TAGS", "TEXT"),
        [
            (
                f"{m.get('similarity', 0) / 1000:.3f}",
                m["createdAt"][:10],
                truncate(",".join(m["tags"]), 18),
                truncate(m["text"], width),
            )
            for m in hits
        ],
    )
    if result.get("approximate"):
        print("(approximate: the exact re-rank ran out of time)")
