"""One golden test per type the retrieval plugin's /upsert-file reads (PDF, DOCX, PPTX, TXT, MD, CSV), plus
HTML and XLSX, over files the tests generate: the chunks stored and the citation each carries
(docs/documents.md#chunks, #citations)."""

from __future__ import annotations

from support import document_files as files


def cite(memory) -> tuple:
    a = memory.attrs
    return (a["documentId"], a["documentName"], a.get("page"), a["chunkIndex"], a.get("section"))


async def test_pdf_is_chunked_per_page_and_each_chunk_cites_its_page(library):
    pages = [[f"Page {n} covers topic {word}.", f"The {word} policy has {n} rules."] for n, word in
             [(1, "alpha"), (2, "bravo"), (3, "charlie")]]  # fmt: skip
    result = await library.ingest(files.pdf(pages), "policies.pdf", source_url="https://example.com/p.pdf")
    assert (result.kind, result.pages, result.chunks, result.status) == ("pdf", 3, 3, "created")
    chunks = await library.chunks("policies.pdf")
    assert [m.text for m in chunks] == [
        f"Page {n} covers topic {w}. The {w} policy has {n} rules."
        for n, w in [(1, "alpha"), (2, "bravo"), (3, "charlie")]
    ]
    assert [cite(m) for m in chunks] == [("policies.pdf", "policies.pdf", n, n - 1, None) for n in (1, 2, 3)]
    assert {m.attrs["sourceUrl"] for m in chunks} == {"https://example.com/p.pdf"}
    assert {m.source for m in chunks} == {"https://example.com/p.pdf"}


async def test_docx_sections_follow_headings_and_its_table_is_one_chunk_per_row(library):
    data = files.docx_file(
        "Handbook",
        [
            ("Refunds", ["Refunds take five working days.", "- Keep the receipt"]),
            ("Shipping", ["We ship weekly."]),
        ],
        table=[["Plan", "Price"], ["Basic", "$5"], ["Pro", "$20"]],
    )
    result = await library.ingest(data, "handbook.docx")
    assert (result.kind, result.chunks) == ("docx", 4)
    assert [
        (m.text, m.attrs.get("section"), m.attrs["chunkKind"]) for m in await library.chunks("handbook.docx")
    ] == [
        (
            "Handbook › Refunds\nRefunds take five working days. - Keep the receipt",
            "Handbook › Refunds",
            "section",
        ),
        ("Handbook › Shipping\nWe ship weekly.", "Handbook › Shipping", "section"),
        ("Plan: Basic\nPrice: $5", "Handbook › Shipping", "row"),
        ("Plan: Pro\nPrice: $20", "Handbook › Shipping", "row"),
    ]


async def test_pptx_slides_are_pages_with_their_titles_as_headings(library):
    data = files.pptx_file([("Roadmap", ["Ship search in May", "beta first"]), ("Team", ["Four engineers"])])
    result = await library.ingest(data, "deck.pptx")
    assert (result.kind, result.pages, result.chunks) == ("pptx", 2, 2)
    assert [(m.text, m.attrs["page"]) for m in await library.chunks("deck.pptx")] == [
        ("Roadmap\nShip search in May - beta first", 1),
        ("Team\nFour engineers", 2),
    ]


async def test_txt_paragraphs_pack_into_chunks_within_the_budget_with_overlap(library):
    words = [f"word{i}" for i in range(400)]
    text = "\n\n".join(" ".join(words[i : i + 100]) for i in range(0, 400, 100))
    from engram.service.documents.pipeline import ChunkSettings

    result = await library.ingest(text.encode(), "notes.txt", chunking=ChunkSettings(budget=150, overlap=10))
    assert (result.kind, result.chunks) == ("text", 4)
    chunks = [m.text.split() for m in await library.chunks("notes.txt")]
    assert chunks[0] == words[:100]
    assert chunks[1] == words[90:200]  # the overlap: the last 10 words of the chunk before
    assert all(len(c) <= 150 for c in chunks)


async def test_markdown_declared_as_octet_stream_is_read_as_markdown(library):
    md = b"# Guide\n\nIntro text.\n\n## Install\n\n- download\n- run it\n\n| Key | Value |\n|---|---|\n| port | 8080 |\n"
    result = await library.ingest(md, "guide.md", declared="application/octet-stream")
    assert result.kind == "markdown"
    assert [m.text for m in await library.chunks("guide.md")] == [
        "Guide\nIntro text.",
        "Guide › Install\n- download - run it",
        "Key: port\nValue: 8080",
    ]


async def test_csv_rows_keep_their_header_and_question_answer_csv_is_one_chunk_per_pair(library):
    table = files.csv_file([["plan", "price", "seats"], ["Aurora", "$12", "5"], ["Borealis", "$30", "20"]])
    assert (await library.ingest(table, "prices.csv")).kind == "csv"
    assert [m.text for m in await library.chunks("prices.csv")] == [
        "plan: Aurora\nprice: $12\nseats: 5",
        "plan: Borealis\nprice: $30\nseats: 20",
    ]
    qa = files.csv_file(
        [["question", "answer"], ["How do I reset?", "Hold the button."], ["Warranty?", "Two years."]]
    )
    await library.ingest(qa, "faq.csv")
    faq = await library.chunks("faq.csv")
    assert [(m.text, m.attrs["chunkKind"]) for m in faq] == [
        ("Question: How do I reset?\nAnswer: Hold the button.", "qa"),
        ("Question: Warranty?\nAnswer: Two years.", "qa"),
    ]


async def test_html_and_xlsx(library):
    html = b"<!doctype html><title>x</title><h1>Doc</h1><p>One <b>para</b>.</p><script>evil()</script><ul><li>item</li></ul>"
    await library.ingest(html, "page.bin")
    assert [m.text for m in await library.chunks("page.bin")] == ["Doc\nOne para. - item"]
    sheet = files.xlsx_file([["Plan", "Price"], ["Pro", 20], ["Team", 49.5]])
    result = await library.ingest(sheet, "prices.xlsx")
    assert result.kind == "xlsx"
    assert [(m.text, m.attrs["section"]) for m in await library.chunks("prices.xlsx")] == [
        ("Plan: Pro\nPrice: 20", "Prices"),
        ("Plan: Team\nPrice: 49.5", "Prices"),
    ]
