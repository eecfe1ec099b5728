"""What each console page shows, and how each form behaves, over the real service layer."""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import replace
from pathlib import Path

import aiohttp
from support.console import Browser, console_app

from engram.app_keys import context_key
from engram.console import guard
from engram.service import apikeys
from engram.store import MemoryWrite

RESULT_TEXT = re.compile(r'<ol class="memories results">(.*?)</ol>', re.DOTALL)
LINK_TEXT = re.compile(r'<a class="text" href="[^"]*">([^<]*)</a>')


def results(html: str) -> list[str]:
    block = RESULT_TEXT.search(html)
    return LINK_TEXT.findall(block.group(1)) if block else []


def listing(html: str) -> list[str]:
    block = re.search(r'<ul class="memories listing">(.*?)</ul>\s*<nav class="pager"', html, re.DOTALL).group(
        1
    )
    return LINK_TEXT.findall(block)


async def test_spaces_page_shows_model_counts_skipped_and_index_state(console):
    operator = await console.operator()
    html = await (await operator.get("/console/")).text()
    row = re.search(r"<tr>\s*<th scope=\"row\"><a[^>]*>alpha</a>.*?</tr>", html, re.DOTALL).group(0)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)
    assert cells[0] == "hosted" and "hashing" in cells[1]
    assert cells[2:6] == ["30", "0", "exact", "no"]
    # A search loads the index; the page then says so.
    await operator.get("/console/space", {"space": console.alpha, "q": "deploy window"})
    html = await (await operator.get("/console/")).text()
    row = re.search(r"<a[^>]*>alpha</a>.*?</tr>", html, re.DOTALL).group(0)
    assert re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)[5] == "yes"


async def test_spaces_page_counts_skipped_memories(console):
    from engram.store import Embedding

    foreign = Embedding("other-model", "sha256:other", 4, b"\x00<" * 4)
    await console.ctx.services.memories.write(
        console.beta,
        [MemoryWrite(author="did:plc:someone", text="written with another model", embedding=foreign)],
    )
    html = await (await (await console.operator()).get("/console/")).text()
    row = re.search(r"<a[^>]*>beta</a>.*?</tr>", html, re.DOTALL).group(0)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)
    assert cells[2] == "2" and 'title="did:plc:someone: 1 "' in cells[3] and ">1<" in cells[3]


async def test_index_kind_is_hnsw_above_exact_max(aiohttp_client, console_settings, clock):
    client = await aiohttp_client(
        await console_app(replace(console_settings, exact_max=3), clock), cookie_jar=aiohttp.DummyCookieJar()
    )
    ctx = client.app[context_key]
    space = (await ctx.services.spaces.create_hosted("big")).uri
    await ctx.services.memories.write(space, [MemoryWrite(author=ctx.settings.service_did, text=f"m {i}")
                                              for i in range(5)])  # fmt: skip
    browser = Browser(client)
    await browser.sign_in_operator(ctx, clock)
    html = await (await browser.get("/console/")).text()
    assert "<td>HNSW</td>" in html
    await browser.get("/console/space", {"space": space, "q": "m 1"})  # loads it: the loaded index says so
    html = await (await browser.get("/console/space", {"space": space})).text()
    assert "HNSW, loaded" in html


async def test_text_search_finds_the_memory_first_with_a_similarity_bar(console):
    reader = await console.reader(console.alpha_read)
    resp = await reader.get(
        "/console/space",
        {"space": console.alpha, "q": "alpha note 7: the deploy window for service 7 is Tuesday"},
    )
    html = await resp.text()
    assert resp.status == 200
    found = results(html)
    assert found[0] == "alpha note 7: the deploy window for service 7 is Tuesday" and len(found) == 10
    first = RESULT_TEXT.search(html).group(1).split('<li class="memory">')[1]
    values = [int(v) for v in re.findall(r'<meter min="0" max="1000" value="(\d+)"', html)]
    # the bar is the fused score of engram's ranking (hybrid), on the 0-1000 scale; below the first the
    # order is the ranking's, not the scores' (these 30 near-identical notes restate each other, and every
    # restater is placed before what it restates: docs/compat.md)
    assert len(values) == 10 and values[0] > 600 and values[0] > max(values[1:])
    assert f"{values[0] / 1000:.3f}" in first
    assert 'class="chip"' in first and ">odd<" in first and ">deploy<" in first  # tags as chips
    assert "chat:2026-01-08" in first and 'datetime="2026-01-08T10:07:00.000Z"' in first  # source and date


