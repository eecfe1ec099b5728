"""A conversation turn ranked in the context of the turns around it (engram/service/fusion.py in_context)
through the real app: the reply that answers a question shares none of its words, yet hybrid recall finds
it beside the question; notes written apart and the single-side modes are untouched."""

from __future__ import annotations

from dataclasses import replace

import pytest
from support.compat import start

from engram.service.fusion import anchored, in_context, speaker_matches
from engram.service.hybrid import Scope, TextSearch
from engram.service.ranking import EngramRanking, for_pool, fuse_candidates, policy_for

TURNS = [
    "Sam: Hey Evan, long time no see! How have you been?",
    "Evan: Great! I have been painting a lot lately.",
    "Sam: Wow, that's impressive! How did you get into watercolor painting?",
    "Evan: My friend got me into it and gave me some advice, and I was hooked right away!",
    "Sam: Nice. I started going to the gym three times a week.",
    "Evan: Good for you, the gym is hard to keep up.",
]
NOTES = [
    "Evan's watercolor class meets on Tuesdays at the community centre.",
    "Evan bought a new set of brushes for painting.",
    "The gym on Main Street opens at six.",
]
QUESTION = "How did Evan get into watercolor painting?"


@pytest.fixture
async def chat(aiohttp_client, settings):
    engram = await start(aiohttp_client, settings)
    space = await engram.space("chat")
    rows = {}
    for i, text in enumerate(TURNS):  # one session: turns seconds apart
        (record,) = await engram.write(space.uri, [text], created_at=f"2026-03-01T10:00:{i * 7:02d}Z")
        rows[text] = record.row_id
    for day, text in enumerate(NOTES, start=2):  # notes, days apart
        (record,) = await engram.write(space.uri, [text], created_at=f"2026-03-{day:02d}T09:00:00Z")
        rows[text] = record.row_id
    return engram, await engram.ctx.services.spaces.require(space.uri), rows


async def said(engram, space, turns: list[tuple[str, str]]):
    """Write `turns` (speaker, text) one second apart with attrs.speaker, as an importer carries it; the
    space as it is after the writes."""
    for i, (speaker, text) in enumerate(turns):
        await engram.write(
            space.uri,
            [f"{speaker}: {text}"],
            created_at=f"2026-03-01T10:00:0{i}Z",
            attrs={"speaker": speaker},
        )
    return await engram.ctx.services.spaces.require(space.uri)


async def test_the_reply_to_a_matching_question_ranks_beside_it(chat):
    engram, space, rows = chat
    ranking = engram.ctx.services.ranking
    hybrid = [h.memory.text for h in (await ranking.run([Scope(space)], TextSearch(QUESTION), "hybrid")).hits]
    assert hybrid[0] == TURNS[2]
    assert TURNS[3] in hybrid[:3]  # the answer, which holds no word of the question, right after it
    # without the context step it ranks lower: the notes sharing "watercolor"/"painting" come first
    found = await engram.ctx.services.hybrid.candidates([Scope(space)], TextSearch(QUESTION, weight=0.5))
    assert found.adjacent[rows[TURNS[2]]] == (rows[TURNS[1]], rows[TURNS[3]])
    policy = replace(policy_for(None), reply=0.0, lead=0.0)
    plain = await ranking.rank(found.similarity, found.keyword, found.owner, 10, policy, found.adjacent)
    assert [h.memory.text for h in plain.hits].index(TURNS[3]) > hybrid.index(TURNS[3])


async def test_single_side_modes_and_notes_keep_their_own_scores(chat):
    engram, space, rows = chat
    ranking = engram.ctx.services.ranking
    keyword = (await ranking.run([Scope(space)], TextSearch(QUESTION), "keyword")).hits
    assert keyword and all(
        h.score == pytest.approx(h.keyword) for h in keyword
    )  # the share, nothing borrowed
    vector = (await ranking.run([Scope(space)], TextSearch(QUESTION), "vector")).hits
    assert all(h.score == pytest.approx(h.similarity) for h in vector)  # the cosine, nothing borrowed
    notes = (await ranking.run([Scope(space)], TextSearch("gym opening hours on Main Street"), "hybrid")).hits
    assert notes[0].memory.text == NOTES[2]
    # a note has no neighbours: nothing borrows from it, it borrows from nothing
    found = await engram.ctx.services.hybrid.candidates(
        [Scope(space)], TextSearch("Main Street gym", weight=0.5)
    )
    assert rows[NOTES[2]] in found.keyword and rows[NOTES[2]] not in found.adjacent


