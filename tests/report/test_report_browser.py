"""The report as a user meets it: opened in headless Chromium, clicked, filtered, looked at.

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe): NUL-separated
JSON on file descriptors 3 and 4. That needs nothing beyond the standard library — no driver
binary whose version must match the browser, no websocket package, no port to allocate.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import forensics
from forensics.report import model
from forensics.report.render import html

from conftest import DATA, SAMPLES

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
]


def _chromium() -> str | None:
    for name in (os.environ.get("FORENSICS_CHROMIUM"), "chromium", "chromium-browser"):
        if name and (path := shutil.which(name)):
            return path
    return None


# Why a browser test did not run, as `pytest -rs` lists it (README, Set up).
NO_CHROMIUM = (
    "headless Chromium not found (looked for $FORENSICS_CHROMIUM, chromium, chromium-browser): "
    "install Debian's `chromium` package to run the browser tests of the report"
)


def _need_chromium() -> str:
    """The browser to run, or the test skips saying what to install."""
    executable = _chromium()
    if executable is None:
        pytest.skip(NO_CHROMIUM)
    return executable


class Browser:
    """A minimal DevTools-protocol client: commands out, results and events back."""

    def __init__(self, executable: str, profile: Path) -> None:
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        os.set_inheritable(to_child_r, True)
        os.set_inheritable(from_child_w, True)

        def wire() -> None:  # in the child: the protocol pipes must sit on fds 3 and 4
            os.dup2(to_child_r, 3)
            os.dup2(from_child_w, 4)

        self.proc = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            preexec_fn=wire,
            close_fds=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buf += chunk
        raw, _, self._buf = self._buf.partition(b"\0")
        return json.loads(raw)

    def send(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30) -> Any:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if self.session and not method.startswith(("Target.", "Browser.")):
            msg["sessionId"] = self.session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for i, ev in enumerate(self.events):
            if ev.get("method") == method:
                return self.events.pop(i)
        while True:
            ev = self._read(deadline)
            if ev.get("method") == method:
                return ev
            self.events.append(ev)

    def open(self, url: str) -> None:
        """The page in a fresh tab; the previous tab, if any, is closed with its events."""
        if getattr(self, "target", None):
            self.send("Target.closeTarget", {"targetId": self.target})
            self.events.clear()
        target = self.target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        self.send("Emulation.setDeviceMetricsOverride", {
            "width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False
        })  # fmt: skip
        self.send("Page.navigate", {"url": url})
        self.wait_for("Page.loadEventFired")

    def ready(self, timeout: float = 30) -> None:
        """Until the explorer has rendered (a large island is inflated asynchronously)."""
        deadline = time.monotonic() + timeout
        while not self.js("document.getElementById('explorer').dataset.readyMs || ''"):
            if time.monotonic() > deadline:
                raise TimeoutError("the explorer never became ready")
            time.sleep(0.05)

    def js(self, expression: str) -> Any:
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise AssertionError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def viewport(self, width: int, height: int = 900, mobile: bool = False) -> None:
        self.width = width
        self.send("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile
        })  # fmt: skip

    def screenshot(self, path: Path, full_page: bool = True) -> None:
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": full_page}
        if full_page:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            width = getattr(self, "width", 1280)
            params["clip"] = {"x": 0, "y": 0, "width": width, "height": size["height"], "scale": 1}
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", params)["data"]))

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions and CSP violations seen so far."""
        self.send("Runtime.evaluate", {"expression": "1"})  # flush pending events
        out = []
        for ev in self.events:
            method, p = ev.get("method"), ev.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(f"exception: {p['exceptionDetails']}")
            elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(f"console.{p['type']}: {p.get('args')}")
            elif method == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append(f"log: {p['entry'].get('text')}")
        return out

    def requests(self) -> list[str]:
        return [
            ev["params"]["request"]["url"]
            for ev in self.events
            if ev.get("method") == "Network.requestWillBeSent"
        ]

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self.send("Browser.close", timeout=5)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_child)
        os.close(self._from_child)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    executable = _need_chromium()
    tmp = tmp_path_factory.mktemp("browser")
    result = forensics.scan([str(SAMPLES / "output2.txt")])
    report = tmp / "report.html"
    report.write_text(html.render(model.build(result, page=True)), encoding="utf-8")
    browser = Browser(executable, tmp / "profile")
    try:
        browser.open(report.as_uri())
        browser.ready()
        yield browser, tmp
    finally:
        browser.close()


