"""The CLI's built-in embedder loads when something is first embedded (engram/embed/lazy.py): its identity
is the built-in model's own, its vectors are the built-in model's, and a context that embeds nothing never
loads it."""

from dataclasses import replace

import numpy as np

from engram.embed.builtin import load_builtin
from engram.embed.lazy import LazyEmbedder, lazy_embedder
from engram.lifecycle import open_context
from engram.service.imports import import_values


def test_identity_and_vectors_are_the_built_in_models():
    lazy, loaded = LazyEmbedder(), load_builtin()
    assert (lazy.name, lazy.digest, lazy.dims) == (loaded.name, loaded.digest, loaded.dims)
    assert not lazy.loaded
    texts = ["the build server restarts at noon", "lunch is at one"]
    np.testing.assert_array_equal(lazy.embed(texts, "document"), loaded.embed(texts, "document"))
    assert lazy.loaded and lazy.manifest() == loaded.manifest()


async def test_a_context_loads_the_model_only_when_a_line_needs_embedding(settings):
    settings = replace(settings, embedder="builtin")
    lines = [(n, {"text": f"note {n} about the release", "key": f"k{n}"}) for n in range(1, 6)]
    async with open_context(settings) as ctx:
        assert isinstance(ctx.embedder, LazyEmbedder) and not ctx.embedder.loaded
        space = (await ctx.services.spaces.create_hosted("lazy")).uri  # the built-in model's space
        assert not ctx.embedder.loaded
        first = await import_values(ctx.store, ctx.services.spaces, ctx.services.memories, space, lines)
        assert first.created == 5 and first.not_indexed == 0 and ctx.embedder.loaded
    async with open_context(settings) as ctx:  # a second CLI run: the same file again
        again = await import_values(ctx.store, ctx.services.spaces, ctx.services.memories, space, lines)
        assert (again.created, again.unchanged) == (0, 5)
        assert not ctx.embedder.loaded  # nothing needed the model


def test_the_multilingual_model_has_a_lazy_stand_in_with_its_identity():
    from engram.embed.multilingual import load_multilingual

    lazy, loaded = LazyEmbedder("multilingual"), load_multilingual()
    assert (lazy.name, lazy.digest, lazy.dims, lazy.backend) == (
        loaded.name,
        loaded.digest,
        loaded.dims,
        loaded.backend,
    )
    assert not lazy.loaded
    texts = ["el tren sale a las nueve", "会議は明日です"]
    np.testing.assert_array_equal(lazy.embed(texts, "query"), loaded.embed(texts, "query"))


async def test_the_default_list_of_packaged_models_loads_none_until_one_embeds(settings):
    settings = replace(settings, embedder="builtin,multilingual")
    async with open_context(settings) as ctx:
        stand_ins = ctx.embedder.all
        assert [e.name for e in stand_ins] == ["all-MiniLM-L6-v2", "multilingual-e5-small-q4"]
        await ctx.services.spaces.create_hosted("lazy-pair")
        assert not any(e.loaded for e in stand_ins)
    assert lazy_embedder("builtin,hashing") is None  # anything else loads as usual