def test_in_context_raises_a_turn_to_a_share_of_its_neighbours_and_never_past_them():
    fused = [(1, 0.9), (5, 0.5), (3, 0.1)]
    adjacent = {1: (None, 2), 3: (2, 4)}
    assert in_context(fused, adjacent, 0.7, 0.5) == [
        (1, 0.9),
        (2, 0.63),
        (5, 0.5),
        (3, 0.1),
        (4, pytest.approx(0.07)),
    ]
    assert in_context(fused, adjacent, 0.0, 0.0) == fused
    # reach 2: the raised turn 2 lends on, to 3 after it (0.7 x 0.63) and back to 1 (which keeps its
    # own); 4 still gets only 0.7 x 3's own score (a third pass would carry 3's raise on)
    two = dict(in_context(fused, {**adjacent, 2: (1, 3)}, 0.7, 0.5, reach=2))
    assert two[3] == pytest.approx(0.7 * 0.63) and two[4] == pytest.approx(0.07)
    assert two[1] == 0.9 and max(two.values()) == 0.9
    # a turn before a strong one gets the lead share; a raised score never exceeds its source's
    assert in_context([(2, 0.8)], {2: (1, None)}, 0.7, 0.5) == [(2, 0.8), (1, 0.4)]
    # the trace (explanations, explain.py) names each raised turn's source and share, the last raise winning
    trace: dict[int, tuple[int, float]] = {}
    in_context(fused, {**adjacent, 2: (1, 3)}, 0.7, 0.5, reach=2, trace=trace)
    assert trace == {2: (1, 0.7), 3: (2, 0.7), 4: (3, 0.7)}


async def test_the_restatement_heuristic_never_fires_on_conversation_turns(aiohttp_client, settings):
    """Two turns of one session that a note-taker would read as old and new statement: the later is not
    moved before the earlier, unless it names it in attrs.supersedes. The same two as notes, months apart,
    are (tests/compat/test_engram_ranking.py)."""
    engram = await start(aiohttp_client, settings)
    old = "Staging runs Postgres 15.4 on pg-staging-01."
    new = "Staging now runs Postgres 16.2 on pg-staging-01 after the upgrade."
    query = TextSearch("Which Postgres does staging run on pg-staging-01")

    async def ranked(name, **named):
        space = await engram.space(name)
        (first,) = await engram.write(space.uri, [old], created_at="2026-01-01T00:00:00Z")
        attrs = {"supersedes": first.uri} if named else {}
        await engram.write(space.uri, [new], created_at="2026-01-01T00:00:30Z", attrs=attrs)
        space = await engram.ctx.services.spaces.require(space.uri)
        return (await engram.ctx.services.ranking.run([Scope(space)], query, "vector")).hits

    hits = await ranked("turns")
    assert [h.memory.text for h in hits] == [old, new]  # by cosine, untouched
    assert all(h.superseded_by is None for h in hits)
    hits = await ranked("named", named=True)
    assert [h.memory.text for h in hits] == [new, old]
    assert hits[1].superseded_by == hits[0].memory.uri


async def test_a_question_about_a_speaker_prefers_what_that_speaker_said(aiohttp_client, settings):
    """attrs.speaker, as an importer carries it: "What did Caroline research?" ranks Caroline's turn
    before Melanie's question that names Caroline and the research."""
    engram = await start(aiohttp_client, settings)
    space = await engram.space("speakers")
    turns = [
        ("Melanie", "Hey Caroline! How was your week? Busy with the research?"),
        ("Caroline", "I've been researching adoption agencies all week, it's been a lot of reading."),
        ("Melanie", "Wow, that's a big step! I'm proud of you."),
    ]
    space = await said(engram, space, turns)
    query = TextSearch("What did Caroline research?")
    found = await engram.ctx.services.hybrid.candidates([Scope(space)], replace(query, weight=0.5))
    ranking = engram.ctx.services.ranking
    hits = (await ranking.run([Scope(space)], query, "hybrid")).hits
    assert hits[0].memory.attrs["speaker"] == "Caroline"
    assert {h.memory.row_id for h in hits if h.memory.attrs["speaker"] == "Melanie"} == found.others
    policy = replace(policy_for(None), other_speaker=1.0)
    plain = await ranking.rank(
        found.similarity, found.keyword, found.owner, 10, policy, found.adjacent, found.others
    )
    assert plain.hits[0].memory.attrs["speaker"] == "Melanie"  # without the step, the question ranks first


