"""The HTML replay: what it shows, that trace content stays text, and (slow) what Chromium renders."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest
from _replay_traces import HOSTILE, hostile_trace, recall_trace

from pocketpilot.tracing.replay import render_replay
from pocketpilot.tracing.trace import read_trace


class Node:
    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Node | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node] = []
        self.text: list[str] = []

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()

    def find(self, tag: str | None = None, cls: str | None = None, id: str | None = None) -> list[Node]:
        return [n for n in self.walk() if (tag is None or n.tag == tag) and (cls is None or cls in n.classes)
                and (id is None or n.attrs.get("id") == id)]

    def all_text(self) -> str:
        return "".join(["".join(self.text), *(c.all_text() for c in self.children)])


VOID = {"meta", "br", "img", "input", "link", "hr", "source", "area", "base", "col", "embed", "wbr"}


class Tree(HTMLParser):
    """A DOM tree of a page, as the parser (not a regex) sees it."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self.cur = self.root
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs), self.cur)
        self.cur.children.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, dict(attrs), self.cur))

    def handle_endtag(self, tag):
        node = self.cur
        while node is not self.root and node.tag != tag:
            node = node.parent
        if node is not self.root:
            self.cur = node.parent

    def handle_data(self, data):
        self.cur.text.append(data)


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    import asyncio

    out = tmp_path_factory.mktemp("replay")

    async def go():
        return await hostile_trace(out), await recall_trace(out)

    return asyncio.run(go())


def _check_page(dom: Node, episode) -> None:
    """What a reader must find on the page, checked on its element tree."""
    steps = dom.find(id="steps")[0]
    items = [c for c in steps.children if c.tag == "li" and "step" in c.classes]
    assert len(items) == len(episode.steps)
    assert [i.find(cls="kind")[0].all_text() for i in items] == [
        s.action.kind if s.action else "invalid output" for s in episode.steps]
    chart = dom.find(id="chart")[0].find("svg")[0]
    assert len(chart.find("rect", cls="bar")) == len(episode.steps)
    assert len(chart.find("circle", cls="pt")) == len(episode.steps)
    verdict = dom.find(id="verdict")[0]
    assert ("success" in verdict.classes) == episode.verdict.success
    assert len(verdict.find("li", cls="criterion")) == len(episode.verdict.criteria)
    assert dom.find(id="model")[0].all_text() == episode.header.planner.model
    assert episode.header.eta_version in dom.find(id="eta")[0].all_text()
    assert dom.find(id="request")[0].all_text() == episode.header.request


def _no_outside_reference(dom: Node) -> None:
    for node in dom.walk():
        assert node.tag not in ("script", "link", "iframe", "object", "embed", "img"), node.tag
        for name, value in node.attrs.items():
            assert not name.startswith("on"), (node.tag, name)
            if name in ("src", "href", "srcset", "action", "xlink:href"):
                raise AssertionError(f"{node.tag} {name}={value}")
    style = "".join(n.all_text() for n in dom.find("style"))
    assert "url(" not in style and "@import" not in style


def test_replay_shows_the_run_and_keeps_hostile_results_as_text(traces):
    episode, complete = read_trace(traces[0])
    html = render_replay(episode, complete)
    dom = Tree(html).root
    _check_page(dom, episode)
    _no_outside_reference(dom)  # the payload's <script> and <img onerror> did not become elements
    # ... they are there as text, in the read_note result and the finish summary
    data = [n.all_text() for n in dom.find("pre", cls="data")]
    assert any("<script>document.title='PWNED'" in t for t in data)
    assert HOSTILE in dom.find(id="stop")[0].all_text()
    held = dom.find(id="step-1")[0]
    assert "held" in held.classes and "precondition_failed" in held.all_text()
    assert held.find("li", cls="notice")


def test_replay_shows_memory_hits_with_provenance(traces):
    episode, complete = read_trace(traces[1])
    dom = Tree(render_replay(episode, complete)).root
    _check_page(dom, episode)
    hits = episode.steps[0].retrieved
    rows = dom.find(id="step-1")[0].find("tr", cls="memory")
    assert len(rows) == len(hits) > 0
    assert hits[0].content in rows[0].all_text() and hits[0].id in rows[0].all_text()
    for key in hits[0].provenance:
        assert f"{key}:" in rows[0].all_text()
    assert "Bedroom Tv set" in dom.find(id="step-3")[0].all_text()  # the failed guess, then recovery
    assert "erred" not in dom.find(id="step-4")[0].classes


