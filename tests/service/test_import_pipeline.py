"""Text-only imports embed the next batch while the previous one is written (engram/service/imports.py):
many batches, every line embedded and written once, bad lines still reported by number."""

from engram.lifecycle import open_context
from engram.service.imports import import_values


async def test_a_pipelined_text_import_embeds_and_writes_every_batch(settings):
    async with open_context(settings) as ctx:  # the hashing embedder: engram hosts the space's model
        space = (await ctx.services.spaces.create_hosted("pipeline")).uri
        lines = [(n, {"text": f"line {n} about the build server"}) for n in range(1, 24)]
        lines[6] = (7, {"text": ""})  # refused by the store: reported, the rest goes on
        # The same line as line 3, four batches later: one key is used once per import, so it is skipped
        # and reported, never a second memory (nor a rewrite of the first on every run).
        lines[15] = (16, {"text": "line 3 about the build server"})
        seen = []
        report = await import_values(
            ctx.store,
            ctx.services.spaces,
            ctx.services.memories,
            space,
            lines,
            batch_size=4,
            progress=seen.append,
        )
        assert (report.created, report.unchanged, report.not_indexed) == (21, 0, 0)
        assert [number for number, _ in report.skipped] == [7, 16]
        assert report.skipped[1][1] == "the same key (or the same line) as line 3"
        assert sum(seen) == 21 and all(0 < n <= 4 for n in seen)  # one progress call per written batch
        memories, _cursor = await ctx.services.memories.list(space, limit=100)
        assert len(memories) == 21
        assert all(m.model_key is not None for m in memories)  # every line was embedded and indexed
        # Re-running the same import changes nothing (stable keys, createdAt kept).
        again = await import_values(
            ctx.store, ctx.services.spaces, ctx.services.memories, space, lines, batch_size=4
        )
        assert (again.created, again.unchanged, len(again.skipped)) == (0, 21, 2)


class CountingEmbedder:
    """The context's real embedder, counting the texts it is asked to embed."""

    def __init__(self, inner):
        self.inner, self.texts = inner, 0
        self.name, self.digest, self.dims = inner.name, inner.digest, inner.dims

    def embed(self, texts, kind):
        self.texts += len(texts)
        return self.inner.embed(texts, kind)


async def test_a_re_import_finds_unchanged_lines_before_embedding_anything(settings):
    async with open_context(settings) as ctx:
        space = (await ctx.services.spaces.create_hosted("reimport")).uri
        counting = CountingEmbedder(ctx.services.memories.embedder)
        ctx.services.memories.embedder = counting
        lines = [(n, {"text": f"note {n}", "tags": ["t"], "key": f"k{n}"}) for n in range(1, 11)]
        first = await import_values(
            ctx.store, ctx.services.spaces, ctx.services.memories, space, lines, batch_size=4
        )
        assert first.created == 10 and counting.texts == 10
        before = {m.uri: (m.cid, m.row_id) for m in (await ctx.services.memories.list(space, limit=50))[0]}

        again = await import_values(
            ctx.store, ctx.services.spaces, ctx.services.memories, space, lines, batch_size=4
        )
        assert (again.created, again.updated, again.unchanged) == (0, 0, 10)
        assert counting.texts == 10  # nothing embedded the second time
        after = {m.uri: (m.cid, m.row_id) for m in (await ctx.services.memories.list(space, limit=50))[0]}
        assert after == before  # same records, same rows: nothing rewritten

        # A changed line (new text, or new tags) is embedded and updated; the rest stay unchanged.
        lines[2] = (3, {"text": "note 3, corrected", "tags": ["t"], "key": "k3"})
        lines[5] = (6, {"text": "note 6", "tags": ["t", "u"], "key": "k6"})
        third = await import_values(
            ctx.store, ctx.services.spaces, ctx.services.memories, space, lines, batch_size=4
        )
        assert (third.updated, third.unchanged) == (2, 8)
        assert counting.texts == 12
        memories = {m.text: m for m in (await ctx.services.memories.list(space, limit=50))[0]}
        assert memories["note 3, corrected"].model_key is not None
        assert memories["note 6"].tags == ("t", "u") or list(memories["note 6"].tags) == ["t", "u"]