async def test_a_question_naming_the_wrong_speaker_is_not_steered_by_the_name(aiohttp_client, settings):
    """LoCoMo's adversarial questions name the wrong person on purpose ("What did Melanie research?" when
    Caroline did): Melanie's own turns hold none of the question's other words, so the speaker step is not
    taken (fusion.speaker_matches) and Caroline's turn keeps its full score. Asked about Caroline, it is."""
    engram = await start(aiohttp_client, settings)
    space = await engram.space("wrong-name")
    turns = [
        ("Melanie", "Hey Caroline! How was your week?"),
        ("Caroline", "I've been researching adoption agencies all week, it's been a lot of reading."),
        ("Melanie", "Wow, that's a big step! I'm proud of you."),
        ("Melanie", "My kids say hi, by the way."),
        ("Caroline", "Thanks, say hi back from me!"),
        ("Melanie", "We went to the lake on the weekend."),
        ("Melanie", "The water was cold but the kids loved it."),
    ]
    space = await said(engram, space, turns)
    ranking = engram.ctx.services.ranking
    wrong = await ranking.run([Scope(space)], TextSearch("What did Melanie research?"), "hybrid")
    assert wrong.hits[0].memory.text.startswith("Caroline: I've been researching")
    assert wrong.others == frozenset()  # nobody's turns weighed down
    # the same candidates with the step always taken: Caroline's turn loses 0.3 of its score
    query = TextSearch("What did Melanie research?", weight=0.5)
    found = await engram.ctx.services.hybrid.candidates([Scope(space)], query)
    research = wrong.hits[0].memory.row_id
    assert research in found.others
    always = replace(policy_for(None), speaker_match=0.0)
    steered = await ranking.rank(
        found.similarity, found.keyword, found.owner, 10, always, found.adjacent, found.others
    )
    score = {h.memory.row_id: h.score for h in steered.hits}
    assert score[research] < wrong.hits[0].score and research in steered.others
    right = await ranking.run([Scope(space)], TextSearch("What did Caroline research?"), "hybrid")
    assert right.hits[0].memory.row_id == research
    assert right.others and research not in right.others  # Melanie's turns are weighed down


def test_the_speaker_step_needs_the_named_speakers_turns_to_match():
    keyword = {1: 0.4, 2: 0.1, 3: 0.05}  # 1 said by another speaker; 2 and 3 by the one named
    assert speaker_matches(keyword, {1}, 0.25)  # 0.1 >= 0.25 x 0.4
    assert not speaker_matches(keyword, {1}, 0.3)
    assert speaker_matches({2: 0.1}, {1}, 0.3)  # the others matched no word: nothing to outweigh
    assert not speaker_matches({1: 0.4}, {1}, 0.3)  # the named speaker matched nothing


async def test_a_when_question_is_embedded_as_the_event_it_asks_about(chat):
    """The vector side of "When did ...?" embeds the event without the lead (dates.the_event); the keyword
    side keeps the lead, which adds the `@date` term."""
    engram, space, _ = chat
    hybrid = engram.ctx.services.hybrid
    asked = await hybrid.candidates([Scope(space)], TextSearch("When did Evan get into watercolor painting?"))
    event = await hybrid.candidates([Scope(space)], TextSearch("Evan get into watercolor painting?"))
    assert asked.similarity and asked.similarity == event.similarity
    whole = await hybrid.candidates([Scope(space)], TextSearch("How did Evan get into watercolor painting?"))
    assert whole.similarity != event.similarity  # other questions are embedded whole
    # a model whose policy turns it off (RankingPolicy.event_query: the multilingual model's) embeds the
    # question as asked, and EngramRanking asks for what the space's model's policy says
    as_asked = TextSearch("When did Evan get into watercolor painting?", event=False)
    assert (await hybrid.candidates([Scope(space)], as_asked)).similarity != event.similarity
    assert policy_for(None).event_query and not policy_for("multilingual-e5-small-q4").event_query
    plain = EngramRanking(engram.ctx.store, hybrid, replace(policy_for(None), event_query=False))
    told = EngramRanking(engram.ctx.store, hybrid, policy_for(None))
    question = TextSearch("When did Evan get into watercolor painting?")
    by_plain = {
        h.memory.row_id: h.similarity for h in (await plain.run([Scope(space)], question, "vector")).hits
    }
    by_told = {
        h.memory.row_id: h.similarity for h in (await told.run([Scope(space)], question, "vector")).hits
    }
    expected = (await hybrid.candidates([Scope(space)], as_asked)).similarity
    assert by_plain and all(by_plain[row] == pytest.approx(expected[row]) for row in by_plain)
    assert by_told != by_plain


