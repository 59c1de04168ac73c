"""The Markdown summary: structure for an issue or PR, and nothing a viewer would execute or fetch.

The Markdown is rendered with a CommonMark parser (raw HTML on, as GitHub parses it before it
sanitises) so the tests see what a reader's viewer would build from it.
"""

from __future__ import annotations

import copy
import re

import pytest
from markdown_it import MarkdownIt
from test_report_html import KEY, PAYLOADS, hostile_results

import forensics
from forensics.report import model
from forensics.report.render import markdown

from conftest import SAMPLES

HOSTILE_INLINE = [
    *PAYLOADS,
    "[click](http://evil.example/x)",
    "![pixel](http://evil.example/p.png)",
    "<http://evil.example/auto>",
    "**bold** _em_ ~~gone~~",
    "ping @octocat",
    "`code` ``` fence",
]


def _html(text: str) -> str:
    return MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(text)


@pytest.fixture(scope="module")
def output2_model(output2_scan):
    return model.build(output2_scan)


def test_sections_in_order_causes_ranked_fixes_numbered(output2_model):
    m = output2_model
    text = markdown.render(m)
    headings = re.findall(r"^(#{1,3}) (.+)$", text, re.M)
    top = [h for level, h in headings if level in ("#", "##")]
    assert top == [
        "forensics: Output truncated by the output-token limit before the model could answer",
        "Is this score about the model?",
        "Causes, ranked",
        "Fixes, in priority order",
        "Validation plan",
    ]
    causes = [h for level, h in headings if level == "###"]
    assert causes == [f"{c['rank']}. {c['title']}" for c in m["causes"]]
    assert causes[0].startswith("1. Output truncated") and causes[1].startswith("2. Reasoning")
    fixes = text[text.index("## Fixes") : text.index("## Validation plan")]
    numbered = re.findall(r"^(\d+)\. \*\*(.+?)\*\* \(cause (\d+)\)", fixes, re.M)
    assert [int(n) for n, _, _ in numbered] == list(range(1, len(m["fix_plan"]) + 1))
    assert [int(c) for _, _, c in numbered] == sorted(int(c) for _, _, c in numbered)
    # An underscore inside a word can not start emphasis: it stays readable, unescaped.
    assert numbered[0][1] == "Raise the output-token limit (max_tokens) of the agent"


def test_verdict_fixes_parameters_and_validation_carry_the_numbers(output2_model):
    text = markdown.render(output2_model)
    verdict = text.split("\n\n")[1]
    assert verdict.startswith("**Primary cause: Output truncated")
    assert "3 of 4 trajectories (75%)" in verdict
    assert "| output cap observed (max_tokens) | `512 tokens` | 1 |" in text
    assert "| recommended output cap | `at least 4,096 tokens` | 1 |" in text
    assert "`--reasoning-parser qwen3`" in text
    assert "`--tool-call-parser hermes (matches Qwen/Qwen3-0.6B)`" in text
    assert "**Keep as it is**" in text
    assert "--task-ids 27 12" in text
    checks = re.findall(r"^- \[ \] `([\w-]+)`: (\d+) → 0", text, re.M)
    counts = output2_model["summary"]["findings_by_rule"]
    assert checks == [
        (v["rule"], str(counts.get(v["rule"], 0))) for v in output2_model["validation_checks"]
    ]
    # Evidence: file and line, then the excerpt in a code block with the opening <think>.
    assert re.search(r"^- `[^`]*sample_logs/output2.txt:120` — task 12, turn 2", text, re.M)
    assert "  ```text\n  <think>\n  Okay, the user wants to return" in text


def test_renders_as_intended_markdown(output2_model):
    page = _html(markdown.render(output2_model))
    assert page.count("<h3>") == len(output2_model["causes"])
    assert page.count("<table>") == 5  # headline, per variant, per run, score split, parameters
    assert "<ol>" in page and 'type="checkbox"' not in page  # task lists stay plain text
    assert "<code>vllm serve Qwen/Qwen3-0.6B" in page


def test_untrusted_text_can_not_become_html_links_images_or_mentions(output2_model):
    m = copy.deepcopy(output2_model)
    m["findings"] = list(m["findings"])  # made as read (FindingRows): a list to edit
    hostile = " ".join(HOSTILE_INLINE)
    m["causes"][0]["title"] = hostile
    m["causes"][0]["why_ranked"] = hostile
    quoted = next(f for f in m["findings"] if f["id"] == m["causes"][0]["evidence"][0])
    quoted["message"] = hostile
    quoted["evidence"] = "\n".join([*HOSTILE_INLINE, "```", "````"])
    m["fix_plan"][0]["detail"] = hostile
    m["keep"] = [hostile]
    m["validation"] = [hostile]
    m["parameters"][0]["value"] = hostile
    page = _html(markdown.render(m))
    for tag in ("<script", "<img", "<a ", "<textarea", "<b>", "<strong>bold", "<em>em", "<del>"):
        assert tag not in page, tag
    # Outside code, a zero-width space after @ keeps GitHub from mentioning anyone.
    assert "@octocat" not in re.sub(r"<pre>.*?</pre>|<code>.*?</code>", "", page, flags=re.S)
    # The excerpt with fences inside stays one code block: nothing after it turned into code.
    block = re.search(r"<pre><code class=\"language-text\">(.*?)</code></pre>", page, re.S)
    assert block and "````" in block.group(1) and "[click](http://evil.example/x)" in block.group(1)


def test_hostile_scan_is_escaped_and_secrets_redacted(tmp_path):
    m = model.build(forensics.scan([str(hostile_results(tmp_path))]))
    text = markdown.render(m)
    assert "SECRETsecret" not in text and KEY not in text
    assert "abcdefghijklmnop1234" not in text
    page = _html(text)
    for tag in ("<script", "<img", "<textarea", "<a "):
        assert tag not in page


def test_same_input_same_bytes(output2_scan):
    a = markdown.render(model.build(output2_scan))  # the session's scan, and a second one
    b = markdown.render(model.build(forensics.scan([str(SAMPLES / "output2.txt")])))
    assert a == b
