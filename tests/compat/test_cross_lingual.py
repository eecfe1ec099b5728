"""Cross-lingual levelling (engram/service/cross_lingual.py): under the multilingual model engram's ranking
lifts memories in another language than the query's by the policy's bonus, so an answer in Chinese beats
an unrelated Korean note that only shares the query's language; one-language spaces keep their scores."""

from __future__ import annotations

import dataclasses

import pytest
from support.compat import start

from engram.embed.multilingual import NAME as E5
from engram.service.cross_lingual import foreign, language_of, level
from engram.service.hybrid import Scope, TextSearch
from engram.service.ranking import confidence, policy_for
from engram.service.search import SearchQuery
from engram.store import Memory

ANSWER = "上海办公室的门禁卡丢了,要找行政的陈静补办。"  # a lost Shanghai door card: Chen Jing replaces it
NEAR = "고객 데이터는 개인정보보호법 때문에 서울 리전 밖으로 옮기면 안 된다."  # customer data stays in Seoul
QUESTION = "상하이 사무실 출입 카드를 잃어버리면 누구한테 가야 해?"  # who do I go to if I lose the card?


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("What does 박지훈 do?", "english"),  # English grammar around a Korean name
        ("Tom Becker 是谁?", "zh"),  # Chinese grammar around a Latin name
        ("billing-mad-02 の OS は?", "ja"),  # identifiers say nothing; "os" is a Spanish stop word
        ("刘芳 씨는 어떤 음식을 못 먹어?", "ko"),
        ("東京オフィスのゲスト用 Wi-Fi の SSID は kumo-guest。", "ja"),
        ("上海团队的周会在每周一上午十点。", "zh"),
        ("¿Quién es Javier Ortega?", "spanish"),
        ("Feature flags use <app>-<feature>, e.g. reports-async-export, in Unleash.", "english"),
        ("redis-cache-01 TTL", "english"),
    ],
)
def test_a_texts_language_is_its_grammars(text, language):
    assert language_of(text) == language


def _memory(row: int, text: str) -> Memory:
    return Memory(row, f"at://did:key:z/x/{row}", f"cid{row}", "did:key:z", str(row), text, (), None, {},
                  "2026-03-01T00:00:00Z", 0, "2026-03-01T00:00:00Z", None)  # fmt: skip


def test_level_raises_only_other_languages_and_keeps_the_rest():
    memories = {1: _memory(1, "会議は木曜日です。"), 2: _memory(2, "The meeting is on Thursday.")}
    fused = [(2, 0.80), (1, 0.78), (3, 0.50)]  # row 3's memory was not read: it is left as it is
    english = foreign(memories, "When is the meeting?")
    assert english == {1} and foreign(memories, "会議はいつ?") == {2} and foreign(memories, " ") == set()
    assert level(fused, english, 0.03) == [(1, pytest.approx(0.81)), (2, 0.8), (3, 0.5)]
    assert level(fused, english, 0.0) == fused
    assert level(fused, {2}, 0.03) == [(2, pytest.approx(0.83)), (1, 0.78), (3, 0.5)]
    assert level([(1, 0.99)], english, 0.03) == [(1, 1.0)]  # clipped to 1


async def test_the_multilingual_ranking_finds_the_answer_in_another_language(aiohttp_client, settings):
    engram = await start(aiohttp_client, dataclasses.replace(settings, embedder="hashing,multilingual"))
    spaces = engram.ctx.services.spaces
    space = await spaces.create_hosted("ml", model=spaces.hosted_model(E5))
    await engram.write(space.uri, [NEAR, ANSWER])
    space = await spaces.require(space.uri)
    # the plain cosine prefers the Korean note: e5 scores a query's own language a few hundredths higher
    vector = (await engram.ctx.services.search.search(space, SearchQuery(q=QUESTION, limit=2))).hits
    assert [m.text for m, _ in vector] == [NEAR, ANSWER]
    ranking = engram.ctx.services.ranking
    for mode in ("vector", "hybrid"):
        hits = (await ranking.run([Scope(space)], TextSearch(QUESTION), mode)).hits
        assert [h.memory.text for h in hits] == [ANSWER, NEAR], mode
    # without the step (bonus 0) the ranking's order is the cosine's, and the Korean note keeps its score
    found = await engram.ctx.services.hybrid.candidates([Scope(space)], TextSearch(QUESTION, weight=0.5))
    policy = policy_for(E5)
    assert policy.cross_lingual > 0
    plain = await ranking.rank(
        found.similarity, found.keyword, found.owner, 10, dataclasses.replace(policy, cross_lingual=0.0)
    )
    lifted = await ranking.rank(found.similarity, found.keyword, found.owner, 10, policy, text=QUESTION)
    assert [h.memory.text for h in plain.hits] == [NEAR, ANSWER]
    assert [h.memory.text for h in lifted.hits] == [ANSWER, NEAR]
    assert lifted.hits[1].score == plain.hits[0].score  # the Korean note's score is untouched
    # the confidence judges the answer's cosine with the lift, as if it were in the query's language
    assert lifted.foreign == {h.memory.row_id for h in lifted.hits if h.memory.text == ANSWER}
    ranked = await ranking.run([Scope(space)], TextSearch(QUESTION), "hybrid")
    cosine = found.similarity[ranked.hits[0].memory.row_id]
    expected = confidence(cosine + policy.cross_lingual, 0.0, policy)  # coverage can only add (a max)
    assert ranked.hits[0].why is not None
    assert ranked.hits[0].why.confidence >= expected > confidence(cosine, 0.0, policy)