def _visible_cards(browser: Browser) -> list[dict[str, Any]]:
    return browser.js(
        """[...document.querySelectorAll('#x-list details.traj')].map(d => ({
            id: d.id,
            text: d.querySelector('summary').innerText,
        }))"""
    )


def _select(browser: Browser, select_id: str, value: str) -> None:
    browser.js(
        f"""(() => {{ const s = document.getElementById({json.dumps(select_id)});
            s.value = {json.dumps(value)};
            s.dispatchEvent(new Event('change', {{bubbles: true}})); }})()"""
    )


def test_report_loads_without_errors_or_network(page):
    browser, tmp = page
    browser.screenshot(tmp / "report-top.png", full_page=False)
    browser.screenshot(tmp / "report.png")
    assert (tmp / "report.png").stat().st_size > 10_000
    assert browser.problems() == []
    # Only the report file itself is loaded: no font, script, image or beacon from anywhere.
    assert {u.split(":", 1)[0] for u in browser.requests()} <= {"file"}
    headings = browser.js("[...document.querySelectorAll('main h2')].map(h => h.textContent)")
    assert headings[:4] == [
        "Verdict",
        "Causes, ranked",
        "Fixes, in priority order",
        "Validation plan",
    ]


def test_explorer_lists_every_trajectory_and_filters_by_rule(page):
    browser, tmp = page
    browser.js("document.getElementById('x-reset').click()")
    assert len(_visible_cards(browser)) == 4
    _select(browser, "x-rule", "unclosed-think")
    cards = _visible_cards(browser)
    # Tasks 12, 27 and 48 have truncated agent turns; the healthy control (task 5) has none.
    assert sorted(c["text"].split("task ")[1].split()[0] for c in cards) == ["12", "27", "48"]
    assert all("unclosed-think" in c["text"] for c in cards)
    assert "3 of 4 trajectories match" in browser.js("document.getElementById('x-pager').innerText")
    browser.js("document.getElementById('explorer').scrollIntoView()")
    browser.screenshot(tmp / "filtered-by-rule.png", full_page=False)
    assert browser.problems() == []


def test_explorer_filters_by_reward_variant_and_search(page):
    browser, _ = page
    browser.js("document.getElementById('x-reset').click()")
    _select(browser, "x-reward", "full")
    cards = _visible_cards(browser)
    assert len(cards) == 1 and "task 5" in cards[0]["text"]
    browser.js("document.getElementById('x-reset').click()")
    variants = browser.js(
        "[...document.getElementById('x-variant').options].map(o => [o.value, o.text])"
    )
    frustrated = next(v for v, label in variants if label.startswith("frustrated"))
    _select(browser, "x-variant", frustrated)
    assert len(_visible_cards(browser)) == 3
    browser.js("document.getElementById('x-reset').click()")
    # Search is typed like a user types: into the box, one key event at a time.
    browser.js("document.getElementById('x-q').focus()")
    browser.send("Input.insertText", {"text": "air purifier"})
    time.sleep(0.4)  # the box waits 150 ms after the last key before filtering
    cards = _visible_cards(browser)
    assert [c["text"].split("task ")[1].split()[0] for c in cards] == ["48"]
    assert browser.problems() == []


def test_evidence_link_opens_the_turn_with_findings_inline(page):
    browser, tmp = page
    browser.js("document.getElementById('x-reset').click()")
    href = browser.js("document.querySelector('#cause-1 .evidence a').getAttribute('href')")
    browser.js(f"document.querySelector('#cause-1 .evidence a[href={json.dumps(href)}]').click()")
    time.sleep(0.2)
    turn = browser.js(
        f"""(() => {{ const t = document.getElementById({json.dumps(href[1:])});
            if (!t) return null;
            return {{ text: t.innerText, open: t.closest('details.traj').open,
                     target: t.classList.contains('target'),
                     marks: [...t.querySelectorAll('mark')].map(m => m.textContent) }}; }})()"""
    )
    assert turn is not None, f"{href} did not open a turn"
    assert turn["open"] and turn["target"]
    assert "unclosed-think" in turn["text"]
    assert "sample_logs/output2.txt:" in turn["text"]
    assert "<think>" in turn["marks"]
    browser.screenshot(tmp / "evidence-turn.png", full_page=False)
    assert browser.problems() == []


