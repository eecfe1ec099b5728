"""PPTX as blocks, with python-pptx (docs/documents.md#types): each slide is a page; its title is a
heading, indented paragraphs are items, tables are rows."""

from __future__ import annotations

import io

import pptx

from ...errors import TooLarge
from .blocks import HEADING, ITEM, TEXT, Block, Extracted
from .kinds import PPTX
from .limits import Deadline, Limits
from .word import table_rows


def pptx_extract(data: bytes, limits: Limits, deadline: Deadline) -> Extracted:
    presentation = pptx.Presentation(io.BytesIO(data))
    slides = list(presentation.slides)
    if len(slides) > limits.max_pages:
        raise TooLarge(f"this PPTX file has {len(slides)} slides; at most {limits.max_pages}", "TooManyPages")
    out = Extracted(PPTX, pages=len(slides))
    for number, slide in enumerate(slides, start=1):
        deadline.check()
        title = slide.shapes.title
        if title is not None and title.has_text_frame and title.text_frame.text.strip():
            out.blocks.append(Block(HEADING, " ".join(title.text_frame.text.split()), level=1, page=number))
        for shape in slide.shapes:
            deadline.check()
            if title is not None and shape.shape_id == title.shape_id:
                continue
            if getattr(shape, "has_table", False) and shape.has_table:
                out.blocks.extend(table_rows(shape.table, deadline, page=number))
            elif shape.has_text_frame:
                for paragraph in shape.text_frame.paragraphs:
                    text = " ".join("".join(run.text for run in paragraph.runs).split())
                    if text:
                        out.blocks.append(Block(ITEM if paragraph.level > 0 else TEXT, text, page=number))
    return out
