"""Code comments cite documents that are in the repository.

A maintainer has only the repo: a comment under engram/ may point at `docs/*.md` (with a `#section` that
exists), README.md or HACKING.md, never at design notes or research kept elsewhere ("DESIGN §4",
spaces.md, ../shared/...)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import engram

PACKAGE = Path(engram.__file__).parent
ROOT = PACKAGE.parent
# Names of documents that live outside the repository, and the ways they were cited.
OUTSIDE = re.compile(r"\bDESIGN\b|\.\./shared|\breference/|engram-garden\.md|\blibs\.md|\bperformance\.md")
MD_CITATION = re.compile(r"(?<![\w/.-])([\w./-]*\w\.md)(#[\w-]+)?")


def anchors(path: Path) -> set[str]:
    """GitHub-style anchors of a Markdown file's headings."""
    out = set()
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def problems_in(text: str, where: str) -> list[str]:
    found = [f"{where}: cites {m.group()!r} (not in the repository)" for m in OUTSIDE.finditer(text)]
    for m in MD_CITATION.finditer(text):
        target, anchor = ROOT / m.group(1), m.group(2)
        if not target.is_file():
            found.append(f"{where}: cites {m.group(1)}, which is not a file in the repository")
        elif anchor and anchor[1:] not in anchors(target):
            found.append(f"{where}: cites {m.group()}, but {m.group(1)} has no such section")
    return found


def test_comments_under_engram_and_scripts_cite_only_documents_in_the_repository():
    problems = []
    for path in sorted([*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.sql"), *(ROOT / "scripts").glob("*.py")]):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            problems += problems_in(line, f"{path.relative_to(ROOT)}:{number}")
    assert problems == []


def test_the_maintainer_documents_cite_nothing_outside_the_repository():
    docs = [ROOT / "HACKING.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert [f"{d.name}: {m.group()}" for d in docs for m in OUTSIDE.finditer(d.read_text())] == []
    # Their links between each other resolve, sections included: (protocol.md#space-uris), (#layers).
    broken = []
    for doc in docs:
        for target, anchor in re.findall(r"\]\(([\w./-]*)(?:#([\w-]+))?\)", doc.read_text()):
            path = (doc.parent / target) if target else doc
            if not path.exists() or (anchor and anchor not in anchors(path)):
                broken.append(f"{doc.name}: ({target}#{anchor})")
    assert broken == []


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("# see docs/protocol.md#space-credentials", True),
        ("# see docs/architecture.md", True),
        ("# the durability contract in README.md", True),
        ("# DESIGN §4.1 steps 2-5", False),
        ("# (spaces.md §4.3)", False),
        ("# reference/embedders.md", False),
        ("# verbatim copy of ../shared/testdata/x.json", False),
        ("# docs/protocol.md#no-such-section", False),
        ("# docs/nothing.md", False),
        ("# engram-garden.md §6", False),
    ],
)
def test_the_checker_tells_repo_documents_from_outside_ones(text, ok):
    assert (problems_in(text, "x") == []) is ok