def _open(tmp: Path, name: str, paths: list[Path]) -> Browser:
    executable = _need_chromium()
    result = forensics.scan([str(p) for p in paths])
    report = tmp / f"{name}.html"
    report.write_text(html.render(model.build(result, page=True)), encoding="utf-8")
    browser = Browser(executable, tmp / f"profile-{name}")
    browser.open(report.as_uri())
    browser.ready()
    return browser


def test_hostile_text_stays_text_in_the_explorer(tmp_path):
    from test_report_html import PAYLOADS, hostile_results

    browser = _open(tmp_path, "hostile", [hostile_results(tmp_path)])
    try:
        # Open every trajectory and every collapsed block, so every payload is in the DOM.
        browser.js(
            """document.querySelectorAll('details').forEach(d => {
                 d.open = true; d.dispatchEvent(new Event('toggle')); })"""
        )
        counts = browser.js(
            """({ scripts: document.scripts.length, imgs: document.images.length,
                  textareas: document.querySelectorAll('textarea').length,
                  bold: document.querySelectorAll('#x-list b').length,
                  text: document.getElementById('x-list').innerText })"""
        )
        assert counts["scripts"] == 2 and counts["imgs"] == 0 and counts["textareas"] == 0
        # Only the explorer's own <b> (tool-call names) exist; the payload's <b>x</b> is text.
        assert counts["bold"] == 4
        for p in PAYLOADS:
            assert p in counts["text"]
        browser.screenshot(tmp_path / "hostile.png", full_page=False)
        assert browser.problems() == []
        assert not [e for e in browser.events if e.get("method") == "Page.javascriptDialogOpening"]
    finally:
        browser.close()


def test_thousands_of_trajectories_page_and_filter(tmp_path):
    from test_report_html import many_trajectories

    browser = _open(tmp_path, "many", [many_trajectories(tmp_path, 3000)])
    try:
        assert browser.js("document.querySelectorAll('#x-list details.traj').length") == 20
        pager = browser.js("document.getElementById('x-pager').innerText")
        assert "3,000 trajectories" in pager and "page 1 of 150" in pager
        browser.js("document.querySelector('#x-pager button:last-of-type').click()")
        assert browser.js("document.querySelector('#x-list details.traj').id") == "traj-21"
        _select(browser, "x-rule", "unclosed-think")
        assert "1,000 of 3,000 trajectories match" in browser.js(
            "document.getElementById('x-pager').innerText"
        )
        assert all("unclosed-think" in c["text"] for c in _visible_cards(browser))
        browser.screenshot(tmp_path / "many.png", full_page=False)
        assert browser.problems() == []
    finally:
        browser.close()


# The page's text, less its scripts and the rule pack's own documentation (a rule may say "None").
_TEXT_BUT_RULE_PACK = """(() => { const c = document.body.cloneNode(true);
    c.querySelectorAll('details.pack, script, style').forEach(p => p.remove());
    return c.textContent; })()"""


