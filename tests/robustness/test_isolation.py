"""Issue 24, items 1, 6 and 7: a failure in one file or record is that file's or record's
reject, never the scan's end (detection, reading, enrichment, text-call parsing); nothing is lost
without a reject or a note; and Ctrl-C is the interrupt (exit 130), whatever library it
interrupted.

Each test here failed on main before the fix (the commit message and docs/robustness.md name
the class it closes).
"""

from __future__ import annotations

import io
import json
import signal
import zipfile
from pathlib import Path
from types import SimpleNamespace

import duckdb
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import forensics
from forensics import pipeline
from forensics.check import engine, textcalls
from forensics.config import Settings
from forensics.ingest import detect, ingest
from forensics.ingest.parse import embedded, files, jsonwalk
from forensics.ingest.parse.apicommon import count_of

from conftest import DATA, SAMPLES, run_cli
from hostile import HUGE_DIGITS, SEEDS, dumps, replaced

CAPTURE = DATA / "capture" / "vllm_agent_loop.jsonl"
EVAL = DATA / "agents" / "inspect" / "log_formats.eval"
BUG = "this is a bug in forensics"
PROPERTY = settings(
    max_examples=25,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _read(paths: list[str]) -> SimpleNamespace:
    """What ingest makes of the paths, as polars frames: the promises of this file are the
    reader's (the rules and the diagnosis, which a scan adds, read the same tables)."""
    got = ingest(paths)
    frames = {k: pl.from_arrow(getattr(got, k)) for k in ("turns", "trajectories", "rejects")}
    return SimpleNamespace(**frames, files=got.files)


def _results(content: str) -> list[dict]:
    """A tau-bench results file whose one agent turn says `content`."""
    traj = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": content},
    ]
    return [{"task_id": 0, "reward": 0.0, "info": {}, "trial": 0, "traj": traj}]


# --- item 1: a whole scan no longer aborts -------------------------------------------------


@pytest.mark.parametrize(
    ("content", "arguments"),
    [
        ("```tool_code\nf(a=1j, b={1, 2}, c=b'x')\n```", {"a": "1j", "b": "{1, 2}", "c": "b'x'"}),
        ("<|python_tag|>f(a={1, 2}, b=...)", {"a": "{1, 2}", "b": "..."}),
        ("```tool_code\nf(a={(1, 2): 3}, b=1e999, c=[1, 'x'])\n```", None),
    ],
)
def test_python_literals_json_can_not_write_are_kept_as_source(tmp_path, content, arguments):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_results(content)))
    code, _out, err = run_cli("scan", str(path), "--no-report", "--json", str(tmp_path / "r.json"))
    assert code in (0, 1), err
    calls = forensics.scan([str(path)]).turns.filter(pl.col("role") == "assistant")["text_calls"]
    (call,) = calls.to_list()[0]
    assert call["name"] == "f" and call["error"] is None  # Python reads the call: it parses
    got = json.loads(call["arguments"])
    if arguments is not None:
        assert got == arguments
    else:  # a dict with tuple keys and an infinite float have no JSON spelling
        assert got == {"a": "{(1, 2): 3}", "b": "1e309", "c": [1, "x"]}


def test_a_text_call_with_an_integer_python_can_not_read_does_not_parse():
    found = textcalls.parse('Action:\n{"name": "f", "arguments": {"n": ' + HUGE_DIGITS + "}}")
    assert found is not None
    (call,) = found[1]
    assert call["name"] == "f"
    assert call["error"].startswith("not valid JSON: an integer of 5,000 digits")


