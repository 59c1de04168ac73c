"""tau-bench results / checkpoint files: a JSON array of {task_id, reward, info, traj, trial}.

run.py rewrites the file in place after every task, so a killed run can leave a truncated
array. Every complete record is kept; the cut record is rejected with its line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from forensics.ingest.parse import files, jsonwalk
from forensics.ingest.parse.apicommon import as_float
from forensics.ingest.records import (
    Collector,
    Episode,
    Run,
    excerpt,
    infer_strategy,
    isolated,
    tau_error,
    tau_reward,
    tau_termination,
    unreadable,
)
from forensics.ingest.registry import FormatSpec

FORMAT = "tau_bench_results"

# {agent_strategy}-{model}-{temperature}_range_{start}-{end}_user-{user_model}-{user_strategy}_{ts}
_FILENAME = re.compile(
    r"^(?P<strategy>tool-calling|act|react|few-shot)-(?P<model>.+?)-(?P<temp>[\d.]+)_range_"
)


def looks_like(head: str) -> bool:
    stripped = head.lstrip()
    return stripped.startswith("[") and '"task_id"' in head[:4096] and '"traj"' in head


def sniff(head: str) -> str | None:
    if looks_like(head):
        return "JSON array whose first element has task_id and traj (tau-bench results)"
    return None


def _run_for(path: Path) -> Run:
    run = Run(run_id=path.stem)
    if m := _FILENAME.match(path.name):
        run.agent_strategy = m.group("strategy")
        run.agent_model = m.group("model")
        run.labels["agent_strategy"] = run.agent_strategy
    return run


class _Window:
    """Absolute line numbers for offsets into a TextStream's window (offsets visited mostly in
    increasing order, as LineCounter)."""

    def __init__(self, stream: files.TextStream) -> None:
        self.stream = stream
        self.first_line = 1  # line of the window's first character
        self._offset = 0
        self._line = 1

    def __call__(self, offset: int) -> int:
        if offset < self._offset:
            self._offset, self._line = 0, self.first_line
        self._line += self.stream.text.count("\n", self._offset, offset)
        self._offset = offset
        return self._line

    def drop(self, pos: int) -> None:
        self.first_line = self(pos)
        self.stream.drop(pos)
        self._offset, self._line = 0, self.first_line


# Past this many characters of consumed records, the window forgets them.
_KEEP_CHARS = 8 * files.MIB


def _records(
    stream: files.TextStream, lines: _Window, walker: jsonwalk.Walker
) -> Iterator[tuple[int, Any, int]]:
    """jsonwalk.arrays over a stream: (start, element, end) window offsets of each element of
    the top-level array(s); the window holds each element whole while it is handed out.

    A step that fails or ends at the window's edge is tried again with more of the document;
    at the end of the document its error is the document's, as jsonwalk.arrays raises it."""

    def ws(pos: int) -> int:
        while True:
            pos = jsonwalk.skip_ws(stream.text, pos)
            if pos < len(stream.text) or not stream.more():
                return pos

    def element(pos: int) -> tuple[Any, int]:
        while True:
            try:
                item, end = jsonwalk.walked(stream.text, pos, walker)
                if end < len(stream.text) or stream.eof:
                    return item, end
            except jsonwalk.WalkError:
                if stream.eof:
                    raise
            stream.more()

    pos = ws(0)
    while True:
        if pos >= len(stream.text):
            raise jsonwalk.WalkError(pos, "file ends where '[' was expected")
        if stream.text[pos] != "[":
            raise jsonwalk.WalkError(pos, "expected '['")
        pos = ws(pos + 1)
        if pos >= len(stream.text) or stream.text[pos] != "]":
            while True:
                start = pos = ws(pos)
                item, end = element(pos)
                yield start, item, end
                if end > _KEEP_CHARS:
                    lines.drop(end)
                    end = 0
                pos = ws(end)
                if pos >= len(stream.text):
                    raise jsonwalk.WalkError(pos, "file ends inside an array")
                if stream.text[pos] == "]":
                    break
                if stream.text[pos] != ",":
                    raise jsonwalk.WalkError(pos, "expected ','")
                pos += 1
        pos = ws(pos + 1)
        if pos >= len(stream.text):
            return
        if stream.text[pos] != "[":
            raise jsonwalk.WalkError(pos, jsonwalk.TRAILING)


def ingest(path: Path, collector: Collector) -> int:
    """Records are read one at a time from the file: memory holds one record, not the file."""
    with files.TextStream(path) as stream:
        return _ingest(path, collector, stream)


