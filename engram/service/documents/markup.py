"""HTML (the standard library's parser) and Markdown (markdown-it-py) as blocks (docs/documents.md#types).

html.parser is in the standard library, tolerant of broken markup and never fetches or expands anything
beyond the five XML entities and HTML's named character references; markdown-it-py is the CommonMark
parser the `mcp`/`rich` stack already installs, with GFM tables enabled.
"""

from __future__ import annotations

from html.parser import HTMLParser

from markdown_it import MarkdownIt

from .blocks import HEADING, ITEM, ROW, TEXT, Block
from .limits import Deadline

_SKIP = {"script", "style", "noscript", "template", "head", "title", "svg", "math"}
_BREAK = {"p", "div", "section", "article", "header", "footer", "main", "blockquote", "pre", "br", "hr",
          "dd", "dt", "figcaption", "caption", "nav", "aside", "form", "address"}  # fmt: skip
_HEADINGS = {f"h{i}": i for i in range(1, 7)}


class _Html(HTMLParser):
    def __init__(self, deadline: Deadline):
        super().__init__(convert_charrefs=True)
        self.deadline = deadline
        self.blocks: list[Block] = []
        self.text: list[str] = []
        self.kind, self.level = TEXT, 0
        self.skip = 0
        self.row: list[str] | None = None
        self.cell: list[str] | None = None
        self.header: tuple[str, ...] = ()
        self.header_row = False

    def flush(self) -> None:
        text = " ".join("".join(self.text).split())
        if text:
            self.blocks.append(Block(self.kind, text, level=self.level))
        self.text, self.kind, self.level = [], TEXT, 0

    def handle_starttag(self, tag, attrs):
        self.deadline.check()
        if tag in _SKIP:
            self.skip += 1
        elif tag in _HEADINGS:
            self.flush()
            self.kind, self.level = HEADING, _HEADINGS[tag]
        elif tag == "li":
            self.flush()
            self.kind = ITEM
        elif tag == "tr":
            self.flush()
            self.row, self.header_row = [], False
        elif tag in ("td", "th") and self.row is not None:
            self.cell = []
            self.header_row = self.header_row or tag == "th"
        elif tag in _BREAK:
            self.flush()

    def handle_endtag(self, tag):
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in ("td", "th") and self.cell is not None and self.row is not None:
            self.row.append(" ".join("".join(self.cell).split()))
            self.cell = None
        elif tag == "tr" and self.row is not None:
            row, self.row = tuple(self.row), None
            if self.header_row and not self.header:
                self.header = row
            elif any(row):
                self.blocks.append(Block(ROW, header=self.header, cells=row))
        elif tag == "table":
            self.header = ()
        elif tag in _HEADINGS or tag == "li" or tag in _BREAK:
            self.flush()

    def handle_data(self, data):
        if self.skip:
            return
        if self.cell is not None:
            self.cell.append(data)
        elif self.row is None:
            self.text.append(data)


def html_blocks(text: str, deadline: Deadline) -> list[Block]:
    parser = _Html(deadline)
    parser.feed(text)
    parser.close()
    parser.flush()
    return parser.blocks


def markdown_blocks(text: str, deadline: Deadline) -> list[Block]:
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    blocks: list[Block] = []
    kind, level, in_items = TEXT, 0, 0
    header: tuple[str, ...] = ()
    row: list[str] | None = None
    in_head = False
    for token in tokens:
        deadline.check()
        t = token.type
        if t == "heading_open":
            kind, level = HEADING, int(token.tag[1])
        elif t == "heading_close":
            kind, level = TEXT, 0
        elif t in ("bullet_list_open", "ordered_list_open"):
            in_items += 1
        elif t in ("bullet_list_close", "ordered_list_close"):
            in_items -= 1
        elif t == "thead_open":
            in_head = True
        elif t == "thead_close":
            in_head = False
        elif t == "tr_open":
            row = []
        elif t == "tr_close" and row is not None:
            if in_head:
                header = tuple(row)
            elif any(row):
                blocks.append(Block(ROW, header=header, cells=tuple(row)))
            row = None
        elif t == "table_close":
            header = ()
        elif t == "inline":
            content = " ".join(token.content.split())
            if row is not None:
                row.append(content)
            elif content:
                use = kind if kind == HEADING else (ITEM if in_items else TEXT)
                blocks.append(Block(use, content, level=level if use == HEADING else 0))
        elif t in ("fence", "code_block") and token.content.strip():
            blocks.append(Block(TEXT, token.content.rstrip()))
    return blocks


def text_blocks(text: str, deadline: Deadline) -> list[Block]:
    """Plain text: paragraphs are separated by blank lines."""
    blocks = []
    for paragraph in text.replace("\r\n", "\n").split("\n\n"):
        deadline.check()
        cleaned = " ".join(paragraph.split())
        if cleaned:
            blocks.append(Block(TEXT, cleaned))
    return blocks