def test_a_text_call_parser_failure_is_that_turns_reject(tmp_path, monkeypatch):
    """Enrichment is per turn too: a parser bug on one message costs that turn's text calls,
    with a reject naming its file and line, and the scan goes on."""
    path = tmp_path / "results.json"
    records = _results("```tool_code\nboom()\n```") + _results("```tool_code\nfine()\n```")
    records[1]["task_id"] = 1
    path.write_text(json.dumps(records, indent=1))
    parse = textcalls.parse

    def failing(text: str | None):
        if text and "boom" in text:
            raise TypeError("a parser bug")
        return parse(text)

    monkeypatch.setattr(textcalls, "parse", failing)
    result = forensics.scan([str(path)])
    agent = result.turns.filter(pl.col("role") == "assistant").sort("task_id")
    assert agent["text_call_format"].to_list() == [None, "tool_code"]
    (reject,) = result.rejects.rows(named=True)
    assert reject["source_line"] == agent["source_line"][0]  # where the boom() turn starts
    assert reject["source_format"] == "tau_bench_results"
    assert reject["reason"].startswith("text tool calls of turn 2 of ") and BUG in reject["reason"]
    code, _out, err = run_cli("scan", str(path), "--no-report")
    assert code in (0, 1) and "internal error" not in err


def test_a_detection_failure_is_that_files_reject(tmp_path, monkeypatch):
    (tmp_path / "a.jsonl").write_bytes(CAPTURE.read_bytes())
    (tmp_path / "b.jsonl").write_text('{"x": 1}\n')
    skip = jsonwalk.skip_broken_lead

    def failing(text: str) -> str:
        if text.startswith('{"x"'):
            raise ValueError("a detection bug")
        return skip(text)

    monkeypatch.setattr(jsonwalk, "skip_broken_lead", failing)
    result = _read([str(tmp_path)])
    by_name = {Path(f.path).name: f for f in result.files}
    assert by_name["a.jsonl"].format == "api_capture" and by_name["a.jsonl"].records > 0
    assert by_name["b.jsonl"].format is None
    assert by_name["b.jsonl"].reason.startswith("format detection failed (ValueError")


def test_an_oversized_integer_under_a_broken_first_line_is_read_past(tmp_path):
    """The audit's reproducer: detection parsed the lines of the head and the integer's
    ValueError ended the scan. Now the broken line and the integer's record are rejects, the
    rest is read."""
    lines = CAPTURE.read_text().splitlines()
    path = tmp_path / "capture.jsonl"
    path.write_text("\n".join(["garbage", '{"x": ' + HUGE_DIGITS + "}", *lines]) + "\n")
    code, _out, err = run_cli("scan", str(path), "--no-report")
    assert code in (0, 1), err
    result = _read([str(path)])
    assert [f.format for f in result.files] == ["api_capture"]
    assert result.turns.height == _read([str(CAPTURE)]).turns.height
    assert result.rejects["source_line"].to_list() == [1, 2]
    assert "5,000 digits" in result.rejects["reason"][1]


# --- item 6: losses ----------------------------------------------------------------------


@pytest.mark.parametrize("broken", [1, 5, 20, 100, 3000])
def test_jsonl_past_any_number_of_broken_leading_lines(tmp_path, broken):
    """Records cut by a crashed writer before the first whole one: each is a reject, and the
    records after them are read, however many (past the 20 lines the probe used to read, past
    the 64 KiB detection reads)."""
    lines = CAPTURE.read_text().splitlines()
    lead = ['{"request": {"model": "cut ' + str(i) + " " + "x" * 30 for i in range(broken)]
    path = tmp_path / "capture.jsonl"
    path.write_text("\n".join(lead + lines) + "\n")
    result = _read([str(path)])
    clean = _read([str(CAPTURE)])
    assert [f.format for f in result.files] == ["api_capture"]
    assert result.turns.height == clean.turns.height
    assert result.rejects["source_line"].to_list() == list(range(1, broken + 1))


@pytest.mark.parametrize(
    ("text", "jsonl"),
    [
        ('{"a": 1}\n{"b": 2}\n', True),
        ('{"a": 1,\n  "b": [\n    1\n  ]\n}\n', False),  # pretty-printed
        ("{\n", False),
        ('[{"a": 1},\n {"b": 2}]\n', False),
        ('[\n{"a": 1},\n{"b": 2}\n]\n', False),  # an array, one element per line
        ("[\n" + '{"a": 1},\n' * 30 + '{"b": 2}\n]\n', False),
        ('{"cut": "x\n{"cut": "y\n{"a": 1}\n', True),  # broken lead, then a record
        ('Traceback (most recent call last):\n  File "x.py"\n{"a": 1}\n', True),
        ('{"a": 1, "n": ' + HUGE_DIGITS + "}\n", True),  # a line Python can not read
        ('cut"}\n{"a": ' + HUGE_DIGITS + '}\n{"b": 2}\n', True),
    ],
)
def test_jsonl_is_told_from_a_document_by_its_structure(tmp_path, text, jsonl):
    path = tmp_path / "f.json"
    path.write_text(text)
    assert jsonwalk.is_jsonl(files.iter_lines(path)) is jsonl


