"""Outputs that log text can not subvert: the terminal, GitHub annotations, Markdown, --json.

Hostile text is planted in every log-derived slot of a real report model (paths, messages,
titles, fixes, evidence, notes, rejects, skipped entries) and each renderer's output is checked
against an oracle written here, independently of forensics/report/render/safe.py: what a terminal
would obey, what the GitHub Actions runner would parse as a command (a port of its
ActionCommand.TryParseV2 / TryParse), what a Markdown viewer would turn into links or blocks.
"""

from __future__ import annotations

import copy
import functools
import html
import json
import math
import re
import shutil
import unicodedata
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

import forensics
from forensics.cli import cli
from forensics.report import model as report
from forensics.report.render import github, jsonout, markdown, safe, text
from forensics.report.render.paths import display

from conftest import SAMPLES

# ---------------------------------------------------------------- oracles

# What must never reach a terminal raw: C0 (a newline only as the renderer's own line break),
# DEL, C1, bidi embeddings/overrides/isolates/marks, Unicode line separators, lone surrogates.
RAW_CONTROL = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    "\ud800-\udfff]"
)
# .NET's char.IsWhiteSpace, which the runner's TrimStart() strips, plus the zero-width
# characters some runtimes counted as whitespace.
DOTNET_BLANK = {
    chr(c)
    for c in range(0x10000)
    if unicodedata.category(chr(c)) in ("Zs", "Zl", "Zp")
    or chr(c) in "\t\n\v\f\r\x85\xa0\u180e\u200b\ufeff"
}
COMMANDS = {"error", "warning", "notice"}


def runner_command(line: str) -> bool:
    """Would the GitHub Actions runner take this line as a workflow command (any name)?"""
    i = 0
    while i < len(line) and line[i] in DOTNET_BLANK:
        i += 1
    v2 = line.startswith("::", i) and line.find("::", i + 2) >= 0
    return v2 or "##[" in line  # the legacy form is matched anywhere in the line


def runner_parse(line: str) -> tuple[str, dict[str, str], str]:
    """The runner's TryParseV2 of one annotation line: command, properties, data."""
    assert line.startswith("::")
    end = line.index("::", 2)
    info = line[2:end]
    name, _, props_text = info.partition(" ")
    props = {}
    for part in filter(None, props_text.strip().split(",")):
        key, sep, value = part.partition("=")
        if sep and key and value:
            for token, char in (
                ("%0D", "\r"),
                ("%0A", "\n"),
                ("%3A", ":"),
                ("%2C", ","),
                ("%25", "%"),
            ):
                value = value.replace(token, char)
            props[key] = value
    data = line[end + 2 :]
    for token, char in (("%0D", "\r"), ("%0A", "\n"), ("%25", "%")):
        data = data.replace(token, char)
    return name, props, data


def md_html(source: str) -> str:
    """CommonMark with GitHub's tables and strike-through, raw HTML on (as the other tests)."""
    return MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(source)


def md_linkified(source: str) -> str | None:
    """The same with linkify (GitHub links bare URLs and e-mail addresses), if installed."""
    try:
        import linkify_it  # noqa: F401
    except ImportError:
        return None
    md = MarkdownIt("gfm-like")  # commonmark + tables + strike-through + linkify
    md.linkify.set({"fuzzy_link": False})  # GitHub does not link a bare "example.com"
    return md.render(source)


# GitHub's extended autolinks (GFM spec), and mentions, as they would appear in text nodes.
GFM_AUTOLINK = re.compile(r"(?i)(?:https?|ftp)://|www\.|[\w.+-]@[\w-]+\.[\w-]|mailto:|xmpp:")
MENTION = re.compile(r"(?<![\w`])@[A-Za-z0-9]")