def test_cli_writes_the_html_and_bad_input_is_one_line(traces, tmp_path):
    out = tmp_path / "replay.html"
    run = subprocess.run([sys.executable, "-m", "pocketpilot", "trace", "html", str(traces[0]), "-o", str(out)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert out.stat().st_size > 0 and str(out) in run.stdout
    episode, _ = read_trace(traces[0])
    _check_page(Tree(out.read_text()).root, episode)
    bad = subprocess.run([sys.executable, "-m", "pocketpilot", "trace", "html", str(tmp_path / "nope.jsonl")],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "cannot read trace" in bad.stderr


# --------------------------------------------------------------------------- Chromium

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium(page: Path, *args: str, timeout: float = 60) -> str:
    """Run headless Chromium on ``page`` in its own process group, and kill the whole group
    after (its zygote and crash handler outlive the browser otherwise)."""
    exe = next((p for p in ("chromium", "chromium-browser") if _which(p)), None)
    if exe is None:
        pytest.skip("chromium is not installed (make test installs it)")
    with tempfile.TemporaryDirectory(prefix="pp-chromium-") as profile:
        proc = subprocess.Popen([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=timeout)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    assert proc.returncode == 0, f"chromium exited {proc.returncode}"
    return out


def _which(name: str) -> bool:
    from shutil import which

    return which(name) is not None


@pytest.mark.slow
def test_chromium_renders_the_replay_and_the_payload_never_runs(traces, tmp_path):
    from PIL import Image, ImageStat

    episode, complete = read_trace(traces[0])
    page = tmp_path / "replay.html"
    page.write_text(render_replay(episode, complete), encoding="utf-8")

    # the detector works: the same payload, put in a page raw, does run and leaves its marks
    control = tmp_path / "control.html"
    control.write_text(f"<!DOCTYPE html><html><head><title>control</title></head><body>{HOSTILE}</body></html>")
    ran = Tree(chromium(control, "--dump-dom")).root
    assert ran.find(id="injected") and ran.find("title")[0].all_text() == "PWNED"

    dom = Tree(chromium(page, "--dump-dom")).root
    assert not dom.find(id="injected")
    title = dom.find("head")[0].find("title")[0].all_text()
    assert title.startswith("pocketpilot replay: ") and "PWNED" not in title
    _check_page(dom, episode)
    # escaped, not merely blocked by the page's CSP: no element came of it, and it reads as text
    _no_outside_reference(dom)
    assert any("<script>document.title='PWNED'" in n.all_text() for n in dom.find("pre", cls="data"))

    shot = tmp_path / "replay.png"
    chromium(page, f"--screenshot={shot}", "--window-size=1280,2000")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    image = Image.open(io.BytesIO(data)).convert("RGB")
    assert image.size == (1280, 2000)
    # not blank: many colours, and real contrast between text and background
    assert len(image.getcolors(maxcolors=1 << 16) or range(1 << 16)) > 50
    assert max(ImageStat.Stat(image).stddev) > 20


def test_an_unfinished_run_without_steps_or_verdict_still_renders(tmp_path):
    from pocketpilot.contracts import Episode, EpisodeHeader, PlannerInfo

    header = EpisodeHeader(episode_id="e1", request="</title><b>hi</b>", planner=PlannerInfo(backend="x", model="m"))
    dom = Tree(render_replay(Episode(header=header), complete=False)).root
    assert dom.find("head")[0].find("title")[0].all_text() == "pocketpilot replay: </title><b>hi</b>"
    assert not dom.find("b") or all(n.all_text() != "hi" for n in dom.find("b"))
    assert "none" in dom.find(id="verdict")[0].classes and "incomplete trace" in dom.all_text()
    assert not dom.find(id="steps")[0].find("li") and not dom.find(id="chart")[0].find("rect")
