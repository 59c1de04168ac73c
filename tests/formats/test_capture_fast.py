"""The capture fast path (formats/_capture_fast.py) against the general reader: the same turns,
trajectories, rejects and notes on every capture file, or it declines and the general reader
reads the file."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forensics.ingest.api import requestinfo
from forensics.ingest.formats import _capture_fast, capture
from forensics.ingest.parse import files
from forensics.ingest.records import Collector
from forensics.limits import Limits

ROOT = Path(__file__).resolve().parents[2]
# Every JSONL file of the fixtures that holds request/response records.
FIXTURES = sorted(
    p.relative_to(ROOT).as_posix()
    for folder in ("tests/data", "sample_logs")
    for p in (ROOT / folder).rglob("*.jsonl")
    if '"request"' in p.read_text(encoding="utf-8", errors="replace")
)


def _read(path: Path, fast: bool, limits: Limits | None = None) -> tuple[Any, ...]:
    collector = Collector()
    with files.reading(limits or Limits()) as damage, files.counting_records():
        records = capture.read(path, collector, capture.FORMAT, fast=fast)
    turns, trajectories, rejects = collector.tables()
    return records, turns, trajectories, rejects, collector.notes, list(damage)


def _outcome(path: Path) -> _capture_fast.Outcome | None:
    linker = capture.Reader(path, Collector(), capture.FORMAT).linker
    with requestinfo.shared_items():
        return _capture_fast.read(path, Collector(), linker)


def _taken(path: Path) -> bool:
    """Whether the fast path reads the whole file."""
    outcome = _outcome(path)
    return outcome is not None and outcome.rest is None


def assert_same(path: Path, limits: Limits | None = None) -> None:
    general, fast = _read(path, False, limits), _read(path, True, limits)
    assert fast[0] == general[0]
    for name, a, b in zip(
        ("turns", "trajectories", "rejects"), general[1:4], fast[1:4], strict=True
    ):
        assert isinstance(b, pa.Table)
        assert b.schema == a.schema, name
        assert b.to_pylist() == a.to_pylist(), name
    assert fast[4:] == general[4:]


@pytest.mark.parametrize("name", FIXTURES)
def test_fixtures_read_the_same(name: str) -> None:
    assert_same(ROOT / name)


def test_fast_path_reads_the_chat_completions_captures() -> None:
    # Not vacuous: these are read by the fast path (the others decline, see below).
    assert _taken(ROOT / "tests/data/capture/vllm_agent_loop.jsonl")
    assert _taken(ROOT / "sample_logs/vllm_capture_frustrated.jsonl")
    # Anthropic/Gemini calls are the general reader's from the first line; from an invalid
    # line (a reject) on, the general reader goes on with the calls linked before it.
    assert _outcome(ROOT / "tests/data/capture/real/extracted_interactions.subset.jsonl") is None
    streams = _outcome(ROOT / "tests/data/capture/envelopes_streams.jsonl")
    assert streams is not None and streams.rest is not None
    assert next(streams.rest)[0] == 6  # a health check: not a call, the general reader rejects it


WORDS = [
    "order",
    "refund",
    "policy",
    "item",
    "user",
    "address",
    "é",
    "日本",
    "<think>",
    "</think>",
    "\\n",
    "{",
]


def _agent_loop(rnd: random.Random, conversations: int, wrap: bool) -> list[str]:
    """Interleaved agent loops as the reference workload writes them (every request repeats the
    history), some of them identical trials."""
    tools = [{"type": "function", "function": {"name": "tool_1", "parameters": {}}}]
    live = []
    for conv in range(conversations):
        system = {"role": "system", "content": "You are an agent. " + rnd.choice(WORDS)}
        msgs = [system, {"role": "user", "content": " ".join(rnd.choices(WORDS, k=5))}]
        live.append([conv, msgs, rnd.randint(1, 5)])
        if rnd.random() < 0.3:
            live.append([conv, list(msgs), live[-1][2]])  # an identical trial
    lines = []
    while live:
        item = rnd.choice(live)
        conv, msgs, left = item
        if rnd.random() < 0.5:
            resp = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{conv}_{left}",
                        "type": "function",
                        "function": {"name": "tool_1", "arguments": json.dumps({"q": left})},
                    }
                ],
            }
            finish = "tool_calls"
        else:
            resp = {"role": "assistant", "content": "<think>x</think> " + rnd.choice(WORDS)}
            finish = rnd.choice(["stop", "length"])
        body = {"model": "m", "messages": msgs, "tools": tools, "max_tokens": 64}
        answer = {
            "id": "c",
            "object": "chat.completion",
            "model": "m",
            "choices": [{"index": 0, "message": resp, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3},
        }
        record = (
            {"request": {"body": body}, "response": {"status": 200, "body": answer}}
            if wrap
            else {"request": body, "response": answer}
        )
        lines.append(json.dumps(record))
        item[1] = [*msgs, resp]
        if resp.get("tool_calls"):
            item[1].append({"role": "tool", "tool_call_id": f"call_{conv}_{left}", "content": "ok"})
        else:
            item[1].append({"role": "user", "content": rnd.choice(WORDS)})
        item[2] -= 1
        if item[2] == 0:
            live.remove(item)
    return lines


def test_generated_agent_loops(tmp_path: Path) -> None:
    for seed, wrap in ((1, True), (2, False)):
        path = tmp_path / f"loop{seed}.jsonl"
        path.write_text("\n".join(_agent_loop(random.Random(seed), 12, wrap)) + "\n")
        assert _taken(path)
        assert_same(path)


def test_the_records_cap_drops_the_same_episodes(tmp_path: Path) -> None:
    path = tmp_path / "loop.jsonl"
    path.write_text("\n".join(_agent_loop(random.Random(5), 12, True)) + "\n")
    for cap in (1, 7, 40, 75):
        assert_same(path, Limits(max_records=cap))
        assert _read(path, True, Limits(max_records=cap))[1].num_rows < cap


# Edits of a generated line that the fast path must either read exactly or leave alone.
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
_EDITS = st.sampled_from(
    [
        ("request", "body", "max_tokens"),
        ("request", "body", "temperature"),
        ("request", "body", "tool_choice"),
        ("request", "body", "messages", 0, "content"),
        ("request", "body", "messages", 1),
        ("request", "body", "messages", -1, "role"),
        ("request", "body", "messages", -1, "tool_calls"),
        ("request", "body", "messages"),
        ("request", "url"),
        ("request", "headers"),
        ("response", "status"),
        ("response", "body", "choices", 0, "message", "content"),
        ("response", "body", "choices", 0, "message", "refusal"),
        ("response", "body", "choices", 0, "message", "reasoning_content"),
        ("request", "body", "messages", -1, "content"),
        ("request", "body", "messages", -1, "name"),
        ("response", "body", "choices", 0, "message", "tool_calls"),
        ("response", "body", "choices", 0, "finish_reason"),
        ("response", "body", "choices"),
        ("response", "body", "usage", "prompt_tokens"),
        ("response", "body", "model"),
        ("response", "body", "error"),
        ("response", "body"),
        ("error",),
        ("custom_id",),
        ("timestamp",),
    ]
)


def _edit(record: dict[str, Any], where: tuple[Any, ...], value: Any) -> None:
    target: Any = record
    for key in where[:-1]:
        try:
            target = target[key]
        except (KeyError, IndexError, TypeError):
            return
    if isinstance(target, dict) or (
        isinstance(target, list) and isinstance(where[-1], int) and target
    ):
        target[where[-1]] = value


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**16),
    edits=st.lists(
        st.tuples(
            st.integers(0, 40),
            _EDITS,
            _JSON_VALUES
            | st.sampled_from(["\ud800x", "é", "", [{"type": "text", "text": "a"}, "b"]]),
        ),
        max_size=3,
    ),
    extra=st.sampled_from(["", "\n\n", "not json\n", "[1]\n", "{}\n"]),
)
def test_generated_lines_read_the_same(
    tmp_path: Path, seed: int, edits: list[tuple[int, tuple[Any, ...], Any]], extra: str
) -> None:
    lines = _agent_loop(random.Random(seed), 4, wrap=seed % 2 == 0)
    for at, where, value in edits:
        if at < len(lines):
            record = json.loads(lines[at])
            _edit(record, where, value)
            lines[at] = json.dumps(record)
    path = tmp_path / f"gen{seed}.jsonl"
    path.write_text("\n".join(lines) + "\n" + extra, encoding="utf-8", errors="surrogatepass")
    assert_same(path)


def test_a_value_the_row_check_refuses_is_left_to_the_general_reader() -> None:
    # Arrow would take these (True as 1.0, 2.5 truncated to 2, NaN); Collector.add_episode
    # rejects the message, so the fast path must not build the batch.
    from forensics.ingest.records import Episode, Run

    for column, value in (("input_tokens", 2.5), ("http_status", True), ("request_time", 1e999)):
        episode = Episode(Run("r"), "f.jsonl", 1, capture.FORMAT)
        episode.add(1, {"role": "assistant", "content": "hi"}, **{column: value})
        with pytest.raises(_capture_fast.NotFast):
            _capture_fast.turn_batch([episode])
    episode = Episode(Run("r"), "f.jsonl", 1, capture.FORMAT)
    episode.add(1, {"role": "assistant", "content": "hi"}, input_tokens=2)
    assert _capture_fast.turn_batch([episode]).column("input_tokens").to_pylist() == [2]
    for value in ("ab", ["a", 1], [["a"]], ("a",)):
        episode = Episode(Run("r"), "f.jsonl", 1, capture.FORMAT)
        episode.add(1, {"role": "assistant", "content": "hi"}, request_keys=value)
        with pytest.raises(_capture_fast.NotFast):
            _capture_fast.turn_batch([episode])


@pytest.mark.parametrize(
    "spelling",
    [
        '"\\ud800 lone surrogate"',  # json reads it, the row check rejects it; msgspec refuses
        "[" * 1200 + "]" * 1200,  # deeper than msgspec goes
        "[" * 995 + "]" * 995,  # about as deep as json goes, depending on the stack
        "[" * 500 + "]" * 500,  # json reads it; deeper than the fast path takes
        "1" * 5000,  # an integer past Python's conversion limit
        "1E400",  # json reads it as infinity
        "NaN",
    ],
)
def test_what_msgspec_refuses_is_read_by_the_general_reader(tmp_path: Path, spelling: str) -> None:
    lines = _agent_loop(random.Random(3), 3, wrap=True)
    marker = '"content": "ok"'
    at = next(i for i, line in enumerate(lines) if marker in line)
    lines[at] = lines[at].replace(marker, f'"content": {spelling}', 1)
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert not _taken(path)
    assert_same(path)


def test_rows_the_fast_path_can_not_build_are_built_by_the_collector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "loop.jsonl"
    path.write_text("\n".join(_agent_loop(random.Random(6), 6, True)) + "\n")
    general = _read(path, False)

    def refuse(episodes: list[Any]) -> Any:
        raise _capture_fast.NotFast("a value the row check refuses")

    monkeypatch.setattr(_capture_fast, "turn_batch", refuse)
    outcome = _outcome(path)
    assert outcome is not None and outcome.rest is None  # every line read, rows built apart
    fast = _read(path, True)
    assert [t.to_pylist() for t in fast[1:4]] == [t.to_pylist() for t in general[1:4]]
    assert fast[0] == general[0]


def test_one_group_the_fast_path_can_not_build_leaves_the_others_fast(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "loop.jsonl"
    path.write_text("\n".join(_agent_loop(random.Random(8), 9, True)) + "\n")
    general = _read(path, False)
    monkeypatch.setattr(_capture_fast, "BATCH_ROWS", 5)  # a group of an episode or two
    built = _capture_fast.turn_batch
    groups: list[str] = []

    def second_refused(episodes: list[Any]) -> Any:
        groups.append("refused" if len(groups) == 1 else "built")
        if groups[-1] == "refused":
            raise _capture_fast.NotFast("a value the row check refuses")
        return built(episodes)

    monkeypatch.setattr(_capture_fast, "turn_batch", second_refused)
    fast = _read(path, True)
    assert groups.count("refused") == 1 and groups.count("built") >= 2
    assert [t.to_pylist() for t in fast[1:4]] == [t.to_pylist() for t in general[1:4]]
    assert fast[0] == general[0]


def test_a_line_of_another_shape_midway_hands_the_rest_over(tmp_path: Path) -> None:
    lines = _agent_loop(random.Random(7), 6, True)
    odd = json.loads(lines[len(lines) // 2])
    odd["request"]["body"]["messages"].append("a message that is no object")
    lines[len(lines) // 2] = json.dumps(odd)
    path = tmp_path / "loop.jsonl"
    path.write_text("\n".join(lines) + "\n")
    outcome = _outcome(path)
    assert outcome is not None and outcome.rest is not None and outcome.sources > 0
    assert_same(path)
