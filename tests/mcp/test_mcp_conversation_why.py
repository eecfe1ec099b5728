"""MCP recall's explanations of the conversation steps of hybrid ranking, on the real app over streamable
HTTP (docs/mcp.md#recall, engram/service/explain.py): a reply that shares no word of the query says which
neighbouring turn its score came from and the share; a turn said by someone the query does not name says
its score was lowered, by whom and by what factor; single-side modes and notes carry neither step."""

from __future__ import annotations

from support.mcp import result_of

TURNS = [
    ("Sam", "Hey Evan, long time no see! How have you been?"),
    ("Evan", "Great! I have been painting a lot lately."),
    ("Sam", "Wow, that's impressive! How did you get into watercolor painting?"),
    ("Evan", "My friend got me into it and gave me some advice, and I was hooked right away!"),
    ("Sam", "Nice. I started going to the gym three times a week."),
]
NOTE = "The gym on Main Street opens at six."
QUESTION = "How did Evan get into watercolor painting?"


async def test_recall_says_which_neighbour_and_which_speaker_moved_a_score(served):
    space = await served.space("chat")
    token, _ = await served.key(space)
    uris = {}
    for i, (speaker, text) in enumerate(TURNS):  # one session: turns seconds apart
        (record,) = await served.write(
            space, [f"{speaker}: {text}"], created_at=f"2026-03-01T10:00:{i * 7:02d}Z",
            attrs={"speaker": speaker},
        )  # fmt: skip
        uris[text] = record.uri
    (note,) = await served.write(space, [NOTE], created_at="2026-03-09T09:00:00Z")
    question, reply = uris[TURNS[2][1]], uris[TURNS[3][1]]

    async with served.client(token) as client:
        found = result_of(await client.call_tool("recall", {"query": QUESTION, "limit": 10}))
        hits = {h["uri"]: h for h in found["results"]}
        # The reply shares no word of the query: its score is the share of the question's score before it.
        context = hits[reply]["why"]["context"]
        assert context is not None and (context["uri"], context["position"]) == (question, "before")
        assert 0 < context["share"] < 1
        # Sam said the question, and the query names Evan: the question's score was lowered for it,
        # after the reply borrowed its share (the steps' order: context, then speaker).
        lowered = hits[question]["why"]["speaker"]
        assert lowered is not None and lowered["saidBy"] == "Sam" and 0 < lowered["factor"] < 1
        borrowed = context["share"] * hits[question]["score"] / lowered["factor"]
        assert abs(hits[reply]["score"] - borrowed) < 1e-3
        assert hits[reply]["why"]["speaker"] is None  # Evan's own turn is not lowered
        assert all(h["why"]["speaker"] is None for h in hits.values() if h["text"].startswith("Evan:"))
        # a note written days apart has no neighbours and no speaker
        assert hits[note.uri]["why"]["context"] is None and hits[note.uri]["why"]["speaker"] is None

        for mode in ("vector", "keyword"):  # one side alone means what it says: no conversation steps
            single = result_of(
                await client.call_tool("recall", {"query": QUESTION, "mode": mode, "limit": 10})
            )
            assert single["results"], mode
            assert all(h["why"]["context"] is None and h["why"]["speaker"] is None for h in single["results"])
