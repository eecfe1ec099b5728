"""`engram keygen` and `engram credential mint`."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..auth.crypto_keys import PrivateKey
from ..auth.identity import save_operator_key
from ..config import Settings
from ..identifiers import is_record_key
from ..spacehost.minting import mint_for_space
from ..store.uris import space_uri
from .errors import CliError
from .keyfiles import local_keyring, write_key
from .local import require_data_dir, run_local
from .output import print_json


def add_parser(sub: argparse._SubParsersAction) -> None:
    k = sub.add_parser(
        "keygen",
        help="make a new private key and print it with its did:key",
        description="Generate a private key. Prints it as a multibase private Multikey (usable "
        "as ENGRAM_SIGNING_KEY) and its did:key. Keep it secret.",
    )
    k.add_argument("--alg", choices=("ES256", "ES256K"), default="ES256", help="P-256 (default) or secp256k1")
    k.add_argument("--out", type=Path, help="write a 0600 key file instead of printing the private key")
    k.add_argument("--force", action="store_true", help="let --out replace an existing key file")
    k.add_argument(
        "--operator",
        metavar="DID",
        help="store the key in the data dir as this DID's key, so "
        "engram can mint credentials for hosted spaces that DID owns",
    )
    k.add_argument("--json", action="store_true", help="print the key and its did:key as JSON")
    k.set_defaults(run=run_keygen)

    c = sub.add_parser("credential", help="space credentials")
    cs = c.add_subparsers(dest="credential_command", metavar="<subcommand>", required=True)
    m = cs.add_parser("mint", help="mint a credential for a hosted space whose authority key engram holds")
    m.add_argument("space", help="space name or at:// URI")
    m.add_argument("--holder", required=True, metavar="DID_KEY", help="the reader's P-256 did:key")
    m.add_argument("--ttl", type=int, default=600, help="lifetime in seconds (max 3600; default 600)")
    m.add_argument("--out", type=Path, help="write the credential to this file (0600) instead of stdout")
    m.set_defaults(run=run_mint)


def run_keygen(args: argparse.Namespace, settings: Settings) -> int:
    if args.out and args.out.exists() and not args.force:
        # a key file is someone's identity: replacing it by a typo would lose it for good
        raise CliError(f"{args.out} already exists; pass --force to replace it", 2)
    key = PrivateKey.generate(args.alg)
    did_key = key.public_key.did_key
    if args.operator:
        if not args.operator.startswith("did:"):
            raise CliError(f"--operator must be a DID, got {args.operator!r}", 2)
        path = save_operator_key(settings.data_dir, args.operator, key)
        print(f"stored the key of {args.operator} in {path}")
        print(f"publish this as {args.operator}'s #atproto key: {key.public_key.multibase}")
    if args.out:
        write_key(args.out, key)
    if args.json:
        out = {"didKey": did_key, "publicKeyMultibase": key.public_key.multibase}
        if not args.out and not args.operator:
            out["privateKeyMultibase"] = key.to_multibase()
        print_json(out)
    elif not args.operator:
        if not args.out:
            print(f"private key  {key.to_multibase()}")
        else:
            print(f"wrote {args.out}")
        print(f"did:key      {did_key}")
    return 0


def run_mint(args: argparse.Namespace, settings: Settings) -> int:
    require_data_dir(settings)  # the keys are the data dir's, and its DID the server's (cli/local.py)
    uri = args.space
    if not uri.startswith("at://"):
        if not is_record_key(uri):
            raise CliError(f"not a space URI or name: {uri!r}", 2)
        uri = space_uri(settings.service_did, uri)

    async def known(ctx) -> None:  # a credential for a space this data dir does not hold helps no one
        await ctx.services.spaces.require(uri)

    run_local(settings, known)
    token = mint_for_space(local_keyring(settings), uri, args.holder, args.ttl)
    if args.out:
        # 0600 whether or not the file existed (touch's mode applies only to a file it creates)
        fd = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(token + "\n")
    else:
        print(token)
    return 0
