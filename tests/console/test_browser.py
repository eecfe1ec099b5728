"""The console in a real headless browser (Debian's chromium driven by playwright), over the README's
300 example memories embedded with the built-in MiniLM model, as the "Try it" tour imports them.

Screenshots of every page are saved under tests/artifacts/console/ (git-ignored); each test prints where.
Without chromium these tests skip and say how to install it (.ci/run installs it).
"""

from __future__ import annotations

import asyncio
import shutil
import time
from dataclasses import replace
from pathlib import Path

import pytest

from engram.app import create_app
from engram.app_keys import context_key
from engram.config import Settings
from engram.console.login_links import create_link_token
from engram.lifecycle import open_context
from engram.service.imports import decode_lines, import_values

CHROMIUM = Path("/usr/bin/chromium")
INSTALL = "apt-get update && apt-get install -y chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "memories.jsonl"
ARTIFACTS = REPO / "tests" / "artifacts" / "console"
# examples/README.md "Questions to try": each question's memory is the top hit with the built-in model.
QUESTIONS = {
    "Which JavaScript package manager does Dana prefer?": "Dana's preferred JavaScript package manager is pnpm",
    "Which Postgres version does production use?": "Production Postgres (pg-prod-02.internal) runs version 16.2",
    "Why were some customers billed twice?": "Post-mortem ENG-1423: on 2025-12-03 billing-service charged 37",
    "Who has to sign off on token-handling changes in the auth gateway?": "Henrik Müller is the security lead",
    "When does Dana's passport run out?": "Dana's Dutch passport expires on 2026-09-30",
}

playwright_api = pytest.importorskip("playwright.async_api", reason="pip install playwright (the test extra)")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"chromium is not installed: {INSTALL}")


@pytest.fixture(scope="module")
def examples_data(tmp_path_factory, settings_template) -> Path:
    """A data dir holding space `notes` with the 300 example memories, embedded once for the module."""
    data_dir = tmp_path_factory.mktemp("console-examples") / "data"

    async def build() -> None:
        async with open_context(replace(settings_template, data_dir=data_dir)) as ctx:
            space = await ctx.services.spaces.create_hosted("notes")
            lines = (
                (n, line) for n, line in enumerate(EXAMPLES.read_bytes().splitlines(), 1) if line.strip()
            )
            report = await import_values(
                ctx.store, ctx.services.spaces, ctx.services.memories, space.uri, decode_lines(lines)
            )
            assert report.written == 300 and not report.skipped

    asyncio.run(build())
    return data_dir


@pytest.fixture(scope="module")
def settings_template() -> Settings:
    return Settings(
        public_url="http://127.0.0.1:8080",  # plain http: the browser talks to 127.0.0.1
        service_did="did:web:engram.test",
        embedder="builtin",
        plc_url="http://127.0.0.1:9",
        workers=2,
    )


@pytest.fixture
async def site(aiohttp_server, examples_data, settings_template, tmp_path):
    data_dir = tmp_path / "data"
    shutil.copytree(examples_data, data_dir)
    server = await aiohttp_server(await create_app(replace(settings_template, data_dir=data_dir)))
    return server


@pytest.fixture
async def chromium():
    async with playwright_api.async_playwright() as p:
        browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()


class Tab:
    """A page that records JS console errors and saves named screenshots."""

    def __init__(self, page, base: str):
        self.page = page
        self.base = base
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    @classmethod
    async def open(cls, browser, base: str, **options) -> Tab:
        context = await browser.new_context(viewport={"width": 1280, "height": 900}, **options)
        return cls(await context.new_page(), base)

    async def shot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        await self.page.screenshot(path=str(path), full_page=True)
        print(f"screenshot: {path}")
        return path

    async def sign_in_operator(self, site) -> None:
        ctx = site.app[context_key]
        token = await create_link_token(ctx.store, time.time())
        await self.page.goto(f"{self.base}/console/login?token={token}")
        await self.page.get_by_role("button", name="Sign in as operator").click()
        await self.page.wait_for_url(f"{self.base}/console/")


def base_url(site) -> str:
    return f"http://127.0.0.1:{site.port}"


async def test_sign_in_and_search_the_examples(site, chromium):
    tab = await Tab.open(chromium, base_url(site))
    page = tab.page
    await page.goto(f"{tab.base}/")
    assert "/console/login" in page.url  # signed out: sent to sign in
    await tab.shot("signin")
    await tab.sign_in_operator(site)
    row = page.locator("table.spaces tbody tr").first
    assert "notes" in await row.inner_text() and "300" in await row.inner_text()
    await tab.shot("spaces")
    await page.keyboard.press("Tab")  # keyboard users land on the skip link first
    assert await page.evaluate("document.activeElement.textContent") == "Skip to content"

    await page.get_by_role("link", name="notes", exact=True).click()
    for question, expected in QUESTIONS.items():
        await page.get_by_label("Text").fill(question)
        await page.get_by_label("Text").press("Enter")  # the form submits from the keyboard
        await page.wait_for_selector("ol.results li")
        first = await page.locator("ol.results li.memory a.text").first.inner_text()
        assert first.startswith(expected), (question, first)
        if expected.startswith("Dana's preferred"):
            await tab.shot("space-search")
    bars = await page.locator("ol.results meter").count()
    assert bars == 10

    await page.get_by_label("Text").fill(next(iter(QUESTIONS)))
    await page.get_by_role("button", name="Search").click()
    await page.locator("ol.results li.memory a.text").first.click()
    await page.wait_for_url("**/console/memory?**")
    assert (await page.locator("blockquote.memory-text").inner_text()).startswith(
        "Dana's preferred JavaScript"
    )
    assert await page.locator("ol.results li.memory").count() == 8  # nearest neighbours
    await tab.shot("memory")

    await page.get_by_role("button", name="Sign out").click()
    await page.wait_for_url("**/console/login?reason=signed-out")
    await page.goto(f"{tab.base}/console/")
    assert "/console/login" in page.url
    assert tab.errors == []


