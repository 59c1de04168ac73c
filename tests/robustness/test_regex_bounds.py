"""No regex hangs on crafted text: every module-level pattern of forensics, fed megabyte inputs.

A backtracking regex (`re`) costs time quadratic in a line whose every position starts a match
that fails late (`<think>` repeated without a closer: 112 s for 176 KB of capture history).
Patterns applied to text read from input files run on RE2 (forensics.linear); the ones left on
`re` are listed in RE_PATTERNS with why. Both kinds get the same attack, because a run of
matches (`finditer`, `sub`) is not linear under RE2 either when a failed start outlives the
next match: each pattern is fed texts built from its own prefixes (crafted.py), screened small,
and the slowest repeated to a megabyte under a time limit.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from crafted import build, shapes

import forensics
from forensics import linear, markers

MB = 1 << 20
LIMIT = 2.0  # seconds of CPU for a megabyte, where a quadratic pattern takes minutes

# Every module-level `re` pattern, and why it may stay on `re`: each is attacked all the same.
RE_PATTERNS: dict[str, str] = {
    "forensics.check.fingerprint._TRIAL": "a run id's tail, anchored at its end",
    "forensics.check.markupcalls._TRAILER": "fullmatch of a reasoning tail's last characters",
    "forensics.check.params.PLACEHOLDER": "rule SQL, not log text",
    "forensics.check.rulefile._AT": "msgspec's error text about a rule file",
    "forensics.check.rulefile._FIELD": "msgspec's error text about a rule file",
    "forensics.check.rulefile._STEP": "msgspec's error path about a rule file",
    "forensics.check.textcalls.GATE": "one search per text; its line starts are [ \\t]* only",
    "forensics.check.textcalls._ACTION": "anchored at line starts, literal label",
    "forensics.check.textcalls._ACTION_INPUT": "anchored at line starts, literal label",
    "forensics.check.textcalls._BETWEEN_CALLS": "split of a Llama payload at `};{`",
    "forensics.check.textcalls._FENCE": "possessive blanks; RE2's binding costs 15 µs a fence",
    "forensics.check.textcalls._LLAMA_END": "literal end tokens",
    "forensics.check.textcalls._MISTRAL": "literal marker, then bounded lookahead",
    "forensics.check.textcalls._NEXT_LABEL": "anchored at line starts, literal labels",
    "forensics.check.textcalls._PYTHON_TAG": "literal marker",
    "forensics.config._AT": "msgspec's error text about the configuration",
    "forensics.diagnosis.causes.MACRO_NAME": "names in cause files",
    "forensics.diagnosis.causes.PARAM_NAME": "names in cause files",
    "forensics.distributed._URL": "a command-line path",
    "forensics.ingest.api.gemini._MODEL_IN_URL": "literal `/models/`, then one class",
    "forensics.ingest.api.generate_api._CHATML": "lookahead for the next turn (RE2 has none)",
    "forensics.ingest.api.generate_api._LLAMA3": "literal markers, lazy body to the next one",
    "forensics.ingest.api.sse._LINE_END": "line breaks",
    "forensics.ingest.companions._MARKERS": "literal quoted keys",
    "forensics.ingest.formats.atropos._CHATML": "lookahead for the next turn (RE2 has none)",
    "forensics.ingest.formats.atropos._LLAMA3": "lookahead for the next turn (RE2 has none)",
    "forensics.ingest.formats.atropos._TOKENS_HEAD": "anchored at the head's start",
    "forensics.ingest.formats.cassette._BASE64": "fullmatch of one body",
    "forensics.ingest.formats.cassette._YAML_KEY": "anchored at line starts, literal keys",
    "forensics.ingest.formats.cassette._YAML_LIST": "anchored at line starts, literal keys",
    "forensics.ingest.formats.claude_code._OUTPUT_CAP": "literal phrase",
    "forensics.ingest.formats.claude_code._STATUS": "literal phrase, three digits",
    "forensics.ingest.formats.harbor._CONT": "a file name",
    "forensics.ingest.formats.openhands._EVENT_NAME": "a file name",
    "forensics.ingest.formats.openhands._HISTORY": "literal key",
    "forensics.ingest.formats.sharegpt._CALL": "each <tool_call> matches, to its closer or the end",
    "forensics.ingest.formats.sharegpt._NAME": "literal key, then one class",
    "forensics.ingest.formats.sharegpt._THINK": "anchored at the text's start",
    "forensics.ingest.formats.swe_agent._MINI": "literal keys",
    "forensics.ingest.formats.swe_agent._STEP": "literal keys",
    "forensics.ingest.formats.tau_log._CHECKPOINT": "literal phrase, one class",
    "forensics.ingest.formats.tau_log._ENDPOINT": "literal words, one class",
    "forensics.ingest.formats.tau_log._KWARG": "an unclosed string matches whole (pyrepr.STRING)",
    "forensics.ingest.formats.tau_log._MAX_TOKENS": "literal words, digits",
    "forensics.ingest.formats.tau_log._NAMESPACE": "anchored at the line's start",
    "forensics.ingest.formats.tau_log._RESULT": "searched in the 4 KiB before an object",
    "forensics.ingest.formats.tau_log._RESULTS_SAVED": "literal phrase, one class",
    "forensics.ingest.formats.tau_log._RUNNING_TASK": "anchored at the line's start",
    "forensics.ingest.formats.tau_log._SERVER": "literal commands, rest of the line",
    "forensics.ingest.formats.tau_log._STATUS": "literal words, one class",
    "forensics.ingest.formats.tau_log._TEXT_FACT": "literal alternatives",
    "forensics.ingest.formats.tau_log._VARIANT": "literal word, one class",
    "forensics.ingest.formats.tau_results._FILENAME": "a file name",
    "forensics.ingest.parse.embedded._START": "a brace, then a bounded lookahead",
    "forensics.ingest.parse.embedded._STEP": "a tokenizer: an unclosed string matches whole",
    "forensics.ingest.parse.jsonhead._NOT_STRING": "a tokenizer without strings",
    "forensics.ingest.parse.jsonhead._TOKEN": "a tokenizer: an unclosed string matches whole",
    "forensics.ingest.parse.jsonwalk._DIGITS": "one class",
    "forensics.ingest.parse.jsonwalk._PUNCTUATION": "single characters",
    "forensics.ingest.parse.jsonwalk._TOKEN": "a tokenizer: an unclosed string matches whole",
    "forensics.ingest.parse.pyrepr._BRACKET": "a tokenizer over decoded JSON",
    "forensics.ingest.parse.pyrepr._ESCAPE": "one escape at a time",
    "forensics.ingest.parse.pyrepr._TOKEN": "a tokenizer that gives up at an unclosed quote",
    "forensics.ingest.parse.sdk_repr._START": "literal class names, bounded lookaround",
    "forensics.linear._SURROGATE": "one character class",
    "forensics.redact._ESCAPED": "one escape at a time",
    "forensics.redact._MASK": "a literal mask shape",
    "forensics.report.render.html._CODE_SPAN": "one class between backticks",
    "forensics.report.render.html._MARKUP": "literal markup names",
    "forensics.report.render.jsonout._IDENTIFIER": "one class",
    "forensics.report.render.jsonout._ORJSON_ONLY": "numbers in our own JSON output",
    "forensics.report.render.jsonout._SURROGATE": "one character class",
    "forensics.report.render.junit._ILLEGAL": "one character class",
    "forensics.report.render.markdown._BLOCK_START": "anchored at the text's start",
    "forensics.report.render.markdown._CODE_SPAN": "one class between backticks",
    "forensics.report.render.markdown._MD_SPECIAL": "single characters, one-character lookaround",
    "forensics.report.render.markdown._SPACE": "one class",
    "forensics.report.render.markdown._WORD": "one class",
    "forensics.report.render.safe._UNSAFE": "one character class",
    "forensics.tools.scaffold.ID": "a rule id typed by the user",
    "forensics.wording._ONE": "our own report sentences",
}
# Texts a pattern's prefixes do not spell out, tried on it as well.
EXTRA: dict[str, list[tuple[str, str]]] = {
    "forensics.ingest.parse.pyrepr._TOKEN": [("'", "\\'"), ('"', '\\"')],
    "forensics.ingest.formats.tau_log._KWARG": [
        ("a=", "\\'"),
        ("a=", "'\\'"),
        ("", "Namespace(a="),
    ],
    "forensics.ingest.parse.embedded._STEP": [("{", "'\\'"), ("", "{'")],
    "forensics.ingest.parse.jsonhead._TOKEN": [('{"a": "', '\\"'), ("", '"\\"')],
    "forensics.ingest.parse.jsonwalk._TOKEN": [('{"a": "', '\\"'), ("", '"\\"')],
}


def _patterns() -> dict[str, Any]:
    """module.NAME -> pattern, for every compiled pattern at the top of a forensics module (and
    inside a list or tuple there), `re` or RE2."""
    found: dict[str, Any] = {}
    for info in sorted(pkgutil.walk_packages(forensics.__path__, "forensics."), key=str):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            items = value if isinstance(value, list | tuple) else [value]
            if any(isinstance(v, re.Pattern) or linear.is_linear(v) for v in items):
                found[f"{info.name}.{name}"] = value
    return found


PATTERNS = _patterns()


def test_every_pattern_on_re_is_listed_with_why():
    on_re = {
        name
        for name, value in PATTERNS.items()
        if any(
            isinstance(v, re.Pattern)
            for v in (value if isinstance(value, list | tuple) else [value])
        )
    }
    assert sorted(on_re - RE_PATTERNS.keys()) == [], "new `re` patterns: RE2, or list them here"
    assert sorted(RE_PATTERNS.keys() - on_re) == [], "listed but gone (or moved to RE2)"


def test_the_named_offenders_run_on_re2():
    # issue 24: the patterns that took minutes on a crafted line
    from forensics.ingest.api import linking
    from forensics.ingest.formats import sharegpt
    from forensics.ingest.parse import sdk_repr

    for pattern in (linking._CLOSED, sdk_repr._STR_FORM, sharegpt._TOOLS):
        assert linear.is_linear(pattern)


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Fails the test when the block takes longer (the match is interrupted, not waited for).
    CPU time: the suite shares the machine's cores, and waiting for one is no hang."""

    def expire(*_: object) -> None:
        raise TimeoutError(f"still running after {seconds} s of CPU")

    previous = signal.signal(signal.SIGPROF, expire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


# RE2 patterns whose code only searches a text once (search, match, fullmatch): one search is
# how they are tried. Run through finditer, a megabyte of tiny matches costs the binding's few
# microseconds a match, linear but past the limit.
SINGLE_SEARCH = {"forensics.report.render.markdown._LINKISH"}
# Defects of code this test does not own: the text that shows each, and why it stays. Each is
# an expected failure that fails once fixed, so the entry goes with the fix.
KNOWN: dict[str, tuple[tuple[str, str], str]] = {}


def _run(pattern: Any, text: str, single: bool, call: str = "search") -> None:
    subject: Any = text.encode("utf-8", "replace") if isinstance(pattern.pattern, bytes) else text
    if single:
        getattr(pattern, call if call in ("match", "fullmatch") else "search")(subject)
        return
    for _ in pattern.finditer(subject):  # every start tried: the worst of search, match and sub
        pass


def _cost(
    pattern: Any, text: str, single: bool, limit: float = LIMIT, call: str = "search"
) -> float:
    started = time.process_time()
    with _deadline(limit):
        _run(pattern, text, single, call)
    return time.process_time() - started


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=KNOWN[name][1]))
        if name in KNOWN
        else name
        for name in sorted(PATTERNS)
    ],
)
def test_pattern_is_linear_on_crafted_megabytes(name: str):
    value = PATTERNS[name]
    single = name in SINGLE_SEARCH
    for pattern in value if isinstance(value, list | tuple) else [value]:
        flags = pattern.flags if isinstance(pattern, re.Pattern) else 0
        cases = [KNOWN[name][0]] if name in KNOWN else shapes(pattern.pattern, flags)
        cases += EXTRA.get(name, [])
        # Screened at 8 KB, where a quadratic case already costs many times a linear one; the
        # two slowest, and the extra texts, at a megabyte.
        screened = sorted(cases, key=lambda c: -_cost(pattern, build(*c, 8 * 1024), single))
        # a known defect is shown in a quarter of the time: it takes minutes
        limit = LIMIT / 4 if name in KNOWN else LIMIT
        for head, unit in dict.fromkeys(screened[:2] + EXTRA.get(name, [])):
            took = _cost(pattern, build(head, unit, MB), single, limit)
            assert took < limit, f"{name} on {head!r} + {unit!r} * N: {took:.2f} s"