# What sticks out of the page's column: elements and runs of text whose right edge passes the
# content box of their column (main, or the header's wrap), unless a box between them and the
# column scrolls sideways and itself fits: that is where wide tables and code go. Text counts
# apart from its element: an unbreakable id overflows a paragraph that itself fits.
_OVERFLOW = """(() => {
    const w = document.documentElement.clientWidth;
    const edge = new Map();
    const right = box => {
        if (!edge.has(box)) {
            const r = box.getBoundingClientRect(), cs = getComputedStyle(box);
            edge.set(box, Math.min(w, r.right - parseFloat(cs.paddingRight)));
        }
        return edge.get(box);
    };
    const scrolls = p => ['auto', 'scroll', 'hidden'].includes(getComputedStyle(p).overflowX);
    const fits = (node, r) => {
        const column = node.closest('main, header .wrap');
        if (!column || r.width === 0 || r.right <= right(column) + 1) return true;
        for (let p = node; p && p !== column; p = p.parentElement)
            if (scrolls(p) && p.getBoundingClientRect().right <= right(column) + 1) return true;
        return false;
    };
    const name = e => e.tagName + '#' + e.id + '.' + (e.className.baseVal ?? e.className);
    const wide = [];
    for (const e of document.querySelectorAll('main *, header *'))
        if (!fits(e.parentElement, e.getBoundingClientRect())) wide.push(name(e));
    const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    const range = document.createRange();
    while (walk.nextNode()) {
        const t = walk.currentNode;
        if (!t.data.trim() || t.parentElement.closest('svg')) continue;
        range.selectNodeContents(t);
        if (!fits(t.parentElement, range.getBoundingClientRect()))
            wide.push('text in ' + name(t.parentElement) + ': ' + t.data.trim().slice(0, 60));
    }
    return { client: w, scroll: document.documentElement.scrollWidth, wide };
})()"""


def _overflow(browser: Browser) -> dict[str, Any]:
    """How wide the page is against the window, and what sticks out of its column."""
    return browser.js(_OVERFLOW)


@pytest.mark.parametrize("width", [1400, 390])
def test_the_page_fits_desktop_and_phone_widths(page, width):
    browser, tmp = page
    browser.viewport(width, mobile=width < 500)
    try:
        browser.js("document.getElementById('x-reset').click()")
        browser.js(
            """document.querySelectorAll('#x-list details.traj').forEach(d => {
                 d.open = true; d.dispatchEvent(new Event('toggle')); })"""
        )
        time.sleep(0.2)
        fit = _overflow(browser)
        assert width - 20 <= fit["client"] <= width  # (less a scroll bar)
        assert fit["scroll"] <= fit["client"], fit  # nothing pushes the page sideways
        assert fit["wide"] == []
        # The charts keep a readable scale: their text is drawn at 8 px or more.
        smallest = browser.js(
            """Math.min(...[...document.querySelectorAll('svg.chart text')].map(t =>
                 t.getBoundingClientRect().height).filter(h => h > 0))"""
        )
        assert smallest >= 8, smallest
        browser.screenshot(tmp / f"report-{width}.png")
        assert (tmp / f"report-{width}.png").stat().st_size > 10_000
        assert browser.problems() == []
    finally:
        browser.viewport(1280)


def test_no_placeholder_text_and_no_dash_for_missing_fields(page):
    browser, _ = page
    browser.js("document.getElementById('x-reset').click()")
    browser.js(
        """document.querySelectorAll('details').forEach(d => {
             d.open = true; d.dispatchEvent(new Event('toggle')); })"""
    )
    text = browser.js(_TEXT_BUT_RULE_PACK)
    for placeholder in ("None", "undefined", "null", "NaN", "finish —", "reward —"):
        assert placeholder not in text, placeholder
    # A tau-bench console log records no finish reasons: no turn says "finish".
    assert "finish " not in browser.js("document.getElementById('x-list').innerText")
    assert not re.search(r"\b1 (\w+ )?(turns|trajectories|findings)\b", text)


