"""The HTML report: its structure (golden, not pixels), its safety, its size at scale."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

import forensics
from forensics.report import model
from forensics.report.render import html

from conftest import SAMPLES

PAYLOADS = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(2)>",
    "</textarea><b>x</b>",
    "</script><script>alert(3)</script><!--",
]
KEY = "sk-proj-AbCdEf1234567890SECRETsecret"
BEARER = "Bearer abcdefghijklmnop1234"
HOSTILE_NAME = "run <img src=x onerror=alert(5)> <script>alert(9)<\\script>.json"


def hostile_results(folder: Path) -> Path:
    """A tau-bench results file with payloads and secrets in every field a report shows."""
    traj = [{"role": "system", "content": "policy " + PAYLOADS[2]}]
    for i, p in enumerate(PAYLOADS):
        traj.append({"role": "user", "content": f"<think>{p}</think> {p} {KEY}"})
        traj.append(
            {
                "role": "assistant",
                "content": f"<think>\nI will {p} Authorization: {BEARER}",
                "reasoning_content": f"reasoning {p} {KEY}",
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {
                            "name": f"lookup{p}",
                            "arguments": json.dumps({"q": p, "api_key": KEY}),
                        },
                    }
                ],
            }
        )
        traj.append({"role": "tool", "content": f"result {p}", "tool_call_id": f"c{i}"})
    records = [{"task_id": 7, "reward": 0.0, "info": {}, "traj": traj, "trial": 0}]
    path = folder / HOSTILE_NAME
    path.write_text(json.dumps(records, indent=2), encoding="utf-8")
    return path


def render_html(paths: list[Path]) -> tuple[str, dict, forensics.ScanResult]:
    result = forensics.scan([str(p) for p in paths])
    m = model.build(result, page=True)
    return html.render(m), m, result


class _Outline(HTMLParser):
    """Ids of sections, cause articles and fix items, in document order; script elements."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.causes: list[str] = []
        self.fixes: list[str] = []
        self.scripts: list[dict[str, str | None]] = []
        self.meta_csp: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "section":
            self.sections.append(a.get("id") or "")
        elif tag == "article" and "cause" in (a.get("class") or ""):
            self.causes.append(a.get("id") or "")
        elif tag == "li" and (a.get("id") or "").startswith("fix-"):
            self.fixes.append(a["id"] or "")
        elif tag == "script":
            self.scripts.append(a)
        elif tag == "meta" and a.get("http-equiv") == "Content-Security-Policy":
            self.meta_csp = a.get("content")


def _outline(page: str) -> _Outline:
    parser = _Outline()
    parser.feed(page)
    return parser


def _island(page: str) -> dict:
    data = _island_data(page)
    for t in data["trajectories"]:  # a count per rule it found, turn or episode findings alike
        assert len(t["rc"]) == len(t["rules"]) and sum(t["rc"]) == t["nf"]
    return data