# --- patterns written inline: `re.sub(r"...", ...)` in a function ------------------------------

_CALLS = {"search", "match", "fullmatch", "sub", "subn", "finditer", "findall", "split", "compile"}


def _inline() -> dict[str, tuple[str | bytes | None, int, str]]:
    """module:line -> (pattern, flags, call) of every `re.<call>` whose pattern is a literal,
    outside a module-level assignment (those are compiled patterns, above); a pattern that is
    no literal fails here, since nothing could attack it."""
    found: dict[str, tuple[str | bytes | None, int, str]] = {}
    root = Path(forensics.__file__).parent
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = {  # module-level assignments: their patterns are enumerated above
            id(node)
            for statement in tree.body
            if isinstance(statement, ast.Assign | ast.AnnAssign)
            for node in ast.walk(statement)
        }
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "re"
                and node.func.attr in _CALLS
                and id(node) not in top
            ):
                continue
            where = f"{path.relative_to(root.parent)}:{node.lineno}"
            first = node.args[0] if node.args else None
            if not isinstance(first, ast.Constant):
                found[where] = (None, 0, node.func.attr)
                continue
            flags = 0
            for arg in [*node.args[1:], *(k.value for k in node.keywords)]:
                for name in ast.walk(arg):
                    if (
                        isinstance(name, ast.Attribute)
                        and isinstance(name.value, ast.Name)
                        and name.value.id == "re"
                        and isinstance(getattr(re, name.attr), int)
                    ):
                        flags |= getattr(re, name.attr)
            found[where] = (first.value, flags, node.func.attr)
    return found