def text_outside_code(page: str) -> str:
    page = re.sub(r"<pre>.*?</pre>|<code>.*?</code>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


# ---------------------------------------------------------------- hostile text

TERMINAL_BITS = [
    "\n",
    "\r",
    "\r\n",
    "::",
    "::error::pwned",
    "::add-mask::x",
    "::stop-commands::tok",
    "##[",
    "##[set-output name=x]y",
    "##[error]x",
    " ",
    "\t",
    "\u3000",
    "\xa0",
    "\u200b",
    "\ufeff",
    "\x1b[31m",
    "\x1b[2J",
    "\x1b]8;;http://evil.example\x07",
    "\x1b]52;c;cHduZWQ=\x07",
    "\x1bP",
    "\x9b",
    "\x85",
    "\x00",
    "\x7f",
    "\x08",
    "\v",
    "\f",
    "\u2028",
    "\u2029",
    "\u202e",
    "\u2066",
    "\u200f",
    "\u061c",
    "\ud800",
    "%0A",
    "%25",
    "%3A",
    ",",
    ":",
    "=",
    "\\",
    "x",
    "error",
]
MARKDOWN_BITS = [
    "http://evil.example/x",
    "https://evil.example",
    "HTTPS://EVIL.EXAMPLE",
    "ftp://evil.example",
    "www.evil.example",
    "//evil.example/x",
    "mia@evil.example",
    "mailto:mia@evil.example",
    "@octocat",
    "(",
    ")",
    "[x](javascript:alert(1))",
    "![p](http://evil.example/p.png)",
    "<img src=x onerror=alert(1)>",
    "<http://evil.example>",
    "&#60;b&#62;",
    "# ",
    "## ",
    "- ",
    "+ ",
    "1. ",
    "2) ",
    "> ",
    "---",
    "===",
    "***",
    "___",
    "| a | b |",
    "|---|---|",
    "`",
    "``",
    "```",
    "~~~",
    "*",
    "_",
    "~~",
    "$x$",
    "\\",
    "[^1]: ",
    ". ",
    " ",
    "\n",
    "x",
]


def _joined(bits: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(bits), min_size=1, max_size=8).map("".join)


TERMINAL_TEXT = st.one_of(_joined(TERMINAL_BITS), st.text(min_size=1, max_size=20))
# Not blank: an empty title or fix leaves an empty list item or `****`, layout but no markup.
MARKDOWN_TEXT = st.one_of(_joined(MARKDOWN_BITS), _joined(MARKDOWN_BITS + TERMINAL_BITS)).filter(
    str.strip
)
PROPERTY = settings(derandomize=True, max_examples=200, deadline=None)


@functools.cache
def _output2_model() -> dict[str, Any]:
    return report.build(forensics.scan([str(SAMPLES / "output2.txt")]))


def poisoned(value: str) -> dict[str, Any]:
    """The output2 model with `value` in every slot whose text comes from a log."""
    m = copy.deepcopy(_output2_model())
    m["findings"] = list(m["findings"])  # made as read (FindingRows): a list to poison
    m["verdict"] = value
    m["primary"]["title"] = value
    for c in m["causes"]:
        c["title"] = c["why_ranked"] = value
        for fix in c["fixes"]:
            fix["action"] = fix["detail"] = value
    for f in m["fix_plan"]:
        f["action"] = f["detail"] = value
    for p in m["parameters"]:
        p["value"] = value
    for f in m["findings"]:
        f["message"] = f["trajectory_id"] = f["evidence"] = value
        f["source"]["path"] = value
        f["task_id"] = f["actor"] = value
    for turn in m["turn_text"].values():  # the turns the causes quote
        turn["turn_head"] = value
    m["keep"] = [value, value]
    m["validation"] = [value, value]
    m["summary"]["findings_by_rule"] = {value: 3, **m["summary"]["findings_by_rule"]}
    for v in m["summary"]["by_variant"]:
        v["variant"] = v["agent_model"] = value
    m["not_checked"] = [{"path": value, "rule": value, "missing": [value]}]
    m["files"] = [
        {"path": value, "format": value, "detected_because": value, "records": 1, "note": value}
    ] * 2
    m["skipped"] = [{"path": value, "reason": value}]
    m["rejects"] = [
        {"path": value, "line": 3, "reason": value, "excerpt": value},
        {"path": value, "line": None, "reason": value, "excerpt": value},
    ]
    return m


# ---------------------------------------------------------------- safe.py itself


@PROPERTY
@given(st.text())
def test_visible_leaves_nothing_raw_and_ordinary_text_alone(s):
    out = safe.visible(s)
    assert not RAW_CONTROL.search(out) and "\n" not in out
    if not RAW_CONTROL.search(s) and "\n" not in s:
        assert out == s


def test_visible_spells_escapes_as_python_does():
    assert safe.visible("a\x1b[31mb") == "a\\x1b[31mb"
    assert safe.visible("\x00\x7f\x9b\x85") == "\\x00\\x7f\\x9b\\x85"
    assert safe.visible("x\n::error::y\r\t") == "x\\n::error::y\\r\\t"
    assert safe.visible("\u202eevil\u2066\u200e\u061c") == "\\u202eevil\\u2066\\u200e\\u061c"
    assert safe.visible("\u2028\ud800") == "\\u2028\\ud800"
    assert safe.visible(None) == "None" and safe.visible(7) == "7"
    assert safe.visible("a\nb", keep="\n") == "a\nb"


@PROPERTY
@given(TERMINAL_TEXT)
def test_guarded_line_is_never_a_workflow_command(s):
    out = safe.one_line(s)
    assert "\n" not in out and "\r" not in out
    assert not runner_command(out)


def test_guard_reads_the_same_and_touches_nothing_else():
    assert safe.guard_line("::error::x") == "\\::error::x"
    assert safe.guard_line("   \u3000::warning::x") == "   \u3000\\::warning::x"
    assert safe.guard_line("see ##[add-mask]secret") == "see ##\\[add-mask]secret"
    for ordinary in ("forensics: 1 file(s)", "   e.g. a.txt:3  rule: x::y", "a :: b", ""):
        assert safe.guard_line(ordinary) == ordinary


# ---------------------------------------------------------------- the terminal


def _no_raw_and_no_command(out: str) -> None:
    assert not RAW_CONTROL.search(out)
    for line in out.splitlines():
        assert not runner_command(line), line


@PROPERTY
@given(TERMINAL_TEXT)
def test_terminal_summary_escapes_every_value_and_adds_no_line(value):
    out = text.render(poisoned(value), "out/" + value)
    _no_raw_and_no_command(out)
    # Log text can not start a line: the layout is the same whatever the values hold.
    assert out.count("\n") == text.render(poisoned("x"), "out/x").count("\n")


@PROPERTY
@given(TERMINAL_TEXT)
def test_explain_formats_and_gate_lines_escape_file_names_and_ids(value):
    m = poisoned(value)
    out = text.explain_formats(m)
    _no_raw_and_no_command(out)
    assert out.count("\n") == 2 * 2 + 1  # two files with a note each, one skipped entry
    gate = [f"gate: FAIL — 1 finding at or above info ({value} 1)", f"  fixed: r in {value}"]
    out = text.gate_lines(gate)
    _no_raw_and_no_command(out)
    assert out.count("\n") == 2


def test_terminal_shows_the_escapes():
    out = text.render(poisoned("a\x1b[31mb\u202ec\n::error::pwned"), None)
    assert "a\\x1b[31mb\\u202ec\\n::error::pwned" in out
    out = text.render(poisoned("::error::pwned"), None)
    assert "\n          \\::error::pwned\n" in out  # a fix detail: the guard keeps the indent


def test_ordinary_summary_has_no_escapes():
    out = text.render(_output2_model(), "forensics-report/report.html")
    assert "\\x" not in out and "\\u" not in out and "\\::" not in out


# ---------------------------------------------------------------- GitHub annotations


def _annotated(value: str, line: int | None = 7) -> dict[str, Any]:
    finding = {
        "id": "a",
        "rule": "r",
        "severity": "high",
        "task_id": value,
        "trajectory_id": value,
        "turn_index": 2,
        "message": value,
        "source": {"path": value, "line": line},
    }
    reject = {"path": value, "line": line, "reason": value, "excerpt": value}
    return {"findings": [finding, {**finding, "id": "b", "task_id": None}], "rejects": [reject]}


@PROPERTY
@given(TERMINAL_TEXT)
def test_annotations_parse_back_to_exactly_the_escaped_values(value):
    base = Path.cwd()
    out = github.render(_annotated(value), base)
    lines = out.split("\n")
    assert lines.pop() == ""
    assert len(lines) == 3  # one command per finding and reject, whatever the text holds
    assert not RAW_CONTROL.search(out)
    path = safe.visible(display(value, base), keep="\r\n")
    expected = [
        ("error", f"{value} [task {value}, turn 2]"),
        ("error", f"{value} [{value}, turn 2]"),
        ("warning", value),
    ]
    for line, (command, message) in zip(lines, expected, strict=True):
        name, props, data = runner_parse(line)
        assert name == command
        assert props["file"] == path and props["line"] == "7"
        assert data == safe.visible(message, keep="\r\n")


def test_annotation_escapes_follow_githubs_rules():
    out = github.render(_annotated("50% a,b:c\r\nd"), Path.cwd()).splitlines()
    assert out[0].startswith(
        "::error file=50%25 a%2Cb%3Ac%0D%0Ad,line=7,title=forensics r (high)::"
    )
    assert out[0].endswith("::50%25 a,b:c%0D%0Ad [task 50%25 a,b:c%0D%0Ad, turn 2]")


# ---------------------------------------------------------------- Markdown


def _skeleton(page: str) -> list[str]:
    """The page's element structure without inline code (link-like words become code)."""
    page = re.sub(r"<code>.*?</code>", "", page, flags=re.S)
    return re.findall(r"</?([a-z0-9]+)", page)


@PROPERTY
@given(MARKDOWN_TEXT)
def test_markdown_log_text_makes_no_link_markup_or_block(value):
    source = markdown.render(poisoned(value))
    page = md_html(source)
    # Nothing but the layout of an ordinary report: no heading, list, quote, rule, table,
    # emphasis, image, link or HTML of the log's making.
    assert _skeleton(page) == _skeleton(md_html(markdown.render(poisoned("x"))))
    plain = text_outside_code(page)
    assert not GFM_AUTOLINK.search(plain), plain
    assert not MENTION.search(plain)
    linked = md_linkified(source)
    if linked is not None:
        assert "<a " not in linked


def test_urls_from_logs_are_code_not_links():
    m = copy.deepcopy(_output2_model())
    m["fix_plan"][0]["detail"] = (
        "see (http://evil.example/x), mail mia@evil.example or www.evil.example."
    )
    source = markdown.render(m)
    assert "see (`http://evil.example/x`), mail `mia@evil.example` or `www.evil.example`." in source
    assert "<a " not in md_html(source)


def test_block_markers_at_the_start_of_a_value_are_escaped():
    m = copy.deepcopy(_output2_model())
    m["validation"] = ["# heading", "- item", "1. item", "---"]
    m["keep"] = ["> quote", "--flag stays"]
    source = markdown.render(m)
    for escaped in ("1. \\# heading", "2. \\- item", "3. 1\\. item", "4. \\---", "- --flag stays"):
        assert escaped in source.splitlines(), escaped
    page = md_html(source)
    assert page.count("<h1>") == 1 and "<blockquote>" not in page and "<hr" not in page


# ---------------------------------------------------------------- --json


def _reject_constant(name: str) -> None:
    raise ValueError(f"non-standard JSON constant {name}")


def test_json_nulls_non_finite_numbers_and_says_where():
    m = copy.deepcopy(_output2_model())
    m["summary"]["mean_reward"] = math.nan
    m["summary"]["by_variant"][0]["mean_reward"] = math.inf
    m["causes"][0]["reward_lost"] = -math.inf
    m["page"] = {"explorer": "left out"}
    out = jsonout.render(m)
    doc = json.loads(out, parse_constant=_reject_constant)
    assert doc["summary"]["mean_reward"] is None
    assert doc["summary"]["by_variant"][0]["mean_reward"] is None
    assert doc["notes"] == [
        "causes[0].reward_lost: -Infinity written as null",
        "summary.by_variant[0].mean_reward: Infinity written as null",
        "summary.mean_reward: NaN written as null",
    ]
    assert "page" not in doc
    assert jsonout.render(m) == out


def test_json_of_an_ordinary_model_is_plain_json_dumps():
    m = _output2_model()
    m["findings"] = list(m["findings"])  # made as read (FindingRows): json.dumps takes a list
    written = {k: v for k, v in m.items() if k != "turn_text"}  # only with --json-text
    assert jsonout.render(m) == json.dumps(written, indent=2, ensure_ascii=False) + "\n"
    assert jsonout.render(m, turn_text=True) == json.dumps(m, indent=2, ensure_ascii=False) + "\n"


JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=25,
)