def _island_data(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="explorer-data">(.*?)</script>', page, re.S)
    if m is None:  # a large scan's island: gzipped and base64'd (html.COMPRESS_ABOVE)
        m = re.search(
            r'<script type="application/octet-stream" id="explorer-data" '
            r'data-encoding="gzip\+base64">(.*?)</script>',
            page,
            re.S,
        )
        assert m, "no data island"
        index, turns = (gzip.decompress(base64.b64decode(p)).decode() for p in m.group(1).split())
        data = json.loads(index)
        lines = turns.split("\n")
        assert len(lines) == len(data["trajectories"])  # one line of turns per trajectory
        for t, line in zip(data["trajectories"], lines, strict=True):
            t["turns"] = json.loads(line)
            # The index's strip and counts are the turns' own.
            assert t.pop("nt") == len(t["turns"])
            assert t.pop("st").lower() == "".join(
                {"system": "s", "user": "u", "assistant": "a", "tool": "t"}.get(
                    data["ra"][u["a"]][0], "x"
                )
                for u in t["turns"]
            )
        return data
    return json.loads(m.group(1))


@pytest.fixture(scope="module")
def output2(output2_scan):
    m = model.build(output2_scan, page=True)
    return html.render(m), m, output2_scan


def test_sections_present_in_reading_order(output2):
    page, _, _ = output2
    assert _outline(page).sections == [
        "verdict",
        "causes",
        "fixes",
        "validation",
        "charts",
        "explorer",
        "coverage",
    ]


def test_verdict_names_primary_cause_share_and_reward_lost(output2):
    page, m, _ = output2
    verdict = re.search(r'<p class="verdict">(.*?)</p>', page, re.S).group(1)
    text = " ".join(re.sub(r"<[^>]+>", "", verdict).split())
    assert text.startswith(
        "Primary cause: Output truncated by the output-token limit before the model could answer."
    )
    assert "3 of 4 trajectories (75%) with 18 findings" in text
    assert "lost 3 of the 3 reward lost in this scan (100%)" in text
    assert "First fix: Raise the output-token limit (max_tokens) of the agent" in text
    assert "from 512 to at least 4,096 tokens" in text
    # Headline numbers and mean reward per variant and model.
    s = m["summary"]
    assert (s["trajectories"], s["turns"]) == (4, 82)
    for n, label in ((4, "trajectories"), (82, "turns"), (s["findings"], "findings in 3")):
        assert f'<span class="big">{n}</span><span>{label}' in page
    rows = re.findall(
        r"<tr><td>(\w+)</td><td>([^<]+)</td>.*?<td class=\"r\">([\d.]+)</td></tr>", page
    )
    assert ("control", "gpt-4.1-mini", "1.00") in rows
    assert ("frustrated", "Qwen/Qwen3-0.6B", "0.00") in rows


def test_causes_in_rank_order_with_evidence_linked_to_turns(output2):
    page, m, _ = output2
    outline = _outline(page)
    assert outline.causes == [f"cause-{n}" for n in range(1, len(m["causes"]) + 1)]
    titles = re.findall(r'<span class="rank">(\d+)</span>([^<]+)<', page)
    assert [(int(r), t.strip()) for r, t in titles] == [
        (c["rank"], c["title"]) for c in m["causes"]
    ]
    assert [c["rank"] for c in m["causes"]] == list(range(1, len(m["causes"]) + 1))
    assert titles[0][1].startswith("Output truncated")
    assert titles[1][1].startswith("Reasoning markup leaks")
    data = _island(page)
    by_k = {t["k"]: t for t in data["trajectories"]}
    cause1 = page[page.index('id="cause-1"') : page.index('id="cause-2"')]
    assert "Why rank 1:</b> touches 3 of 4 trajectories" in cause1
    links = re.findall(r'href="#turn-(\d+)-(\d+)"', cause1)
    assert 2 <= len(links) <= 3
    for k, i in links:
        turn = next(u for u in by_k[int(k)]["turns"] if u["i"] == int(i))
        # The linked turn carries the finding the evidence is about, with the markup marked.
        assert "unclosed-think" in [data["rules"][f[0]]["id"] for f in turn["f"]]
    assert "<mark>&lt;think&gt;</mark>" in cause1
    assert "think-loop</code> — conversation degenerates" in cause1  # explained downstream


def test_fixes_numbered_in_priority_order_with_parameters_from_the_data(output2):
    page, m, _ = output2
    assert _outline(page).fixes == [f"fix-{n}" for n in range(1, len(m["fix_plan"]) + 1)]
    shown = re.findall(r'<span class="fixn">(\d+)</span><strong>(.*?)</strong>', page)
    assert [int(n) for n, _ in shown] == list(range(1, len(shown) + 1))
    actions = [a for _, a in shown]
    assert actions[0] == "Raise the output-token limit (max_tokens) of the agent"
    assert actions[2] == "Serve the model with a reasoning parser: --reasoning-parser qwen3"
    assert "Give the user simulator its own endpoint" in actions[3]
    fixes = page[page.index('id="fixes"') : page.index('id="validation"')]
    assert "max_tokens=512" in fixes and "at least 4,096 tokens" in fixes
    assert "enable_thinking" in fixes
    assert "--tool-call-parser hermes (matches Qwen/Qwen3-0.6B)" in fixes
    assert "Keep as it is" in fixes


def test_validation_plan_names_tasks_and_rules_that_must_reach_zero(output2):
    page, m, _ = output2
    section = page[page.index('id="validation"') : page.index('id="charts"')]
    assert "--task-ids 27 12" in section
    rows = re.findall(r"<tr><td><code>([\w-]+)</code></td>.*?<td class=\"r\">(\d+)</td>", section)
    counts = m["summary"]["findings_by_rule"]
    assert rows == [(v["rule"], str(counts.get(v["rule"], 0))) for v in m["validation_checks"]]
    # Cause 1's own rules and the symptoms it explains first, then cause 2's.
    ranks = [v["cause_rank"] for v in m["validation_checks"]]
    assert ranks == sorted(ranks)
    assert rows[0] == ("unclosed-think", "18") and ("reasoning-leak", "21") in rows
    # A rule that could not run is not a pass: the plan says so next to its 0.
    # One file, and it ran on none of it: not "on some input".
    assert (
        "not checked on any input (no finish_reason or output_tokens): its 0 proves nothing"
        in section
    )


def test_charts_are_inline_svg_and_the_cap_shows_as_a_wall(output2):
    page, _, _ = output2
    section = page[page.index('id="charts"') : page.index('id="explorer"')]
    assert section.count("<svg ") == 8  # each chart drawn wide and narrow (for a phone)
    assert re.findall(r'<figure id="chart-([\w-]+)">', section) == [
        "lengths",
        "per-rule",
        "per-variant",
        "timeline",
    ]
    assert "agent · Qwen/Qwen3-0.6B: 18 of 18 turns end at or near their cap" in section
    assert "the wall" in section
    assert 'class="cap"' in section  # the dashed cap line
    # Rules that found nothing are named, and those that could not run are told apart.
    caption = re.search(r'id="chart-per-rule">.*?<figcaption>(.*?)</figcaption>', section, re.S)
    assert re.search(r"their 0 is not a pass: .*\bmax-tokens\b", caption.group(1))
    assert not re.search(r"(href|src)=\"(?!#)", section)  # links only within the page


def test_coverage_files_rules_not_checked_and_rejects(tmp_path):
    page, _, _ = render_html(
        [SAMPLES / "output2.txt", SAMPLES / "tau_bench_results_truncated.json"]
    )
    section = page[page.index('id="coverage"') :]
    assert "tau_bench_log" in section and "tau_bench_results" in section
    # Each rule once, under the data it lacked, with the files that lacked it.
    table = section[section.index('id="not-checked-table"') :]
    table = table[: table.index("</table>")]
    assert table.count("<code>max-tokens</code>") == 1
    row = next(r for r in table.split("<tr>") if "<code>max-tokens</code>" in r)
    missing, _rules, files = re.findall(r"<td[^>]*>(.*?)</td>", row)
    assert "<code>finish_reason</code>" in missing
    # the checkpoint's two episodes are the log's: fused into it, they are checked there
    assert "output2.txt" in files and "tau_bench_results_truncated.json" not in files
    assert "retry-storm" not in table  # request hashes: only API captures record them
    assert re.search(r"tau_bench_results_truncated.json:346</td><td>truncated file", section)


def test_explorer_data_holds_every_trajectory_and_turn(output2):
    page, _, result = output2
    data = _island(page)
    assert len(data["trajectories"]) == result.trajectories.height
    assert sum(len(t["turns"]) for t in data["trajectories"]) == result.turns.height
    assert [t["nf"] for t in data["trajectories"]] == sorted(
        (t["nf"] for t in data["trajectories"]), reverse=True
    )
    t = data["trajectories"][0]
    # A turn names its file and line only where they differ from its episode's.
    assert data["paths"][t["turns"][1].get("p", t["p"])].endswith("output2.txt")
    assert all(isinstance(u.get("l", t["l"]), int) for u in t["turns"])
    assert len({u["l"] for u in t["turns"] if "l" in u}) > 1  # a console log: a line per turn
    assert all(data["ra"][u["a"]][0] in ("system", "user", "assistant", "tool") for u in t["turns"])
    # The static page has no trajectory cards: the script renders one page of them.
    assert 'class="traj"' not in page


def test_csp_allows_only_the_hashed_inline_script_and_nothing_remote(output2):
    page, _, _ = output2
    outline = _outline(page)
    csp = outline.meta_csp
    assert csp is not None and "default-src 'none'" in csp
    script = re.search(r"<script>(.*?)</script>", page, re.S).group(1)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp
    assert "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
    assert "unsafe-eval" not in csp
    assert outline.scripts == [{"type": "application/json", "id": "explorer-data"}, {}]
    assert not re.search(r"""(src|href|action)\s*=\s*["']?\s*(https?:)?//""", page)
    assert "@import" not in page and "url(" not in page


def _handler_attributes(page: str) -> list[tuple[str, str]]:
    """(tag, attribute) of every on* attribute the browser would see: escaped text inside an
    attribute value (a file name in an aria-label) is text, not a handler."""
    from html.parser import HTMLParser

    found: list[tuple[str, str]] = []

    class Handlers(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.extend((tag, name) for name, _ in attrs if name.lower().startswith("on"))

    Handlers().feed(page)
    return found


def test_payloads_escaped_in_content_reasoning_tool_calls_and_file_names(tmp_path):
    page, _m, _ = render_html([hostile_results(tmp_path)])
    for p in PAYLOADS:
        assert p not in page
    assert "onerror=alert(5)>" not in page  # from the file name
    assert _handler_attributes(page) == []  # no element carries an event handler
    assert page.lower().count("<script") == 2  # the data island and the explorer
    assert page.count("</script>") == 2
    assert "&lt;img src=x onerror=alert(5)&gt;" in page  # the file name, shown as text
    # The data island gives the exact text back to the script, and nothing else.
    data = _island(page)
    turns = data["trajectories"][0]["turns"]
    assert any(PAYLOADS[3] in (u.get("c") or {}).get("t", "") for u in turns)
    assert any(PAYLOADS[3] in (u.get("r") or {}).get("t", "") for u in turns)
    assert any(PAYLOADS[3] in c[0] + c[1] for u in turns for c in u.get("tc", []))
    assert any("<script>alert(9)" in p for p in data["paths"])


def test_secrets_redacted_in_the_page(tmp_path):
    page, _, _ = render_html([hostile_results(tmp_path)])
    assert "SECRETsecret" not in page
    assert "abcdefghijklmnop1234" not in page
    assert "***REDACTED-" in page


def test_same_input_same_bytes(tmp_path):
    a, _, _ = render_html([SAMPLES / "output2.txt", SAMPLES / "tau_bench_results_truncated.json"])
    b, _, _ = render_html([SAMPLES / "output2.txt", SAMPLES / "tau_bench_results_truncated.json"])
    assert a == b


def many_trajectories(folder: Path, n: int) -> Path:
    """n short tau-bench trajectories; every third agent turn is cut off inside <think>."""
    records = []
    for i in range(n):
        cut = i % 3 == 0
        agent = "<think>\n" + "Let me think about the order. " * 60 if cut else "Done."
        records.append(
            {
                "task_id": i,
                "trial": 0,
                "reward": 0.0 if cut else 1.0,
                "info": {},
                "traj": [
                    {"role": "system", "content": "You are a retail agent. " * 200},
                    {"role": "user", "content": f"Please return order #{i}."},
                    {"role": "assistant", "content": agent},
                    {"role": "user", "content": "Thanks."},
                ],
            }
        )
    path = folder / "many.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """The page of a scan of 3,000 trajectories (one scan for the tests of its size)."""
    return render_html([many_trajectories(tmp_path_factory.mktemp("many"), 3000)])


def test_thousands_of_trajectories_stay_one_light_page(many):
    page, _m, _ = many
    data = _island(page)
    assert len(data["trajectories"]) == 3000
    # The system prompt, identical in every trajectory, is stored once.
    assert len(data["strings"]) == 1
    timeline = page[page.index('id="chart-timeline"') :]
    assert timeline.count('href="#traj-') == 2 * 40  # the top rows only, wide and narrow
    assert 'class="traj"' not in page
    # 3,000 copies of the 4,800-char system prompt alone would weigh 14 MB.
    assert len(page) < 6_000_000


def test_a_large_scans_island_is_gzipped_the_same_data_the_same_bytes(many, output2):
    page, m, _ = many
    assert 'data-encoding="gzip+base64"' in page  # above html.COMPRESS_ABOVE
    plain = html.render(m, compress_above=10**12)
    assert _island(page) == _island(plain)
    assert html.render(m) == page  # no timestamp in the gzip stream: same scan, same bytes
    assert len(page) < len(plain) / 3
    # A small scan keeps the readable JSON island.
    small, _, _ = output2
    assert '<script type="application/json" id="explorer-data">' in small


def test_the_text_budget_shrinks_per_turn_as_the_scan_grows():
    small = model._turn_limits(1_000, 50)
    assert small == (model.TURN_CHARS, model.TURN_CHARS)
    plain, flagged = model._turn_limits(630_000, 10_000)  # 20,000 tau-bench trajectories
    assert plain == model.MIN_TURN_CHARS and flagged > 20 * plain
    assert flagged * 10_000 <= model.DATA_BUDGET_CHARS // 2
    mid_plain, mid_flagged = model._turn_limits(60_000, 2_000)
    assert model.MIN_TURN_CHARS < mid_plain < model.TURN_CHARS
    assert mid_flagged == model.FLAGGED_TURN_CHARS
    total = mid_plain * 58_000 + mid_flagged * 2_000
    assert total <= model.DATA_BUDGET_CHARS
