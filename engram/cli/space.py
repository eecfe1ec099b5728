"""`engram space create|config|list|status|delete`: hosted spaces in the local data dir."""

from __future__ import annotations

import argparse
import sys

from ..config import Settings
from ..store import ModelSpec
from ..views import space_view
from .errors import CliError
from .local import resolve_space, run_local
from .members import add_local_parsers as add_member_parsers
from .output import confirm_or_stop, print_json, print_table


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "space",
        help="create, configure, list, inspect and delete hosted spaces",
        description="Manage hosted spaces in the local data dir (ENGRAM_DATA_DIR).",
    )
    ss = p.add_subparsers(dest="space_command", metavar="<subcommand>", required=True)

    c = ss.add_parser(
        "create",
        help="create a hosted space and print its at:// URI",
        description="Create a hosted space. Its model defaults to the configured embedder "
        "(ENGRAM_EMBEDDER), so text search works at once.",
    )
    c.add_argument("name", help="the space's name (record key: letters, digits, . _ : ~ -)")
    c.add_argument(
        "--authority",
        metavar="DID",
        help="the DID that owns the space and mints its readers' "
        "credentials (default: engram's own DID); engram resolves its DID document to verify them",
    )
    _model_flags(c)
    c.add_argument("--json", action="store_true", help="print the space as JSON")
    c.set_defaults(run=run_create)

    g = ss.add_parser("config", help="set a space's model (or the next model, during a model change)")
    g.add_argument("space", help="space name or at:// URI")
    _model_flags(g)
    g.add_argument(
        "--next",
        action="store_true",
        help="set the model being migrated to (config.next) and keep the active one",
    )
    g.add_argument("--clear-next", action="store_true", help="drop a pending model change")
    g.add_argument("--json", action="store_true", help="print the space as JSON")
    g.set_defaults(run=run_config)

    ls = ss.add_parser("list", help="list spaces")
    ls.add_argument("--json", action="store_true", help="print the spaces as JSON")
    ls.set_defaults(run=run_list)

    st = ss.add_parser("status", help="memory counts and model of a space")
    st.add_argument("space", help="space name or at:// URI")
    st.add_argument("--json", action="store_true", help="print the status as JSON")
    st.set_defaults(run=run_status)

    _add_sync_parsers(ss)

    d = ss.add_parser("delete", help="delete a space and all its memories")
    d.add_argument("space", help="space name or at:// URI")
    d.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    d.set_defaults(run=run_delete)

    add_member_parsers(ss)  # grant | revoke | members (engram/cli/members.py)


def _model_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model",
        help="embedding model name: alone, one of the models this service runs (ENGRAM_EMBEDDER), "
        "e.g. multilingual-e5-small-q4; with --digest and --dims, any model",
    )
    p.add_argument("--digest", help="the model's digest (pins the exact build)")
    p.add_argument("--dims", type=int, help="the model's vector dimensions")
    p.add_argument("--document-prefix", default=None, help="text prepended to memories before embedding")
    p.add_argument("--query-prefix", default=None, help="text prepended to queries before embedding")


def _model_from_flags(args: argparse.Namespace) -> ModelSpec | str | None:
    """A full model, a hosted model's name (resolved by `_resolve_model` once the embedders are loaded),
    or None."""
    given = [args.model, args.digest, args.dims]
    if all(v is None for v in given):
        return None
    if args.model is not None and args.digest is None and args.dims is None:
        return args.model
    if any(v is None for v in given):
        raise CliError("--digest and --dims go with --model, and with each other", 2)
    return ModelSpec(args.model, args.digest, args.dims)


def _resolve_model(ctx, model: ModelSpec | str | None) -> ModelSpec | None:
    return ctx.services.spaces.hosted_model(model) if isinstance(model, str) else model


def run_create(args: argparse.Namespace, settings: Settings) -> int:
    model = _model_from_flags(args)

    async def work(ctx):
        return await ctx.services.spaces.create_hosted(
            args.name,
            authority=args.authority,
            model=_resolve_model(ctx, model),
            document_prefix=args.document_prefix or "",
            query_prefix=args.query_prefix or "",
        )

    # The default model, or one named alone, is a configured embedder's: load them only then.
    space = run_local(settings, work, embedder=not isinstance(model, ModelSpec), create=True)
    if args.json:
        print_json(space_view(space))
    else:
        print(space.uri)
    return 0


def run_config(args: argparse.Namespace, settings: Settings) -> int:
    model = _model_from_flags(args)
    if model is None and not args.clear_next and args.document_prefix is None and args.query_prefix is None:
        raise CliError("give --model, --digest and --dims (or --clear-next, or a prefix)", 2)
    if args.next and model is None:
        raise CliError("--next names the model being migrated to: give it with --model", 2)

    async def work(ctx):
        # The same merge as the remote `engram admin space config` (SpaceService.configure).
        resolved = _resolve_model(ctx, model)
        uri = resolve_space(ctx, args.space)
        space = await ctx.services.spaces.configure(
            uri,
            None if args.next else resolved,
            next=resolved if args.next else None,
            clear_next=args.clear_next,
            document_prefix=args.document_prefix,
            query_prefix=args.query_prefix,
        )
        return space, await ctx.services.spaces.status(uri)

    space, status = run_local(settings, work, embedder=isinstance(model, str))
    if args.json:
        print_json(space_view(space))
    else:
        _print_config(space)
    unindexed = sum(count for _, count in status.skipped)
    if unindexed and model is not None and not args.next:
        print(
            f"engram: {unindexed} of {status.memories} memories carry no vector of the new model and are not"
            f" searchable: `engram reindex {args.space}` embeds them with it where engram runs the model",
            file=sys.stderr,
        )
    return 0


