"""Citations through the doors, table-row questions answered by the right row, and re-ingesting or
deleting a document in one transaction (docs/documents.md#citations)."""

from __future__ import annotations

import asyncio
import itertools
import random
import re

from support import document_files as files

from engram.store import ingested

SYLLABLES = ["ka", "lo", "mi", "ru", "ze", "ta", "vo", "ni", "sha", "pe"]


def price_list(n: int, seed: int = 7) -> list[tuple[str, str, str]]:
    """(plan name, monthly price, seats): made-up names, so no word but the name tells two rows apart."""
    rng = random.Random(seed)
    names = ["".join(p).capitalize() for p in itertools.product(SYLLABLES, repeat=3)]
    rng.shuffle(names)
    return [(name, f"${rng.randint(5, 400)}", str(rng.randint(1, 500))) for name in names[:n]]


QUESTIONS = ["What is the price of plan {}?", "How much does the {} plan cost per month?", "{} plan price"]


async def test_table_row_questions_hit_the_right_row_first(library):
    plans = price_list(40)
    await library.ingest(
        files.csv_file([["plan", "monthly price", "seats"], *map(list, plans)]), "prices.csv"
    )
    labelled = [(q.format(name), name, price) for name, price, _ in plans for q in QUESTIONS]
    seats = {name: n for name, _, n in plans}
    hits = 0
    for question, name, price in labelled:
        response = await library.client.post(
            "/v1/vector/match",
            json={"prompt": question, "top_k": 3, "embedding_rate": 0.5},
            headers=library.auth(),
        )
        assert response.status == 200, await response.text()
        top = (await response.json())["list"][0]
        assert (top["data_id"], top["document_name"]) == ("prices.csv", "prices.csv")
        hits += top["content"] == f"plan: {name}\nmonthly price: {price}\nseats: {seats[name]}"
    assert hits / len(labelled) >= 0.95, f"hit@1 {hits}/{len(labelled)}"


async def test_mcp_recall_results_carry_the_citation(library):
    from pydantic import TypeAdapter

    from engram.mcp.access import McpAccess
    from engram.mcp.operations import MemoryOperations
    from engram.mcp.schemas import Recalled

    pdf = files.pdf([["Intro page."], ["The warranty lasts two years from purchase."]])
    await library.ingest(pdf, "manual.pdf", source_url="https://example.com/manual.pdf")
    access = await McpAccess.operator(library.ctx)
    recalled = await MemoryOperations(library.ctx).recall(access, "how long is the warranty", limit=2)
    TypeAdapter(Recalled).validate_python(recalled)  # the tool's declared outputSchema admits it
    top = recalled["results"][0]
    assert top["text"] == "The warranty lasts two years from purchase."
    assert top["citation"] == {
        "documentId": "manual.pdf",
        "documentName": "manual.pdf",
        "sourceUrl": "https://example.com/manual.pdf",
        "page": 2,
        "chunkIndex": 1,
    }


async def test_reingest_replaces_all_chunks_at_once_and_delete_removes_them(library):
    old = "\n\n".join(f"Version one paragraph {i} " + "filler " * 150 for i in range(30)).encode()
    new = "\n\n".join(f"Version two paragraph {i} " + "filler " * 150 for i in range(25)).encode()
    first = await library.ingest(old, "doc.txt")
    assert first.chunks == 30

    def versions(conn):
        rows = ingested.chunk_rows(conn, library.space, "doc.txt")
        texts = [conn.execute("SELECT text FROM memories WHERE row_id = ?", (r,)).fetchone()[0] for r in rows]
        return {version for t in texts for version in re.findall(r"Version (?:one|two)", t)}, len(texts)

    task = asyncio.ensure_future(library.ingest(new, "doc.txt"))
    while not task.done():  # every snapshot a reader takes holds one version, whole
        kinds, count = await library.ctx.store.read(versions)
        assert (kinds, count) in (({"Version one"}, 30), ({"Version two"}, 25))
        await asyncio.sleep(0)
    assert (await task).status == "replaced"
    assert await library.ctx.store.read(versions) == ({"Version two"}, 25)
    assert (await library.ingest(new, "doc.txt")).status == "unchanged"
    assert await library.ctx.services.documents.delete(library.space, "doc.txt") == 25
    assert await library.ctx.store.read(versions) == (set(), 0)
    assert await library.ctx.services.documents.list(library.space) == []


async def test_an_error_writes_nothing_and_other_memories_sharing_the_id_are_left_alone(library):
    from engram.errors import EngramError
    from engram.store import MemoryWrite

    await library.ctx.services.memories.write(
        library.space,
        [MemoryWrite(author="did:web:engram.test", text="a note", attrs={"documentId": "notes.md"})],
    )
    try:
        await library.ingest(b"\x00\x01\x02binary", "notes.md")
        raise AssertionError("refused expected")
    except EngramError as exc:
        assert exc.kind == "invalid"
    await library.ingest(b"# Notes\n\nfresh", "notes.md")
    await library.ctx.services.documents.delete(library.space, "notes.md")
    texts = await library.ctx.store.read(
        lambda conn: [r[0] for r in conn.execute("SELECT text FROM memories")]
    )
    assert texts == ["a note"]


async def test_deleting_the_space_deletes_its_documents(library):
    await library.ingest(b"# A\n\ntext", "a.md")
    await library.ctx.services.spaces.delete(library.space)
    rows = await library.ctx.store.read(
        lambda conn: conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
    )
    assert rows == 0


async def test_gptbots_data_ids_scope_a_match_to_ingested_documents(library):
    await library.ingest(files.csv_file([["plan", "price"], ["Aurora", "$12"]]), "a.csv")
    await library.ingest(files.csv_file([["plan", "price"], ["Aurora", "$99"]]), "b.csv")
    response = await library.client.post(
        "/v1/vector/match",
        json={"prompt": "Aurora price", "top_k": 5, "embedding_rate": 0.5, "data_ids": ["b.csv"]},
        headers=library.auth(),
    )
    assert response.status == 200
    found = (await response.json())["list"]
    assert [(i["data_id"], i["document_name"], i["content"]) for i in found] == [
        ("b.csv", "b.csv", "plan: Aurora\nprice: $99")
    ]
