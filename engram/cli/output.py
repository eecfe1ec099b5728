"""Printing results: JSON for scripts (`--json`), plain aligned tables for people."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import orjson

from .errors import CliError


def print_json(value: Any) -> None:
    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        # The last column is left ragged so long text is not padded into trailing spaces.
        line = "  ".join(c.ljust(w) for c, w in zip(row[:-1], widths[:-1], strict=True))
        print((line + "  " + row[-1]).rstrip() if len(row) > 1 else row[0])
        if n == 0:
            print("  ".join("-" * w for w in widths))


def truncate(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def confirm_or_stop(prompt: str, yes: bool) -> None:
    """Go on only if `yes` (the command's --yes) or the user answers y at a terminal; the local and the
    remote (`engram admin`) destructive commands both ask through here, so they behave alike."""
    if not yes and not confirm(prompt):
        raise CliError("not deleted (pass --yes to skip the question)", 1)


def confirm(prompt: str) -> bool:
    if not sys.stdin.isatty():
        return False
    try:
        return input(f"{prompt} [y/N] ").strip().lower() in {"y", "yes"}
    except EOFError:
        return False
