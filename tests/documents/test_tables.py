"""Tables read the same from CSV and XLSX (engram/service/documents/tables.py): the header names the
rows' cells, a `question,answer` header makes pairs, and a table of one row keeps that row."""

from __future__ import annotations

from support import document_files as files

from engram.service.documents.blocks import QA, ROW
from engram.service.documents.chunking import chunk_blocks
from engram.service.documents.pipeline import prepare

UPLOADS = {
    "t.csv": files.csv_file,
    "t.xlsx": files.xlsx_file,
}


def test_rows_carry_their_header_and_the_plain_text_starts_with_it():
    for name, make in UPLOADS.items():
        extracted = prepare(make([["plan", "price"], ["Pro", "20"], ["Team", "50"]]), name).extracted
        rows = [b for b in extracted.blocks if b.kind == ROW]
        assert [(b.header, b.cells) for b in rows] == [(("plan", "price"), ("Pro", "20")),
                                                      (("plan", "price"), ("Team", "50"))], name  # fmt: skip
        assert extracted.plain_text().splitlines()[-3:] == ["plan price", "Pro 20", "Team 50"], name
        assert [c.text for c in chunk_blocks(extracted.blocks) if c.kind == "row"] == [
            "plan: Pro\nprice: 20",
            "plan: Team\nprice: 50",
        ], name


def test_a_table_of_one_row_is_that_row_not_a_header_of_nothing():
    for name, make in UPLOADS.items():
        extracted = prepare(make([["the", "passphrase", "is", "marmalade"]]), name).extracted
        [row] = [b for b in extracted.blocks if b.kind == ROW]
        assert row.header == () and row.cells == ("the", "passphrase", "is", "marmalade"), name
        assert extracted.plain_text().splitlines()[-1] == "the passphrase is marmalade", name
        assert "marmalade" in " ".join(c.text for c in chunk_blocks(extracted.blocks)), name


def test_question_answer_tables_are_pairs_with_their_header_in_the_plain_text():
    for name, make in UPLOADS.items():
        extracted = prepare(
            make([["Question", "Answer"], ["Where?", "Upstairs"], ["", "orphan"]]), name
        ).extracted
        pairs = [(b.text, b.cells) for b in extracted.blocks if b.kind == QA]
        assert pairs == [("Where?", ("Upstairs",))], name
        assert extracted.plain_text().splitlines()[-2:] == ["Question Answer", "Where? Upstairs"], name