INLINE = _inline()


def test_every_inline_pattern_is_a_literal():
    # a pattern built at run time (from a rule file, say) can not be attacked here: RE2 it
    assert sorted(where for where, (pattern, _, _) in INLINE.items() if pattern is None) == []


@pytest.mark.parametrize("where", sorted(w for w, (p, _, _) in INLINE.items() if p is not None))
def test_inline_pattern_is_linear_on_crafted_megabytes(where: str):
    pattern, flags, call = INLINE[where]
    assert pattern is not None
    compiled = re.compile(pattern, flags)
    # tried as it is called: a match once at the start, anything else at every start
    single = call in ("match", "fullmatch", "search")
    cases = shapes(pattern, flags)
    screened = sorted(cases, key=lambda c: -_cost(compiled, build(*c, 8 * 1024), single, call=call))
    for head, unit in screened[:2]:
        took = _cost(compiled, build(head, unit, MB), single, call=call)
        assert took < LIMIT, f"{where} on {head!r} + {unit!r} * N: {took:.2f} s"


# --- the sites of issue 24, through the functions that read the text -------------------------

SITE_SIZE = 256 * 1024  # main took 25 s to minutes at this size


def _sites() -> dict[str, Callable[[], object]]:
    from forensics.check import textcalls
    from forensics.ingest.api import linking
    from forensics.ingest.formats import sharegpt, tau_log
    from forensics.ingest.parse import embedded, jsonhead, jsonwalk, sdk_repr
    from forensics.report.render import markdown

    n = SITE_SIZE
    return {
        "sdk_repr str form": lambda: sdk_repr.find("response_metadata= " + "content= " * (n // 9)),
        "think blocks of capture history": lambda: linking._visible("<think>" * (n // 7)),
        "sharegpt <tools>": lambda: sharegpt._tools(
            {"conversations": [{"from": "system", "value": "<tools>[" * (n // 8)}]}
        ),
        "tau-bench Namespace": lambda: tau_log.parse_namespace("a=" + "\\'" * (n // 2)),
        "JSON head keys": lambda: jsonhead.top_level('{"a": "' + '\\"' * 32 * 1024),
        "JSON head keys (walk)": lambda: jsonwalk.top_level_keys('{"a": "' + '\\"' * 32 * 1024),
        "embedded objects, unclosed": lambda: list(
            embedded.scan(iter([(1, "{'" * (n // 2) + '"')]))
        ),
        "embedded objects, many": lambda: list(embedded.scan(iter([(1, "{} " * (n // 3))]))),
        "text call fence": lambda: textcalls.parse('"action": 1 ```' + " " * n),
        "name of a text call that does not parse": lambda: textcalls.parse(
            '{"name":' + " " * n + "!"
        ),
        "Markdown link-like word": lambda: markdown.inline("a@" * (n // 2)),
    }


@pytest.mark.parametrize("site", sorted(_sites()))
def test_site_reads_crafted_text_in_linear_time(site: str):
    with _deadline(LIMIT):
        _sites()[site]()


def test_lone_surrogates_are_matched_where_they_stand():
    # JSON's "\ud800" decodes to a lone surrogate, which UTF-8 (RE2's input) can not hold
    from forensics.ingest.api import linking

    text = "a\ud800<think>x\udfff</think>b\ud801"
    assert linking._visible(text) == "a\ud800b\ud801"
    pattern = linear.compile(r"<think>(.*?)</think>")
    assert pattern.search(text).group(1) == "x\udfff"
    assert [m.span() for m in pattern.finditer(text)] == [(2, 19)]
    assert pattern.sub(lambda m: m.group(1), text) == "a\ud800x\udfffb\ud801"
    assert pattern.split(text) == ["a\ud800", "x\udfff", "b\ud801"]


def test_re2_refuses_what_it_can_not_run_in_linear_time():
    for pattern in (r"(?<=a)b", r"(a)\1", r"a*+"):
        with pytest.raises(linear.error):
            linear.compile(pattern)


# --- the patterns enrich runs in polars (Rust's regex) over every value of a column ------------

# Rust's regex answers one search in linear time; a run of matches (replace_all, extract_all,
# count_matches) is where it could not be. These are the ones enrich runs that way.
_POLARS = {
    "CLOSED_BLOCK_RE|UNCLOSED_TAIL_RE": f"{markers.CLOSED_BLOCK_RE}|{markers.UNCLOSED_TAIL_RE}",
    "CLOSED_BLOCK_RE": markers.CLOSED_BLOCK_RE,
    "UNCLOSED_TAIL_RE": markers.UNCLOSED_TAIL_RE,
    "LEADING_TO_CLOSER_RE": markers.LEADING_TO_CLOSER_RE,
    "LAST_SENTENCE_RE": markers.LAST_SENTENCE_RE,
    "OPEN_RE": markers.OPEN_RE,
    "CLOSE_RE": markers.CLOSE_RE,
}


@pytest.mark.parametrize("name", sorted(_POLARS))
def test_enrich_patterns_run_in_linear_time_in_polars(name: str):
    import polars as pl

    pattern = _POLARS[name]

    def cost(text: str) -> float:
        # Rust holds no Python signal: the work runs on a thread that is waited for, not stopped
        series, took = pl.Series([text]), [LIMIT]

        def work() -> None:
            started = time.perf_counter()
            series.str.replace_all(pattern, "")
            series.str.extract_all(pattern)
            series.str.count_matches(pattern)
            took[0] = time.perf_counter() - started

        worker = threading.Thread(target=work, daemon=True)
        worker.start()
        worker.join(LIMIT * 5)
        return took[0]

    cases = shapes(pattern)
    screened = sorted(cases, key=lambda c: -cost(build(*c, 8 * 1024)))
    for head, unit in screened[:2]:
        took = cost(build(head, unit, MB))
        assert took < LIMIT, f"{name} on {head!r} + {unit!r} * N: {took:.2f} s"
