"""The console lists a space's documents and shows a document's chunks with their citations
(docs/documents.md)."""

from __future__ import annotations

from support import document_files as files


async def test_documents_page_lists_documents_and_a_document_shows_its_chunks(console):
    pdf = files.pdf([["Refund rules for alpha."], ["Shipping rules for alpha."]])
    await console.ctx.services.documents.ingest(console.alpha, pdf, name="rules.pdf", document_id="rules")
    browser = await console.operator()
    resp = await browser.get("/console/documents", {"space": console.alpha})
    assert resp.status == 200
    page = await resp.text()
    assert "rules.pdf" in page and "<code>rules</code>" in page and "pdf" in page
    resp = await browser.get("/console/document", {"space": console.alpha, "id": "rules"})
    assert resp.status == 200
    page = await resp.text()
    assert page.index("Refund rules for alpha.") < page.index("Shipping rules for alpha.")
    assert "#0 · page 1" in page and "#1 · page 2" in page
    resp = await browser.get("/console/document", {"space": console.alpha, "id": "missing"})
    assert resp.status == 404


async def test_a_key_reader_sees_only_its_spaces_documents(console):
    await console.ctx.services.documents.ingest(console.beta, b"# Beta plans\n\nsecret", name="beta.md")
    reader = await console.reader(console.alpha_read)
    resp = await reader.get("/console/documents", {"space": console.beta})
    assert resp.status in (403, 404)
    resp = await reader.get("/console/document", {"space": console.beta, "id": "beta.md"})
    assert resp.status in (403, 404)
    assert "secret" not in await resp.text()