def test_a_text_log_that_quotes_messages_is_not_taken_for_json_lines():
    head = (SAMPLES / "output2.txt").read_text()[:65536]
    assert jsonwalk.skip_broken_lead(head) == head
    assert detect(head.encode())[0].name == "tau_bench_log"


def test_a_two_record_file_whose_first_record_is_broken_reads_its_second():
    # found by the attack property: an atropos file's first key replaced by 4,301 digits was
    # read as a text log, the record of line 2 lost without a reject
    raw = (DATA / "traces" / "atropos" / "math_groups.jsonl").read_text()
    head = raw.replace('"tokens"', "9" * 4301, 1)
    assert jsonwalk.skip_broken_lead(head) == head.split("\n", 1)[1]
    assert detect(head.encode())[0].name == "atropos_groups"
    # prose around the whole line keeps it a text log
    prose = "Running task 0\n" + head.split("\n", 1)[1]
    assert jsonwalk.skip_broken_lead(prose) == prose


def _with_huge_integer(raw: bytes, nth: int) -> bytes | None:
    """The seed with its nth integer literal (a JSON number after `:`, `[` or `,`) made
    5,000 digits long, or None when it has none."""
    import re

    found = list(re.finditer(rb"(?<=[:\[,] )\d+(?=[,}\]\s])|(?<=[:\[,])\d+(?=[,}\]\s])", raw))
    if not found:
        return None
    m = found[min(nth, len(found) - 1)]
    return raw[: m.start()] + HUGE_DIGITS.encode() + raw[m.end() :]