def _non_finite(value: Any) -> int:
    if isinstance(value, float):
        return 0 if math.isfinite(value) else 1
    if isinstance(value, dict):
        return sum(_non_finite(v) for v in value.values())
    if isinstance(value, list):
        return sum(_non_finite(v) for v in value)
    return 0


@PROPERTY
@given(JSON_VALUES)
def test_json_is_strict_whatever_the_numbers(value):
    m = {"summary": value, "findings": [value]}
    out = jsonout.render(m)
    doc = json.loads(out, parse_constant=_reject_constant)
    nulled = _non_finite(m)
    assert len(doc.get("notes", [])) == nulled
    assert doc.get("notes", []) == sorted(doc.get("notes", []))
    if not nulled:
        assert out == json.dumps(m, indent=2, ensure_ascii=False) + "\n"


def test_json_writes_a_lone_surrogate_as_an_escape():
    out = jsonout.render({"files": [{"path": "run-\udcff.log"}]})
    out.encode("utf-8")  # would raise on a raw surrogate
    assert json.loads(out)["files"][0]["path"] == "run-\udcff.log"


# ---------------------------------------------------------------- end to end


def test_scan_of_a_hostile_file_name_keeps_stdout_and_markdown_clean(tmp_path, monkeypatch):
    name = "::error::pwned \x1b[2J\u202e ##[add-mask]x\n::warning::injected www.evil.example.log"
    log = tmp_path / name
    shutil.copy(SAMPLES / "output2.txt", log)
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(
        cli,
        ["scan", name, "--no-report", "--github", "--explain-formats", "--md", "r.md"],
        catch_exceptions=False,
    )
    assert res.exit_code == 1, res.output
    assert not RAW_CONTROL.search(res.output)
    annotations = [line for line in res.output.splitlines() if line.startswith("::")]
    assert len(annotations) == 47  # output2's findings: one annotation each, nothing injected
    for line in res.output.splitlines():
        if line in annotations:
            command, props, _ = runner_parse(line)
            assert command in COMMANDS and props["file"] == safe.visible(name, keep="\n")
        else:
            assert not runner_command(line), line
    source = (tmp_path / "r.md").read_text()
    assert "<a " not in md_html(source)
    assert not GFM_AUTOLINK.search(text_outside_code(md_html(source)))