def test_a_large_scans_compressed_island_opens_the_same_explorer(tmp_path):
    """Above html.COMPRESS_ABOVE the data goes in gzipped; the page inflates it itself."""
    executable = _need_chromium()
    result = forensics.scan([str(SAMPLES / "output2.txt")])
    report = tmp_path / "packed.html"
    page = html.render(model.build(result, page=True), compress_above=0)
    assert 'data-encoding="gzip+base64"' in page
    report.write_text(page, encoding="utf-8")
    browser = Browser(executable, tmp_path / "profile-packed")
    try:
        browser.open(report.as_uri())
        browser.ready()
        assert len(_visible_cards(browser)) == 4
        _select(browser, "x-rule", "unclosed-think")
        assert len(_visible_cards(browser)) == 3
        # Searching and following an evidence link read the turns, inflated after the index.
        browser.js("document.getElementById('x-reset').click()")
        browser.js("document.getElementById('x-q').focus()")
        browser.send("Input.insertText", {"text": "air purifier"})
        time.sleep(0.5)
        cards = _visible_cards(browser)
        assert [c["text"].split("task ")[1].split()[0] for c in cards] == ["48"]
        assert browser.js("document.getElementById('explorer').dataset.turnsMs")
        browser.js("document.getElementById('x-reset').click()")
        href = browser.js("document.querySelector('#cause-1 .evidence a').getAttribute('href')")
        link = f"#cause-1 .evidence a[href={json.dumps(href)}]"
        browser.js(f"document.querySelector({json.dumps(link)}).click()")
        time.sleep(0.3)
        turn = browser.js(
            f"""(() => {{ const t = document.getElementById({json.dumps(href[1:])});
                return t && {{ text: t.innerText,
                               target: t.classList.contains('target') }}; }})()"""
        )
        assert turn and turn["target"] and "unclosed-think" in turn["text"]
        assert browser.problems() == []
        assert {u.split(":", 1)[0] for u in browser.requests()} <= {"file"}
    finally:
        browser.close()


def test_a_capture_without_task_ids_reads_without_placeholders(tmp_path):
    """A capture has no task ids and its trial is a counter: episodes go by trajectory id."""
    from conftest import DATA

    browser = _open(tmp_path, "capture", [DATA / "capture" / "vllm_agent_loop.jsonl"])
    try:
        browser.js(
            """document.querySelectorAll('details').forEach(d => {
                 d.open = true; d.dispatchEvent(new Event('toggle')); })"""
        )
        text = browser.js(_TEXT_BUT_RULE_PACK)
        for placeholder in ("None", "undefined", "null", "NaN", "task None", "turn None"):
            assert placeholder not in text, placeholder
        cards = _visible_cards(browser)
        assert cards and all("task " not in c["text"] and "trial " not in c["text"] for c in cards)
        assert "finish " in browser.js("document.getElementById('x-list').innerText")
        assert not re.search(r"\b1 (\w+ )?(turns|trajectories|findings)\b", text)
        browser.viewport(390, mobile=True)
        fit = _overflow(browser)
        assert fit["scroll"] <= fit["client"] and fit["wide"] == [], fit
        browser.screenshot(tmp_path / "capture-390.png")
        assert browser.problems() == []
    finally:
        browser.close()


# --- every report the suite's data makes, at a desktop and a phone width ---------------------

# The samples together and each alone, and every folder of test data: each format the readers
# know reaches a page here, with its own ids, paths, runs, charts and coverage.
REPORTS = [
    (SAMPLES,),
    *((p,) for p in sorted(SAMPLES.iterdir()) if p.suffix in (".txt", ".json", ".jsonl")),
    *((d,) for d in sorted(DATA.iterdir()) if d.is_dir()),
    # Runs of several sources in one scan, with long run ids and model names side by side.
    (DATA / "cassettes", DATA / "realdata_full"),
]

# The page's words, one text node a line, less what quotes the data (model text in pre, finding
# messages and errors, which may say `null`) and the rule pack's documentation.
_WORDS = """(() => { const c = document.body.cloneNode(true);
    c.querySelectorAll('details.pack, script, style, pre, .tfind, .evmsg, .terr')
        .forEach(p => p.remove());
    const walk = document.createTreeWalker(c, NodeFilter.SHOW_TEXT), out = [];
    while (walk.nextNode()) out.push(walk.currentNode.data);
    return out.join('\\n'); })()"""
# A placeholder is a word of its own ("task None", "×undefined", "reward NaN"), not a part of
# an id that happens to spell one ("[PERSONA:None]" is a real tau2 task id).
PLACEHOLDER = re.compile(r"(?:^|[\\s×·(=,])(undefined|NaN|None|null)(?=$|[\\s,.;:)·])", re.M)

# Every piece of chart text that is shown: where it is, and how tall it is drawn.
_CHART_TEXT = """[...document.querySelectorAll('svg.chart text')].map(t => {
    const r = t.getBoundingClientRect();
    return { text: t.textContent, left: r.left, right: r.right, height: r.height };
}).filter(t => t.height > 0)"""