async def test_search_filters_tags_author_since_and_limit(console):
    operator = await console.operator()
    q = {"space": console.alpha, "q": "deploy window"}
    evens = results(await (await operator.get("/console/space", {**q, "tags": "even", "limit": "25"})).text())
    assert len(evens) == 15 and all(int(t.split()[2].rstrip(":")) % 2 == 0 for t in evens)
    both = results(
        await (await operator.get("/console/space", {**q, "tags": "odd, deploy", "limit": "50"})).text()
    )
    assert len(both) == 15
    since = results(
        await (await operator.get("/console/space", {**q, "since": "2026-01-25", "limit": "50"})).text()
    )
    assert sorted(since) == sorted(f"alpha note {i}: the deploy window for service {i} is Tuesday"
                                   for i in range(30) if i % 28 + 1 >= 25)  # fmt: skip
    nobody = await (await operator.get("/console/space", {**q, "author": "did:plc:nobody"})).text()
    assert results(nobody) == [] and "0 results" in nobody


async def test_search_until_any_and_excluded_tags_current_and_why(console):
    operator = await console.operator()
    q = {"space": console.alpha, "q": "deploy window", "limit": "50"}
    until = results(await (await operator.get("/console/space", {**q, "until": "2026-01-03"})).text())
    assert sorted(until) == sorted(f"alpha note {i}: the deploy window for service {i} is Tuesday"
                                   for i in range(30) if i % 28 + 1 <= 3)  # fmt: skip
    either = results(await (await operator.get("/console/space", {**q, "any_tags": "odd, nothing"})).text())
    without = results(await (await operator.get("/console/space", {**q, "exclude_tags": "odd"})).text())
    assert len(either) == 15 and len(without) == 15 and not set(either) & set(without)
    html = await (await operator.get("/console/space", {**q, "tags": "nothing"})).text()
    assert 'data-reason="filtered_out"' in html
    # a newer memory naming an older one: the older is struck through with a link to its successor
    old, new = "alpha note 7: the deploy window for service 7 is Tuesday", "Service 7 now deploys on Fridays."
    old_uri = next(m.uri for m in (await console.ctx.services.memories.list(console.alpha, limit=100))[0]
                   if m.text == old)  # fmt: skip
    [record] = await console.ctx.services.memories.write(
        console.alpha,
        [MemoryWrite(author=console.ctx.settings.service_did, text=new, attrs={"supersedes": old_uri})],
    )
    html = await (await operator.get("/console/space", {**q, "q": old})).text()
    block = RESULT_TEXT.search(html).group(1)
    struck = re.search(r'<li class="memory superseded">(.*?)<p class="meta">', block, re.DOTALL).group(1)
    assert '<del><a class="text"' in struck and old in struck
    assert "superseded (explicit) by" in struck and f"uri={record.uri}" in struck
    assert re.search(r'<p class="why">why: cosine [0-9.]+ · words [^<]*deploy [0-9.]+', block)
    current = await (await operator.get("/console/space", {**q, "q": old, "current": "1"})).text()
    assert old not in results(current) and "superseded" not in RESULT_TEXT.search(current).group(1)


async def test_search_errors_show_next_to_the_form(console):
    operator = await console.operator()
    resp = await operator.get("/console/space", {"space": console.alpha, "q": "x", "since": "yesterday"})
    html = await resp.text()
    assert resp.status == 400 and "since" in html  # a bad filter is a 400 naming the field
    resp = await operator.get("/console/space", {"space": console.alpha, "q": "x" * 1001})
    assert resp.status == 400


async def test_newest_first_list_pages_with_a_cursor(console):
    operator = await console.operator()
    html = await (await operator.get("/console/space", {"space": console.alpha})).text()
    first_page = listing(html)
    assert len(first_page) == 25
    assert first_page[0].startswith("alpha note 27:")  # created 2026-01-28, the newest
    older = re.search(r'<a rel="next" href="([^"]+)"', html).group(1).replace("&amp;", "&")
    html2 = await (await operator.get(older)).text()
    second_page = listing(html2)
    assert len(second_page) == 5 and not set(first_page) & set(second_page)
    assert 'rel="next"' not in html2 and "« Newest" in html2
    evens = listing(
        await (await operator.get("/console/space", {"space": console.alpha, "tags": "even"})).text()
    )
    assert len(evens) == 15


async def test_memory_page_shows_text_attrs_uri_cid_and_neighbours(console):
    reader = await console.reader(console.alpha_read)
    uri = console.alpha_uris[4]
    memory = await console.ctx.services.memories.get(console.alpha, uri)
    resp = await reader.get("/console/memory", {"space": console.alpha, "uri": uri})
    html = await resp.text()
    assert resp.status == 200
    assert "alpha note 4: the deploy window" in html
    assert f"<code>{uri}</code>" in html and f"<code>{memory.cid}</code>" in html
    assert "&#34;n&#34;: 4" in html or '"n": 4' in html  # attrs, as JSON
    neighbours = results(html)
    assert (
        len(neighbours) == 8 and "alpha note 4: the deploy window for service 4 is Tuesday" not in neighbours
    )
    assert all(t.startswith("alpha note") for t in neighbours)


