"""Every command, subcommand and argument of `engram` explains itself in --help."""

from __future__ import annotations

import argparse
import contextlib

from engram.cli.main import build_parser


def _undocumented(parser: argparse.ArgumentParser, path: str) -> list[str]:
    missing = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                if not helps.get(name):
                    missing.append(f"{path} {name}")
                missing += _undocumented(sub, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction | argparse._VersionAction) and not action.help:
            missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    return missing


def test_every_command_and_argument_has_help_text():
    assert _undocumented(build_parser(), "engram") == []


def test_admin_subcommands_list_their_help(capsys):
    parser = build_parser()
    admin = ["admin", "--remote", "http://127.0.0.1:9", "--key", "k"]
    for args, expected in [
        ([], ["space", "create, configure, list and delete spaces", "import", "reindex", "apikey"]),
        (["space"], ["create a hosted space", "set a space's model", "list the server's spaces"]),
        (["apikey"], ["create a key (shown once", "list keys (never their tokens)", "revoke a key by id"]),
    ]:
        with contextlib.suppress(SystemExit):
            parser.parse_args(admin + args + ["--help"])
        out = capsys.readouterr().out
        assert all(text in out for text in expected), out