@pytest.fixture(scope="module")
def chromium(tmp_path_factory):
    executable = _need_chromium()
    browser = Browser(executable, tmp_path_factory.mktemp("profile"))
    try:
        yield browser
    finally:
        browser.close()


def _open_all(browser: Browser) -> None:
    browser.js(
        """document.querySelectorAll('details').forEach(d => {
             d.open = true; d.dispatchEvent(new Event('toggle')); })"""
    )


@pytest.mark.parametrize(
    "inputs", REPORTS, ids=lambda ps: "+".join(str(p.relative_to(SAMPLES.parent)) for p in ps)
)
def test_every_report_reads_at_desktop_and_phone_width(chromium, scan_of, tmp_path, inputs):
    report = tmp_path / "report.html"
    report.write_text(html.render(model.build(scan_of(*inputs), page=True)), encoding="utf-8")
    chromium.open(report.as_uri())
    chromium.ready()
    _open_all(chromium)
    words = chromium.js(_WORDS)
    shown = [m.group(0).strip() for m in PLACEHOLDER.finditer(words)]
    assert shown == [], shown
    for width in (1400, 390):
        chromium.viewport(width, mobile=width < 500)
        _open_all(chromium)
        fit = _overflow(chromium)
        assert fit["scroll"] <= fit["client"] and fit["wide"] == [], (width, fit)
        # Chart text is drawn at a readable size, and inside the window: no label off-screen.
        for t in chromium.js(_CHART_TEXT):
            assert t["height"] >= 8, (width, t)
            assert t["left"] >= 0 and t["right"] <= fit["client"] + 1, (width, t)
        if width < 500:
            # A file's path gets the width of the page, not a sliver between other columns.
            cells = chromium.js(
                "[...document.querySelectorAll('#coverage td.src')].map(td => td.offsetWidth)"
            )
            assert cells and min(cells) >= 0.8 * fit["client"] - 40, cells
    assert chromium.problems() == []


def test_an_episode_without_turns_shows_its_findings(chromium, scan_of, tmp_path):
    """Harbor's result.json of a trial that timed out: 0 turns, two findings of the episode."""
    report = tmp_path / "harbor.html"
    result = scan_of(DATA / "agents" / "harbor")
    report.write_text(html.render(model.build(result, page=True)), encoding="utf-8")
    chromium.open(report.as_uri())
    chromium.ready()
    card = chromium.js(
        """(() => { const d = [...document.querySelectorAll('#x-list details.traj')]
              .find(d => d.querySelector('summary').innerText.includes('0 turns'));
            d.open = true; d.dispatchEvent(new Event('toggle'));
            return { chips: [...d.querySelectorAll('.chip.rule')].map(c => c.textContent),
                     listed: [...d.querySelectorAll('.tfind li code')].map(c => c.textContent) };
        })()"""
    )
    assert card == {
        "chips": ["episode-crashed ×1", "run-exit-infra ×1"],
        "listed": ["episode-crashed", "run-exit-infra"],
    }
    assert chromium.problems() == []


def test_the_rule_filter_lists_rules_with_findings_first(page):
    browser, _ = page
    groups = browser.js(
        """[...document.querySelectorAll('#x-rule optgroup')].map(g =>
             [g.label, [...g.querySelectorAll('option')].map(o => o.textContent)])"""
    )
    assert [label for label, _ in groups] == ["with findings", "no findings"]
    # Most trajectories first; a tie keeps the pack's order.
    assert groups[0][1] == [
        "no-action-failure (3)",
        "reasoning-leak (3)",
        "think-loop (3)",
        "unclosed-think (3)",
    ]
    assert len(groups[1][1]) > 30 and all(o.endswith(" (0)") for o in groups[1][1])


def test_without_chromium_the_browser_tests_skip_saying_what_to_install(monkeypatch):
    monkeypatch.delenv("FORENSICS_CHROMIUM", raising=False)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(pytest.skip.Exception, match="install Debian's `chromium` package"):
        _need_chromium()