async def test_memory_page_for_an_unknown_memory_is_404(console):
    operator = await console.operator()
    resp = await operator.get("/console/memory", {"space": console.alpha, "uri": console.alpha_uris[0] + "x"})
    assert resp.status == 404 and "MemoryNotFound" in await resp.text()


async def test_memory_text_is_escaped(console):
    await console.ctx.services.memories.write(
        console.alpha,
        [
            MemoryWrite(
                author=console.ctx.settings.service_did, text="<script>alert(1)</script>", tags=("<b>",)
            )
        ],
    )
    html = await (await (await console.operator()).get("/console/space", {"space": console.alpha})).text()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>" not in html


async def test_graph_page_and_its_data(console):
    operator = await console.operator()
    page = await operator.get(
        "/console/graph", {"space": console.alpha, "limit": "20", "minSimilarity": "0.3"}
    )
    html = await page.text()
    assert page.status == 200 and 'id="graph"' in html and "cytoscape.min.js" in html
    src = re.search(r'data-src="([^"]+)"', html).group(1).replace("&amp;", "&")
    assert "limit=20" in src and "minSimilarity=0.3" in src
    data = await (await operator.get(src)).json()
    graph = await console.ctx.services.search.graph(
        await console.ctx.services.spaces.find(console.alpha), limit=20, neighbors=3, min_similarity=0.3
    )
    assert len(data["nodes"]) == len(graph.nodes) == 20 and data["edges"]
    assert [(e["source"], e["target"], e["similarity"]) for e in data["edges"]] == [
        (str(a), str(b), s) for a, b, s in graph.edges
    ]
    node = data["nodes"][0]
    assert node["href"].startswith("/console/memory?space=") and node["text"].startswith("alpha note")
    strict = await (
        await operator.get("/console/graph.json", {"space": console.alpha, "minSimilarity": "1"})
    ).json()
    assert len(strict["edges"]) < len(data["edges"])


async def test_graph_controls_are_validated(console):
    operator = await console.operator()
    for params in ({"limit": "0"}, {"limit": "501"}, {"limit": "many"}, {"minSimilarity": "nan"},
                   {"minSimilarity": "2"}):  # fmt: skip
        page = await operator.get("/console/graph", {"space": console.alpha, **params})
        assert page.status == 400, params
        data = await operator.get("/console/graph.json", {"space": console.alpha, **params})
        assert data.status == 400 and (await data.json())["error"] == "InvalidRequest"


async def test_keys_page_creates_shows_once_and_revokes(console):
    operator = await console.operator()
    csrf = await operator.csrf("/console/keys")
    resp = await operator.post(
        "/console/keys",
        {"csrf": csrf, "space": console.beta, "scope": ["read", "write"], "label": "from console"},
    )
    html = await resp.text()
    assert resp.status == 201 and "it is not shown again" in html
    token = re.search(r'<code class="token" id="new-token">([^<]+)</code>', html).group(1)
    key = await apikeys.find_live_api_key(console.ctx.store, token)
    assert key.space_uri == console.beta and key.scopes == {"read", "write"} and key.label == "from console"
    listing_html = await (await operator.get("/console/keys")).text()
    assert token not in listing_html and "from console" in listing_html  # listed, never shown again
    # The new token works as a reader sign-in, for its space only.
    reader = await console.reader(token)
    assert (await reader.get("/console/space", {"space": console.beta})).status == 200
    assert (await reader.get("/console/space", {"space": console.alpha})).status == 404
    # Revoke it.
    resp = await operator.post("/console/keys/revoke", {"csrf": csrf, "id": str(key.id)})
    assert resp.status == 303 and resp.headers["Location"] == f"/console/keys?revoked={key.id}"
    html = await (await operator.get(resp.headers["Location"])).text()
    assert f"Key {key.id} revoked." in html
    row = re.search(rf'<tr id="key-{key.id}">.*?</tr>', html, re.DOTALL).group(0)
    assert "revoked" in row and "Revoke" not in row
    assert await apikeys.find_live_api_key(console.ctx.store, token) is None
    assert (await reader.get("/console/")).status == 303