def test_the_anchor_raises_the_turns_that_say_when_near_the_leading_ones():
    """fusion.anchored: a dated turn up to `reach` turns before or after one of the `top` leading memories
    gets `share` x its score, unless its own is higher; an undated turn, or one farther away, keeps its own."""
    fused = [(10, 0.8), (20, 0.5), (3, 0.05)]
    adjacent = {10: (9, 11), 9: (8, 10), 8: (7, 9), 11: (10, 12), 20: (19, None)}
    dated = {7, 8, 12, 19, 3}
    trace: dict[int, tuple[int, float]] = {}
    score = dict(anchored(fused, adjacent, dated, 0.8, 2, 10, trace))
    assert score[8] == pytest.approx(0.64)  # two turns before 10 (9, between them, is undated: untouched)
    assert 9 not in score and 7 not in score  # undated; three turns away
    assert score[12] == pytest.approx(0.64) and score[19] == pytest.approx(0.4)
    assert score[3] == 0.05  # dated but near no leading memory
    assert trace == {8: (10, 0.8), 12: (10, 0.8), 19: (20, 0.8)}
    assert 19 not in dict(anchored(fused, adjacent, dated, 0.8, 2, 1))  # only the first one anchors
    assert dict(anchored([(10, 0.8), (8, 0.7)], adjacent, dated, 0.8, 2, 10))[8] == 0.7  # its own is more
    assert anchored(fused, adjacent, set(), 0.8, 2, 10) == fused
    assert anchored(fused, adjacent, dated, 0.0, 2, 10) == fused


CHESS = [
    ("John", "Morning James! Guess what, something great happened this Tuesday!"),
    ("James", "Tell me! What happened?"),
    ("John", "I took first place at the city chess open. A tough final, but I won it."),
    ("James", "Congratulations! How did it feel?"),
    ("John", "Amazing. The evening practice paid off."),
]


async def test_a_when_question_ranks_the_turn_that_says_when_beside_the_event(aiohttp_client, settings):
    """A question asking when ("When did John win the chess open?"): the turn naming the event holds no
    date; the one that says when ("this Tuesday") came two turns before it. The date anchor (fusion.anchored) gives that turn
    0.8x the event turn's score, which the context step alone (0.7 x 0.7) does not; the explanation names
    the turn it came from. A question not asking when gets neither step."""
    engram = await start(aiohttp_client, settings)
    space = await said(engram, await engram.space("chess"), CHESS)
    ranking = engram.ctx.services.ranking
    query = TextSearch("When did John win the chess open?")
    found = await engram.ctx.services.hybrid.candidates([Scope(space)], replace(query, weight=0.5))
    hits = (await ranking.run([Scope(space)], query, "hybrid")).hits
    texts = [h.memory.text for h in hits]
    event, told = texts.index(f"John: {CHESS[2][1]}"), texts.index(f"John: {CHESS[0][1]}")
    assert event == 0 and told == 1
    assert found.dated == {hits[told].memory.row_id}  # the one turn that says when
    assert hits[told].score == pytest.approx(0.8 * hits[event].score)
    why = hits[told].why
    assert why is not None and why.context is not None
    assert (why.context.uri, why.context.position, why.context.share) == (
        hits[event].memory.uri,
        "after",
        0.8,
    )
    # the same candidates without the anchor: the context's share of a share only (0.7 x 0.7)
    plain = replace(policy_for(None), anchor=0.0)
    unanchored = await ranking.rank(
        found.similarity, found.keyword, found.owner, 10, plain, found.adjacent, found.others,
        text=query.text, dated=found.dated,
    )  # fmt: skip
    score = {h.memory.row_id: h.score for h in unanchored.hits}
    assert score[hits[told].memory.row_id] < hits[told].score
    # not asking when: no turn is marked, and neither step is taken (absurd shares change nothing)
    what = TextSearch("What did John win at the chess open?")
    other = await engram.ctx.services.hybrid.candidates([Scope(space)], replace(what, weight=0.5))
    assert other.dated == set()
    asked = [(h.memory.row_id, h.score) for h in (await ranking.run([Scope(space)], what, "hybrid")).hits]
    absurd = replace(policy_for(None), when_lead=0.01, anchor=0.99)
    again = await ranking.rank(
        other.similarity, other.keyword, other.owner, 10, absurd, other.adjacent, other.others,
        text=what.text, dated={h for h, _ in asked},
    )  # fmt: skip
    assert [(h.memory.row_id, h.score) for h in again.hits] == asked