async def test_graph_draws_nodes_and_edges_coloured_by_tag(site, chromium):
    tab = await Tab.open(chromium, base_url(site))
    page = tab.page
    await tab.sign_in_operator(site)
    uri = "at://did:web:engram.test/space/garden.engram.space/notes"
    await page.goto(f"{tab.base}/console/graph?space={uri}")
    await page.wait_for_selector("#graph[data-state=ready]", timeout=60_000)
    drawn = await page.evaluate(
        """() => {
          const cy = window.engramGraph, box = cy.elements().boundingBox();
          return {nodes: cy.nodes().length, edges: cy.edges().length, width: box.w, height: box.h,
                  colours: new Set(cy.nodes().map(n => n.data('colour'))).size};
        }"""
    )
    assert drawn["nodes"] == 150 and drawn["edges"] > 50, drawn
    assert drawn["width"] > 200 and drawn["height"] > 200 and drawn["colours"] >= 8, drawn
    assert await page.locator("#graph-legend li").count() >= 8
    # Clusters by tag: nodes sharing a colour sit closer together than nodes in general.
    spread = await page.evaluate(
        """() => {
          const ns = window.engramGraph.nodes().toArray(), grey = '#868e96';
          let same = 0, sameN = 0, all = 0, allN = 0;
          for (let i = 0; i < ns.length; i++) for (let j = i + 1; j < ns.length; j++) {
            const a = ns[i].position(), b = ns[j].position(), d = Math.hypot(a.x - b.x, a.y - b.y);
            all += d; allN++;
            if (ns[i].data('colour') === ns[j].data('colour') && ns[i].data('colour') !== grey) { same += d; sameN++; }
          }
          return {same: same / sameN, all: all / allN};
        }"""
    )
    assert spread["same"] < 0.8 * spread["all"], spread
    await tab.shot("graph")

    # Hover a linked node: its text shows; click it: its memory opens.
    target = await page.evaluate(
        """() => {
          const n = window.engramGraph.nodes().filter(n => n.degree() > 0)[0], p = n.renderedPosition();
          const r = document.getElementById('graph').getBoundingClientRect();
          return {x: r.left + p.x, y: r.top + p.y, text: n.data('text')};
        }"""
    )
    await page.mouse.move(target["x"], target["y"])
    tip = page.locator("#graph-tip")
    await tip.wait_for(state="visible")
    assert await tip.inner_text() == target["text"]
    await tab.shot("graph-hover")
    await page.mouse.click(target["x"], target["y"])
    await page.wait_for_url("**/console/memory?**")
    assert await page.locator("blockquote.memory-text").inner_text() == target["text"]

    # Fewer nodes, stricter links: the controls redraw.
    await page.goto(f"{tab.base}/console/graph?space={uri}")
    await page.get_by_label("Memories (newest)").fill("40")
    await page.get_by_label("Min. similarity").fill("0.6")
    await page.get_by_role("button", name="Draw").click()
    await page.wait_for_selector("#graph[data-state=ready]", timeout=60_000)
    assert await page.get_attribute("#graph", "data-nodes") == "40"
    assert tab.errors == []


async def test_create_and_revoke_a_key(site, chromium):
    operator = await Tab.open(chromium, base_url(site))
    page = operator.page
    await operator.sign_in_operator(site)
    await page.get_by_role("link", name="API keys").click()
    await page.get_by_label("Label").fill("browser test")
    await page.get_by_role("button", name="Create key").click()
    token = (await page.locator("#new-token").inner_text()).strip()
    assert token.startswith("engram_")
    await operator.shot("keys-created")

    reader = await Tab.open(chromium, base_url(site))
    await reader.page.goto(f"{reader.base}/console/login")
    await reader.page.get_by_role("textbox", name="API key").fill(token)
    await reader.page.get_by_role("button", name="Sign in with key").click()
    await reader.page.wait_for_url(f"{reader.base}/console/")
    assert "browser test" in await reader.page.locator("header .who").inner_text()
    assert await reader.page.get_by_role("link", name="API keys").count() == 0
    await reader.shot("reader-spaces")

    await page.goto(f"{operator.base}/console/keys")
    row = page.locator("tr", has_text="browser test")
    await row.get_by_role("button", name="Revoke").click()
    await page.wait_for_url("**/console/keys?revoked=*")
    assert "revoked" in await page.locator("tr", has_text="browser test").inner_text()
    await operator.shot("keys-revoked")

    await reader.page.reload()
    assert "/console/login" in reader.page.url  # the revoked key's session is over
    assert operator.errors == [] and reader.errors == []


async def test_pages_work_without_javascript(site, chromium):
    tab = await Tab.open(chromium, base_url(site), java_script_enabled=False)
    page = tab.page
    await tab.sign_in_operator(site)
    await page.get_by_role("link", name="notes", exact=True).click()
    await page.get_by_label("Text").fill("Why were some customers billed twice?")
    await page.get_by_role("button", name="Search").click()
    first = await page.locator("ol.results li.memory a.text").first.inner_text()
    assert first.startswith(QUESTIONS["Why were some customers billed twice?"])
    await page.get_by_role("link", name="Older »").click()
    assert await page.locator("ul.listing li.memory").count() == 25
    await tab.shot("space-no-js")