def _ingest(path: Path, collector: Collector, stream: files.TextStream) -> int:
    line_of = _Window(stream)
    run = _run_for(path)
    records = 0
    record_walker = lambda t, p: jsonwalk.obj(t, p, {"traj": jsonwalk.positioned_array})  # noqa: E731
    start = 0  # absolute offset where the walk stands
    try:
        for index, (offset, record, _end) in enumerate(_records(stream, line_of, record_walker)):
            start = stream.base + offset
            if unreadable(
                collector,
                str(path),
                line_of(offset),
                record,
                FORMAT,
                f"$[{index}]",
                stream.text,
                offset,
            ):
                pass
            elif not isinstance(record, dict) or "traj" not in record:
                while len(stream.text) < offset + 200 and stream.more():
                    pass
                collector.reject(
                    str(path),
                    line_of(offset),
                    "array element is not a tau-bench result record",
                    excerpt(stream.text, offset),
                    FORMAT,
                    f"$[{index}]",
                )
            else:
                with isolated(collector, str(path), line_of(offset), FORMAT, f"$[{index}]"):
                    add_record(collector, run, path, line_of, offset, record, index)
                    records += 1
            start = stream.base + _end
    except jsonwalk.WalkError as exc:
        stream.rest()
        text = stream.text
        # A file cut mid-write does not end with the array's closing bracket.
        cut = exc.msg != jsonwalk.TRAILING and not text.rstrip().endswith("]")
        where = jsonwalk.skip_ws(text, start - stream.base)
        if where < len(text) and text[where] in ",]":
            where = jsonwalk.skip_ws(text, where + 1)
        where = min(where, exc.pos)
        error_line = line_of(exc.pos)
        reason = (
            f"truncated file: it ends inside record {records + 1} "
            f"(line {line_of(len(text))}); {records} complete records kept"
            if cut
            else f"invalid JSON at line {error_line}: {exc.msg}; "
            f"the rest of the file ({len(text) - where} chars) was not read"
        )
        collector.reject(str(path), line_of(where), reason, excerpt(text, where), FORMAT)
    return records


def add_record(
    collector: Collector,
    run: Run,
    path: Path,
    line_of: Callable[[int], int],
    offset: int,
    record: dict[str, Any],
    index: int = 0,
) -> None:
    info = record.get("info")
    record_line = line_of(offset)
    positioned = record.get("traj") or []
    if run.agent_strategy is None:
        run.agent_strategy = infer_strategy([m for _, m in positioned])
    if not isinstance(positioned, list):
        raise ValueError(f"traj is a JSON {type(positioned).__name__}, not an array")
    kept = [(k, o, m) for k, (o, m) in enumerate(positioned) if isinstance(m, dict)]
    messages = [(line_of(o), m) for _, o, m in kept]
    traj = [m for _, m in messages]
    trial = record.get("trial")
    reward = record.get("reward")
    collector.add_episode(
        Episode(
            run=run,
            source_path=str(path),
            source_line=record_line,
            source_format=FORMAT,
            task_id=str(record.get("task_id")),
            trial=trial if isinstance(trial, int) else None,
            reward=tau_reward(info, as_float(reward) if isinstance(reward, int | float) else None),
            termination_reason=tau_termination(info, traj),
            error=tau_error(info),
            messages=messages,
            json_path=f"$[{index}]",
            json_paths={i: f"$[{index}].traj[{k}]" for i, (k, _, _) in enumerate(kept)},
        )
    )


# The columns of tau-bench's OpenAI-shaped traj messages, and what the run's file name says
# (model, strategy, hence whether tools were attached). A record's info.error is the episode's
# (trajectories.error), never a turn's.
COLUMNS = frozenset(
    {"content", "reasoning", "tool_calls", "tool_call_id", "finish_reason", "finish_reason_raw"}
    | {"tools_attached", "model", "tool_name"}
)
# tau-bench's run.py, for the plan's rerun step and the text scanner's declaration.
RERUN = "tau-bench run.py: --task-ids {tasks}"

SPECS = (
    FormatSpec(
        name=FORMAT,
        description="tau-bench results / checkpoint JSON",
        detection='a JSON array whose head holds "task_id" and "traj"',
        sniff=sniff,
        ingest=ingest,
        priority=200,
        columns=COLUMNS,
        benchmark=True,
        artifact="results",
        rerun=RERUN,
        seeds={
            "tau_bench_results": "sample_logs/tau_bench_results_control.json",
            # a ReAct agent: tool calls written as text (enrich parses them)
            "tau_bench_react": "tests/data/textcalls/"
            "react-llama-3.1-8b-instruct-0.0_range_0-2_user-gpt-4o-llm_1118113344.json",
        },
    ),
)