async def test_key_form_errors_are_400s(console):
    operator = await console.operator()
    csrf = await operator.csrf("/console/keys")
    no_scope = await operator.post("/console/keys", {"csrf": csrf, "space": console.alpha})
    assert no_scope.status == 400 and "scopes" in await no_scope.text()
    unknown = await operator.post(
        "/console/keys", {"csrf": csrf, "space": "at://did:web:x/space/t/none", "scope": "read"}
    )
    assert unknown.status == 400 and "UnknownSpace" in await unknown.text()
    twice = await operator.post("/console/keys/revoke", {"csrf": csrf, "id": "999"})
    assert twice.status == 400 and "KeyNotFound" in await twice.text()
    bad_id = await operator.post("/console/keys/revoke", {"csrf": csrf, "id": "one"})
    assert bad_id.status == 400
    assert len(await apikeys.list_api_keys(console.ctx.store)) == 3


async def test_placeholders_for_sync_state_and_grants_are_marked(console):
    from engram.store import spaces as store_spaces

    operator = await console.operator()
    html = await (await operator.get("/console/keys")).text()
    assert 'data-placeholder="grants"' in html
    assert 'data-placeholder="sync-state"' not in await (await operator.get("/console/")).text()
    synced = "at://did:plc:someoneelse0000000000000/space/garden.engram.space/shared"
    await console.ctx.store.write(store_spaces.create_space, synced, "synced")
    assert 'data-placeholder="sync-state"' in await (await operator.get("/console/")).text()
    page = await operator.get("/console/space", {"space": synced})
    assert page.status == 200 and 'data-placeholder="sync-state"' in await page.text()


async def test_console_answers_carry_security_headers_and_the_api_keeps_cors(console):
    operator = await console.operator()
    resp = await operator.get("/console/")
    assert resp.headers["Content-Security-Policy"] == guard.CSP
    assert resp.headers["X-Frame-Options"] == "DENY" and resp.headers["Referrer-Policy"] == "no-referrer"
    assert resp.headers["Cache-Control"] == "no-store" and "Access-Control-Allow-Origin" not in resp.headers
    api = await console.client.get("/xrpc/_health")
    assert api.headers["Access-Control-Allow-Origin"] == "*"


async def test_static_files_are_served(console):
    browser = console.browser()  # stylesheet and scripts need no session
    css = await browser.get("/console/static/console.css")
    js = await browser.get("/console/static/vendor/cytoscape/cytoscape.min.js")
    assert css.status == 200 and js.status == 200 and "Cache-Control" not in js.headers
    assert (await browser.get("/console/static/../../pyproject.toml")).status in (403, 404)


def test_csp_hash_matches_the_vendored_cytoscape_style():
    source = (Path(guard.__file__).parent / "static/vendor/cytoscape/cytoscape.min.js").read_text()
    prefix, name = re.search(r'(\w)="(__________cytoscape_container)"', source).groups()
    assert f'u.textContent="."+{prefix}+" {{ position: relative; }}"' in source
    text = f".{name} {{ position: relative; }}"
    digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
    assert f"'sha256-{digest}'" == guard.CYTOSCAPE_STYLE_HASH


async def test_a_refused_text_search_shows_beside_the_form_and_the_page_still_renders(
    aiohttp_client, console_settings, clock
):
    client = await aiohttp_client(
        await console_app(replace(console_settings, text_search=False), clock),
        cookie_jar=aiohttp.DummyCookieJar(),
    )
    ctx = client.app[context_key]
    space = (await ctx.services.spaces.create_hosted("quiet")).uri
    await ctx.services.memories.write(
        space, [MemoryWrite(author=ctx.settings.service_did, text="still listed")]
    )
    browser = Browser(client)
    await browser.sign_in_operator(ctx, clock)
    resp = await browser.get("/console/space", {"space": space, "q": "anything"})
    html = await resp.text()
    assert resp.status == 200 and 'role="alert"' in html and "does not embed queries" in html
    assert listing(html) == ["still listed"]


async def test_a_tag_holding_a_comma_chip_lists_its_memories(console):
    """A chip's link names its tag exactly (`tag=`), so a tag with a comma is not split into two."""
    import html as html_lib

    operator = await console.operator()
    author = console.ctx.settings.service_did
    await console.ctx.services.memories.write(
        console.alpha, [MemoryWrite(author=author, text="tagged with a comma", tags=("alpha,beta",))]
    )
    page = await (await operator.get("/console/space", {"space": console.alpha})).text()
    link = re.search(r'<a class="chip" href="([^"]*)">alpha,beta</a>', page).group(1)
    chip = await (await operator.get(html_lib.unescape(link))).text()
    assert listing(chip) == ["tagged with a comma"]
    assert 'name="tag" value="alpha,beta"' in chip  # and the search form keeps it