def test_a_when_question_takes_the_when_lead_share():
    policy = policy_for(None)
    similarity, keyword, adjacent = {2: 0.5}, {2: 0.5}, {2: (1, None)}
    plain = dict(fuse_candidates(similarity, keyword, policy, adjacent))
    when = dict(fuse_candidates(similarity, keyword, policy, adjacent, when=True))
    assert plain[1] == pytest.approx(policy.lead * 0.5) and when[1] == pytest.approx(policy.when_lead * 0.5)
    assert policy.when_lead > policy.lead


async def test_the_when_steps_stay_out_of_the_single_side_modes(aiohttp_client, settings):
    engram = await start(aiohttp_client, settings)
    space = await said(engram, await engram.space("chess-modes"), CHESS)
    query = TextSearch("When did John win the chess open?")
    for mode, own in (("keyword", "keyword"), ("vector", "similarity")):
        hits = (await engram.ctx.services.ranking.run([Scope(space)], query, mode)).hits
        assert hits and all(h.score == pytest.approx(getattr(h, own) or 0.0) for h in hits)


async def test_a_conversation_is_ranked_at_the_policys_chat_weight(chat):
    """`RankingPolicy.chat_weight` (the multilingual model's policy: LoCoMo, docs/benchmarks.md#locomo):
    when most leading candidates are conversation turns the whole pool is fused at it; notes keep the
    policy's weight, and so does a caller's own mix (GPTBots' embedding_rate) and every single-side mode."""
    engram, space, _ = chat
    found = await engram.ctx.services.hybrid.candidates([Scope(space)], TextSearch(QUESTION, weight=0.5))
    chatty = replace(policy_for(None), weight=0.9, chat_weight=0.1)
    assert for_pool(chatty, found.similarity, found.keyword, found.adjacent) == replace(
        chatty, weight=0.1, chat_weight=None
    )
    # the same words as notes, days apart: no neighbours, the policy as it is
    notes = await engram.space("notes")
    for day, text in enumerate(TURNS + NOTES, start=1):
        await engram.write(notes.uri, [text], created_at=f"2026-04-{day:02d}T09:00:00Z")
    notes = await engram.ctx.services.spaces.require(notes.uri)
    apart = await engram.ctx.services.hybrid.candidates([Scope(notes)], TextSearch(QUESTION, weight=0.5))
    assert not apart.adjacent and for_pool(chatty, apart.similarity, apart.keyword, apart.adjacent) is chatty
    # through EngramRanking, fusion alone (no context or speaker steps): each hit's score is the mix
    still = {"reply": 0.0, "lead": 0.0, "when_lead": 0.0, "anchor": 0.0, "other_speaker": 1.0}
    ranking = EngramRanking(engram.ctx.store, engram.ctx.services.hybrid, replace(chatty, **still))

    async def mixed(where, share: float, **weight) -> bool:
        hits = (await ranking.run([Scope(where)], TextSearch(QUESTION), "hybrid", **weight)).hits
        return bool(hits) and all(
            h.score == pytest.approx(share * max(h.similarity or 0.0, 0.0) + (1 - share) * (h.keyword or 0.0))
            for h in hits
        )

    assert await mixed(space, 0.1)
    assert await mixed(notes, 0.9)
    assert await mixed(space, 0.5, weight=0.5)  # the caller's mix wins
    vector = (await ranking.run([Scope(space)], TextSearch(QUESTION), "vector")).hits
    assert all(h.score == pytest.approx(h.similarity) for h in vector)