def _print_config(space) -> None:
    print(f"space   {space.uri}")
    config = space.config
    if config is None:
        print("model   (none declared)")
        return
    print(f"model   {config.active.model}  {config.active.digest}  dims={config.active.dims}")
    if config.next is not None:
        print(f"next    {config.next.model}  {config.next.digest}  dims={config.next.dims}")
    if config.document_prefix or config.query_prefix:
        print(f"prefix  document={config.document_prefix!r} query={config.query_prefix!r}")


def run_list(args: argparse.Namespace, settings: Settings) -> int:
    async def work(ctx):
        listed, after = [], ""
        while page := await ctx.services.spaces.page(after, 1000):
            listed.extend((status.space, status) for status in page)
            after = page[-1].space.uri
        return listed

    listed = run_local(settings, work)
    if args.json:
        print_json([space_view(s, st) for s, st in listed])
    elif not listed:
        print("no spaces yet: create one with `engram space create <name>`")
    else:
        print_table(
            ("NAME", "MEMORIES", "MODEL", "URI"),
            [(s.skey, st.memories, s.config.active.model if s.config else "-", s.uri) for s, st in listed],
        )
    return 0


def run_status(args: argparse.Namespace, settings: Settings) -> int:
    async def work(ctx):
        return await ctx.services.spaces.status(resolve_space(ctx, args.space))

    status = run_local(settings, work)
    view = space_view(status.space, status)
    if args.json:
        view["skippedByAuthor"] = [{"author": a, "count": c} for a, c in status.skipped]
        view["skippedReasons"] = dict(status.skipped_reasons)
        if status.space.kind == "synced":
            view["sync"] = _sync_view(settings, status.space.uri)
        print_json(view)
        return 0
    _print_config(status.space)
    print(f"stored  {view['memories']} memories, {view['indexed']} indexed, {view['skipped']} not indexed")
    for reason, count in sorted(status.skipped_reasons.items()):
        print(f"        {count} not indexed: {reason}")
    if "buildingMemories" in view:
        print(f"next    {view['buildingMemories']} memories already carry a vector for the next model")
    _print_sync(args, settings, status.space)
    return 0


def run_delete(args: argparse.Namespace, settings: Settings) -> int:
    async def lookup(ctx):
        return (await ctx.services.spaces.require(resolve_space(ctx, args.space))).uri

    uri = run_local(settings, lookup)
    confirm_or_stop(f"Delete {uri} and all its memories?", args.yes)

    async def work(ctx):
        return await ctx.services.spaces.delete(uri)

    run_local(settings, work)
    print(f"deleted {uri}")
    return 0


# -- synced spaces (engram/sync) ----------------------------------------------------------------------


def _add_sync_parsers(ss) -> None:
    a = ss.add_parser(
        "add",
        help="sync and index an AT Protocol space, read through an account that may read it",
        description="Register a synced space. engram signs in as ACCOUNT with an app password at its PDS, "
        "exchanges delegation tokens for space credentials at the authority's space host, and keeps the "
        "space in sync (notifications when ENGRAM_PUBLIC_URL is https, and a poll every "
        "ENGRAM_POLL_INTERVAL). The app password is stored 0600 in the data dir, never in the database. "
        "A running server starts syncing the space at its next poll.",
    )
    a.add_argument("space", help="at://{authority}/space/garden.engram.space/{skey}")
    a.add_argument("--account", required=True, metavar="DID", help="the account engram reads the space as")
    a.add_argument(
        "--app-password-file",
        required=True,
        metavar="PATH",
        help="file holding the account's app password (use - for stdin); never pass it on the command line",
    )
    a.add_argument("--pds", metavar="URL", help="the account's PDS (default: from its DID document)")
    a.set_defaults(run=run_add)


def run_add(args: argparse.Namespace, settings: Settings) -> int:
    import sys

    from ..sync.registration import register_app_password_space
    from ..sync.secrets import SecretStore

    try:
        if args.app_password_file == "-":
            password = sys.stdin.read().strip()
        else:
            with open(args.app_password_file, encoding="utf-8") as f:
                password = f.read().strip()
    except OSError as e:
        raise CliError(f"cannot read the app password file: {e.strerror}", 2) from None

    async def work(ctx):
        return await register_app_password_space(
            ctx.store, SecretStore(settings.data_dir), args.space, args.account, password, args.pds
        )

    synced = run_local(settings, work, create=True)
    print(f"syncing {synced.uri} as {args.account}")
    return 0


def _sync_view(settings: Settings, uri: str):
    from ..sync.status import sync_view

    async def work(ctx):
        return await ctx.store.read(sync_view, uri)

    return run_local(settings, work)


def _print_sync(args: argparse.Namespace, settings: Settings, space) -> None:
    if space.kind != "synced":
        return
    view = _sync_view(settings, space.uri)
    if view is None:
        return
    print(
        f"sync    via {view['access']}, space rev {view.get('spaceRev', '-')}, "
        f"last full sync {view.get('lastFullSync', 'never')}"
    )
    if view.get("lastError"):
        print(f"        last error: {view['lastError']}")
    if view["repos"]:
        print_table(
            ("REPO", "REV", "LAST SUCCESS", "FAILURES", "LAST ERROR"),
            [
                (
                    r["did"],
                    r.get("rev", "-"),
                    r.get("lastSuccess", "-"),
                    r["failures"],
                    r.get("lastError", ""),
                )
                for r in view["repos"]
            ],
        )