def _zipped_with_huge_integer(raw: bytes, nth: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as src, zipfile.ZipFile(out, "w") as dst:
        for name, data in [(info.filename, src.read(info)) for info in src.infolist()]:
            if name.startswith("samples/"):
                data = _with_huge_integer(data, nth) or data
            dst.writestr(zipfile.ZipInfo(name, (2025, 1, 1, 0, 0, 0)), data)
    return out.getvalue()


@pytest.mark.parametrize("label", sorted(SEEDS))
@pytest.mark.parametrize("nth", [0, 3])
def test_an_oversized_integer_rejects_a_record_not_the_reader(tmp_path, label, nth):
    """An integer longer than Python converts (4,300 digits) was a ValueError out of 14
    readers: "the reader failed …, this is a bug", the whole file lost. It is a record's
    reject now, with the reason; the file's other records are read."""
    raw = SEEDS[label].read_bytes()
    mutated = _zipped_with_huge_integer(raw, nth) if raw.startswith(b"PK") else None
    mutated = mutated or _with_huge_integer(raw, nth)
    if mutated is None:
        pytest.skip("no integer in this seed")
    path = tmp_path / SEEDS[label].name
    path.write_bytes(mutated)
    result = _read([str(path)])
    reasons = result.rejects["reason"].to_list()
    assert not [r for r in reasons if "reader failed" in r or BUG in r], reasons
    assert not [r for r in reasons if "no recognizable records" in r], reasons


@pytest.mark.parametrize(
    ("label", "line", "where", "value"),
    [
        # what benchmarks/fuzz.py-style field mutations found on main: "the reader failed on
        # it (TypeError: 'int' object is not iterable); this is a bug in forensics"
        ("capture_batch", 6, ("body", "messages"), 2**70),
        ("capture_bodies", None, (0, "output", 0, "summary"), float("inf")),
        ("gemini_rest", None, ("candidates", 0, "content", "parts"), 2**70),
        ("litellm", 2, ("messages", 1, "content"), -1),
        # an integer beyond a float's range (400 digits: JSON, within Python's digit limit)
        ("tau_bench_results", None, (0, "reward"), 10**400),
        ("atropos", 0, ("scores", 0), -(10**400)),
        # a list or an object where OTLP has a string: "unhashable type" in a lookup
        (
            "otlp_document",
            None,
            ("resourceSpans", 0, "scopeSpans", 0, "spans", 0, "status", "code"),
            [1],
        ),
        (
            "otlp_jsonl",
            0,
            (
                "resourceSpans",
                0,
                "scopeSpans",
                0,
                "spans",
                0,
                "attributes",
                0,
                "value",
                "stringValue",
            ),
            {},
        ),
        ("otlp_logs", 0, ("resourceLogs", 0, "scopeLogs", 0, "logRecords", 1, "eventName"), [1]),
    ],
)
def test_a_value_of_the_wrong_kind_is_no_bug_in_forensics(tmp_path, label, line, where, value):
    raw = SEEDS[label].read_text()
    if line is None:
        text = dumps(replaced(json.loads(raw), where, value))
    else:
        lines = raw.split("\n")
        lines[line] = dumps(replaced(json.loads(lines[line]), where, value))
        text = "\n".join(lines)
    path = tmp_path / SEEDS[label].name
    path.write_text(text)
    reasons = _read([str(path)]).rejects["reason"].to_list()
    assert not [r for r in reasons if BUG in r or "reader failed" in r], reasons


@pytest.mark.parametrize("text", ["²", "١٢٣", "9" * 5000, "12x"])
def test_a_count_written_as_text_takes_ascii_digits_only(text):
    assert count_of(text) is None
    assert count_of("0042") == 42 and count_of("9" * 19, digits=19) == int("9" * 19)


def test_an_oversized_integer_in_one_array_element_loses_that_element(tmp_path):
    records = json.loads((SAMPLES / "tau_bench_results_frustrated.json").read_text())
    records[1]["reward"] = "@@huge@@"  # the second record's reward: 5,000 digits
    path = tmp_path / "results.json"
    path.write_text(json.dumps(records, indent=2).replace('"@@huge@@"', HUGE_DIGITS))
    result = _read([str(path)])
    assert result.trajectories.height == len(records) - 1
    (reject,) = result.rejects.rows(named=True)
    assert reject["json_path"] == "$[1]"
    assert reject["reason"] == (
        "record not read: an integer of 5,000 digits, more than Python reads (4,300)"
    )


def test_a_member_name_that_is_not_utf8_loses_that_member_only(tmp_path):
    """A .eval whose central directory flags a name UTF-8 that is not: zipfile refuses the
    whole archive; the other members are read, that member is a reject."""
    out = io.BytesIO()
    with zipfile.ZipFile(EVAL) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        members = [(info.filename, src.read(info)) for info in src.infolist()]
        members.append(("samples/2_epoch_é.json", src.read("samples/1_epoch_1.json")))
        for name, data in members:
            dst.writestr(zipfile.ZipInfo(name, (2025, 1, 1, 0, 0, 0)), data)
    path = tmp_path / "log.eval"
    name = "samples/2_epoch_é.json".encode()  # in the local header and the directory
    path.write_bytes(out.getvalue().replace(name, name.replace("é".encode(), b"\xff\xfe")))
    with pytest.raises(UnicodeDecodeError):
        zipfile.ZipFile(path)
    result = _read([str(path)])
    assert result.turns.height == _read([str(EVAL)]).turns.height
    (reject,) = result.rejects.rows(named=True)
    assert reject["source_path"] == f"{path}!samples/2_epoch_\ufffd\ufffd.json"
    assert reject["reason"] == "member name is not the UTF-8 its entry says: not read"


def _log_lines() -> list[str]:
    return (SAMPLES / "output2.txt").read_text().split("\n")


def test_a_message_line_cut_in_half_is_a_reject(tmp_path):
    lines = _log_lines()
    at = [i for i, line in enumerate(lines) if line.startswith('{"role": "user"')][1]
    lines[at] = lines[at][: len(lines[at]) // 2]
    path = tmp_path / "output2.txt"
    path.write_text("\n".join(lines))
    result = _read([str(path)])
    assert result.turns.height == _read([str(SAMPLES / "output2.txt")]).turns.height - 1
    (reject,) = result.rejects.rows(named=True)
    assert reject["source_line"] == at + 1
    assert reject["reason"] == "message cut short: a string in it does not close on its line"


@pytest.mark.parametrize(
    ("line", "cut"),
    [
        ('{"role": "user", "content": "Sure, my na', True),
        ("{'content': 'Thank you, Mei. I ha", True),
        ('  {"content": null, "role": "assistant", "tool_calls": [{"function": {"argum', True),
        # a record of another kind cut short, or a message quoted after other text: no
        # message line, no reject (the text scanner reads any text)
        ('{"candidates": [{"content": {"parts": [{"text": "Sure, the ref', False),
        ('{"content": {"parts": [{"text": "Sure, the ref', False),
        ('INFO user said {"role": "user", "content": "Sure, my na', False),
    ],
)
def test_only_a_line_that_starts_like_a_message_is_a_cut_message(line, cut):
    (found,) = list(embedded.scan(iter([(1, line)])))
    errors = [f.error for f in found.objects if f.error is not None]
    said = "message cut short: a string in it does not close on its line"
    assert errors == ([said] if cut else [])


def test_an_episode_the_log_ends_inside_is_noted_and_a_whole_log_is_not(tmp_path):
    path = tmp_path / "output2.txt"
    path.write_bytes((SAMPLES / "output2.txt").read_bytes()[:30_000])
    result = _read([str(path)])
    running = next(i for i, line in enumerate(_log_lines(), 1) if line == "Running task 12")
    said = (
        f"the log ends before the result line of task 12 (started on line {running}): cut "
        "short, or the run was still going; 0 message(s) read"
    )
    cut = result.trajectories.filter(pl.col("task_id") == "12")
    assert cut["turn_count"].to_list() == [0] and cut["ingest_note"].to_list() == [
        f"cut off: {said}"
    ]
    # and one run-cut-off finding says it (issue 21 item 5), on the episode as a whole
    findings = forensics.scan([str(path)]).findings
    (finding,) = findings.filter(pl.col("rule") == "run-cut-off").iter_rows(named=True)
    assert finding["task_id"] == "12" and finding["turn_index"] is None
    assert finding["message"] == (
        f"run cut off: the log ends before the result line of task 12 (started on line {running}): "
        "cut short, or the run was still going"
    )
    assert [f.note for f in result.files] == [said]
    _code, out, _err = run_cli("scan", str(path), "--no-report")
    assert f"note: {path}: {said}" in out
    whole = _read([str(SAMPLES / "output2.txt")])
    assert whole.trajectories["ingest_note"].null_count() == whole.trajectories.height
    assert [f.note for f in whole.files] == [None]


# --- item 7: Ctrl-C ----------------------------------------------------------------------


class _Interrupted:
    """A DuckDB connection whose third query meets Ctrl-C the way DuckDB does: the
    KeyboardInterrupt is raised inside the query, and DuckDB reports it as an error of its
    own. A deterministic stand-in for pressing Ctrl-C at the wrong moment."""

    def __init__(self, real: duckdb.DuckDBPyConnection, error: type[Exception]) -> None:
        self.real, self.error, self.queries = real, error, 0

    def sql(self, query: str):
        self.queries += 1
        if self.queries == 3:
            try:
                signal.raise_signal(signal.SIGINT)
            except KeyboardInterrupt:
                raise self.error(
                    "Invalid Input Error: counting the rows of the object registered as "
                    "'turns' failed: KeyboardInterrupt: "
                ) from None
        return self.real.sql(query)

    def cursor(self):  # type: ignore[no-untyped-def]
        # A scan's rules run on a cursor of its turn store's connection.
        return type(self)(self.real.cursor(), self.error)

    def __getattr__(self, name: str):
        return getattr(self.real, name)


@pytest.fixture
def sigint_raises():
    """SIGINT raising KeyboardInterrupt, as in a terminal (a test runner's worker may ignore
    it)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


ERRORS = [duckdb.InvalidInputException, duckdb.InterruptException, RuntimeError]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: e.__name__)
def test_ctrl_c_in_a_rule_query_is_the_interrupt_not_a_broken_rule(
    monkeypatch, sigint_raises, error
):
    real = duckdb.connect
    monkeypatch.setattr(engine.duckdb, "connect", lambda *a, **k: _Interrupted(real(), error))
    data = pipeline.read(pipeline.expand([str(CAPTURE)], Settings()), Settings())
    with pytest.raises(KeyboardInterrupt):
        pipeline.check(data, engine.load_rules())


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: e.__name__)
def test_ctrl_c_during_rule_checking_exits_130(monkeypatch, sigint_raises, error):
    real = duckdb.connect
    monkeypatch.setattr(engine.duckdb, "connect", lambda *a, **k: _Interrupted(real(), error))
    code, out, err = run_cli("scan", str(CAPTURE), "--no-report")
    assert (code, out, err) == (130, "", "forensics: interrupted\n")


def test_a_failing_rule_query_without_ctrl_c_is_still_a_rule_error(monkeypatch):
    real = duckdb.connect

    class Failing(_Interrupted):
        def sql(self, query: str):
            raise duckdb.InvalidInputException("Invalid Input Error: no such thing")

    monkeypatch.setattr(engine.duckdb, "connect", lambda *a, **k: Failing(real(), Exception))
    code, _out, err = run_cli("scan", str(CAPTURE), "--no-report")
    assert code == 2 and "query failed: Invalid Input Error: no such thing" in err


# --- properties --------------------------------------------------------------------------

_CUT = st.builds(
    lambda record, at: record[: max(1, at % len(record))],
    st.sampled_from(CAPTURE.read_text().splitlines()),
    st.integers(1, 10_000),
)
# Text lines (a traceback, a progress bar): anything without a line break that is no JSON.
_GARBAGE = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"),
    min_size=1,
    max_size=40,
).filter(lambda s: s.strip() and s.lstrip()[:1] not in "{[")


@PROPERTY
@given(lead=st.lists(st.one_of(_CUT, _GARBAGE), min_size=1, max_size=40))
def test_any_broken_lead_keeps_every_record_after_it(tmp_path_factory, lead):
    """Whatever broken lines come first (records cut anywhere, text), every record after them
    is read, and every broken line is a reject: parsed + rejected is the whole file."""
    records = CAPTURE.read_text().splitlines()
    path = tmp_path_factory.mktemp("lead") / "capture.jsonl"
    path.write_text("\n".join([*lead, *records]) + "\n")
    result = _read([str(path)])
    assert [f.format for f in result.files] == ["api_capture"]
    assert result.turns.height == _clean_turns()
    assert result.rejects["source_line"].to_list() == list(range(1, len(lead) + 1))


_CLEAN: list[int] = []


def _clean_turns() -> int:
    if not _CLEAN:
        _CLEAN.append(_read([str(CAPTURE)]).turns.height)
    return _CLEAN[0]


@PROPERTY
@given(which=st.integers(0, 10**9), at=st.integers(0, 10**9))
def test_an_oversized_integer_in_any_object_of_a_line_costs_that_line(tmp_path_factory, which, at):
    """The integer as a member of any object of any record, at any depth: that line is the
    one reject, every other record is read."""
    records = CAPTURE.read_text().splitlines()
    i = which % len(records)
    opens = [k for k, c in enumerate(records[i]) if c == "{" and _outside_strings(records[i], k)]
    k = opens[at % len(opens)] + 1
    member = '"n": ' + HUGE_DIGITS + ("" if records[i][k] == "}" else ", ")
    records[i] = records[i][:k] + member + records[i][k:]
    path = tmp_path_factory.mktemp("int") / "capture.jsonl"
    path.write_text("\n".join(records) + "\n")
    result = _read([str(path)])
    assert result.rejects["source_line"].to_list() == [i + 1]
    assert "5,000 digits" in result.rejects["reason"][0]


def _outside_strings(line: str, at: int) -> bool:
    """Whether position `at` of a JSON line is outside its strings."""
    inside = escaped = False
    for c in line[:at]:
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = inside
        elif c == '"':
            inside = not inside
    return not inside
