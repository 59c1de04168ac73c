"""Claude Code session transcripts: ~/.claude/projects/<project>/<session>.jsonl.

One JSON object per line. `user` and `assistant` lines carry an Anthropic message in `message`;
every other type (summary, file-history-snapshot, queue-operation, permission-mode, titles,
system notices, progress, …) describes the session and is counted as metadata, not turns.

An assistant response is written as several lines, one per content block (thinking, text,
tool_use), sharing `message.id` and repeating its usage: they are one turn, its stop_reason and
usage from the last of them. Lines of other types may come between them (a local command's
`system` lines, #50527), and so may the `tool_result` lines of calls already made: a block of the
same `message.id` after them still joins the turn (a tool_use seen before is not added twice).
A user line holds either the human's prompt or `tool_result` blocks: each result is a tool turn
of the environment (`is_error` kept as the turn's error). When the API call fails Claude
Code writes a synthetic assistant line (`isApiErrorMessage`, model `<synthetic>`, the error in
`error`/`apiErrorStatus` and the text "API Error: …"); a response cut at the output cap becomes
one saying it "exceeded the N output token maximum": read as a max_tokens stop at cap N.

A session is one trajectory; subagent (sidechain) lines of an agent are their own trajectory.

A `system` line with subtype `api_error` is an attempt that failed before Claude Code retried
it (error status and text, retryAttempt of maxRetries): a failed turn of its own.

`claude -p --output-format stream-json` prints the same messages with `session_id`, after a
`system` `init` line, and ends with a `result` line: its subtype (success, error_max_turns,
error_during_execution) is how the episode ended, its text the episode's error when `is_error`.
Claude Code prints that line however the run ends; a stream that opened with `init` and stops
without it was cut (the process killed, or crashed): the episode is declared cut off, with the
crash text written into the stream as its evidence when there is one (`_ending`). A session file
has no closing line (a later session may resume it) and is not judged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forensics.ingest import jsonrecords
from forensics.ingest.formats import _ending
from forensics.ingest.parse import jsonhead
from forensics.ingest.parse.apicommon import as_int, count_of, json_text
from forensics.ingest.records import Collector, Episode, Run, excerpt, isolated
from forensics.ingest.registry import FormatSpec
from forensics.wording import article

FORMAT = "claude_code"

_TYPES = {
    "user",
    "assistant",
    "summary",
    "system",
    "file-history-snapshot",
    "queue-operation",
    "permission-mode",
    "custom-title",
    "ai-title",
    "progress",
    "attachment",
}
_OUTPUT_CAP = re.compile(r"exceeded the (\d[\d,]*) output token maximum")
_STATUS = re.compile(r"API Error: (\d{3})\b")
_SYNTHETIC = "<synthetic>"


def sniff(head: str) -> str | None:
    keys = jsonhead.top_level(head)
    kind = keys.get("type")
    if "parentUuid" in keys and "sessionId" in keys:
        return "JSONL lines with parentUuid and sessionId (Claude Code session transcript)"
    if kind == "summary" and "leafUuid" in keys:
        return "JSONL starting with a summary line with leafUuid (Claude Code session transcript)"
    if kind in _TYPES and "sessionId" in keys and kind not in ("user", "assistant"):
        return (
            f"JSONL starting with {article(kind)} line with sessionId (Claude Code session "
            "transcript)"
        )
    if kind == "system" and keys.get("subtype") == "init" and "session_id" in keys:
        return "JSONL starting with a system init line with session_id (Claude Code stream-json)"
    if kind == "file-history-snapshot" and "messageId" in keys:
        return "JSONL starting with a file-history-snapshot (Claude Code session transcript)"
    return None


@dataclass
class _Session:
    episode: Episode
    # message.id of the assistant turn the last lines added to, and its index in the episode.
    open_id: str | None = None
    open_index: int = -1
    blocks: dict[int, list[Any]] = field(default_factory=dict)


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _text(blocks: list[Any]) -> str:
    return "\n".join(
        b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)
    )


def _assistant_fields(
    line: dict[str, Any], blocks: list[Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(message for the collector, turn fields) of an assistant turn from all its blocks."""
    message = got if isinstance(got := line.get("message"), dict) else {}
    text = _text([b for b in blocks if isinstance(b, dict) and b.get("type") == "text"])
    thinking = "\n".join(
        b["thinking"]
        for b in blocks
        if isinstance(b, dict)
        and b.get("type") == "thinking"
        and isinstance(b.get("thinking"), str)
    )
    calls = [
        {"id": b.get("id"), "name": b.get("name"), "arguments": json_text(b.get("input"))}
        for b in blocks
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]
    usage = got if isinstance(got := message.get("usage"), dict) else {}
    # Anthropic's input_tokens leaves out the cached prompt; the prompt's size is the sum.
    parts = [
        as_int(usage.get(k))
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    ]
    prompt = sum(p for p in parts if p is not None) if parts[0] is not None else None
    model = message.get("model") if isinstance(message.get("model"), str) else None
    reason = message.get("stop_reason")
    fields: dict[str, Any] = {
        "tool_calls": calls,
        "finish_reason_raw": reason if isinstance(reason, str) else None,
        "input_tokens": prompt,
        "output_tokens": as_int(usage.get("output_tokens")),
        "model": None if model == _SYNTHETIC else model,
        # Claude Code sends its tool set with every request.
        "tools_attached": model != _SYNTHETIC,
    }
    if line.get("isApiErrorMessage") is True or model == _SYNTHETIC:
        # Claude Code wrote this line itself: its zero usage is not the failed call's.
        fields.update(tools_attached=None, input_tokens=None, output_tokens=None)
        error = line.get("error")
        detail = error.get("message") if isinstance(error, dict) else error
        fields["error"] = " · ".join(str(x) for x in (detail, text) if x) or "API error"
        status = as_int(line.get("apiErrorStatus"))
        if status is None and isinstance(error, dict):
            status = as_int(error.get("status"))
        if status is None and (m := _STATUS.search(text)):
            status = int(m.group(1))
        fields["http_status"] = status
        if cap := _OUTPUT_CAP.search(text):
            fields["finish_reason_raw"] = "max_tokens"
            fields["max_output_tokens"] = count_of(cap.group(1).replace(",", ""))
    return {"role": "assistant", "content": text, "reasoning": thinking or None}, fields


def _user_turns(line: dict[str, Any]) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """The human's prompt (or a meta notice) and each tool result of a user line."""
    message = got if isinstance(got := line.get("message"), dict) else {}
    blocks = _blocks(message.get("content"))
    prompt = [b for b in blocks if not (isinstance(b, dict) and b.get("type") == "tool_result")]
    if prompt:
        actor = "system" if line.get("isMeta") is True else "user_sim"
        yield {"role": "user", "content": _text(prompt)}, {"actor": actor}
    for b in blocks:
        if isinstance(b, dict) and b.get("type") == "tool_result":
            content = b.get("content")
            text = _text(_blocks(content)) if not isinstance(content, str) else content
            fields: dict[str, Any] = {"tool_calls": []}
            if b.get("is_error") is True:
                fields["error"] = text or "tool error (is_error: true)"
            yield {"role": "tool", "content": text, "tool_call_id": b.get("tool_use_id")}, fields


def _only_results(line: dict[str, Any]) -> bool:
    """A user line that holds tool results and nothing the human wrote."""
    message = got if isinstance(got := line.get("message"), dict) else {}
    blocks = _blocks(message.get("content"))
    return bool(blocks) and all(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks
    )


def _new_blocks(have: list[Any], blocks: list[Any]) -> list[Any]:
    """The blocks of a line not already in the turn: a tool_use is known by its id."""
    seen = {b.get("id") for b in have if isinstance(b, dict) and b.get("type") == "tool_use"}
    return [
        b
        for b in blocks
        if not (isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id") in seen)
    ]


def _session_key(line: dict[str, Any]) -> str:
    session = line.get("sessionId", line.get("session_id"))
    session = session if isinstance(session, str) else "unknown"
    if line.get("isSidechain") is True:
        agent = line.get("agentId") if isinstance(line.get("agentId"), str) else "sidechain"
        return f"{session}/agent-{agent}"
    return session


def _retry(line: dict[str, Any]) -> dict[str, Any]:
    """A failed attempt Claude Code logged before retrying the call (system api_error)."""
    error = line.get("error")
    status = as_int(error.get("status")) if isinstance(error, dict) else None
    text = error.get("message") or error.get("formatted") if isinstance(error, dict) else error
    attempt, limit = as_int(line.get("retryAttempt")), as_int(line.get("maxRetries"))
    retry = f" (retry {attempt} of {limit})" if attempt is not None and limit is not None else ""
    detail = str(text) if text else f"HTTP {status}" if status else "API error"
    return {"tool_calls": [], "http_status": status, "error": f"{detail}{retry}", "model": None}


def _session(
    sessions: dict[str, _Session], line: dict[str, Any], run: Run, name: str, number: int
) -> _Session:
    key = _session_key(line)
    if key not in sessions:
        episode = Episode(
            run=run, source_path=name, source_line=number, source_format=FORMAT, task_id=key
        )
        sessions[key] = _Session(episode)
    return sessions[key]


def _result(line: dict[str, Any], episode: Episode) -> None:
    """The closing `result` line of `claude -p --output-format stream-json`: how it ended."""
    subtype = line.get("subtype")
    episode.termination_reason = subtype if isinstance(subtype, str) else None
    if line.get("is_error") is True:
        text = line.get("result")
        errors = line.get("errors")
        if not (isinstance(text, str) and text) and isinstance(errors, list) and errors:
            text = "; ".join(str(e) for e in errors)
        episode.error = (
            text if isinstance(text, str) and text else f"run ended in error ({subtype})"
        )


def ingest(path: Path, collector: Collector) -> int:
    name = str(path)
    run = Run(run_id=path.stem)
    sessions: dict[str, _Session] = {}
    metadata = 0
    # stream-json sessions (opened by a system init line) -> (closed by a result line, the last
    # line seen): one left open was cut.
    streams: dict[str, tuple[bool, str]] = {}
    for rec in jsonrecords.read(path, collector, FORMAT):
        with isolated(collector, name, rec.line, FORMAT):
            line = rec.value
            if not isinstance(line, dict):
                collector.reject(name, rec.line, "line is not a JSON object", "", FORMAT)
                continue
            kind = line.get("type")
            key = _session_key(line)
            if kind == "system" and line.get("subtype") == "init" and "session_id" in line:
                streams[key] = (False, "")
                _session(sessions, line, run, name, rec.line)  # an episode even if it stops here
            elif key in streams:
                streams[key] = (streams[key][0] or kind == "result", json_text(line) or "")
            if kind == "result" and "session_id" in line:
                _result(line, _session(sessions, line, run, name, rec.line).episode)
                continue
            if kind == "system" and line.get("subtype") == "api_error":
                s = _session(sessions, line, run, name, rec.line)
                s.open_id = None
                s.episode.add(rec.line, {"role": "assistant", "content": None}, **_retry(line))
                continue
            if kind not in ("user", "assistant"):
                metadata += 1
                continue
            if not isinstance(line.get("message"), dict):
                reason = f"{kind} line without a message object"
                collector.reject(name, rec.line, reason, excerpt(json_text(line)), FORMAT)
                continue
            s = _session(sessions, line, run, name, rec.line)
            ep = s.episode
            if kind == "assistant":
                msg_id = line["message"].get("id")
                blocks = _blocks(line["message"].get("content"))
                if isinstance(msg_id, str) and msg_id == s.open_id:
                    # Another block of the response already open: one turn, updated in place.
                    s.blocks[s.open_index].extend(_new_blocks(s.blocks[s.open_index], blocks))
                    message, fields = _assistant_fields(line, s.blocks[s.open_index])
                    first_line = ep.messages[s.open_index][0]
                    ep.messages[s.open_index] = (first_line, message)
                    ep.turn_fields[s.open_index] = fields
                    continue
                s.open_id, s.open_index = (
                    (msg_id if isinstance(msg_id, str) else None),
                    len(ep.messages),
                )
                s.blocks[s.open_index] = list(blocks)
                message, fields = _assistant_fields(line, blocks)
                ep.add(rec.line, message, **fields)
                continue
            if not _only_results(line):
                s.open_id = None  # the human spoke: the response is over
            for message, fields in _user_turns(line):
                ep.add(rec.line, message, **fields)
    crash = _ending.crash_text(collector, name)
    for key, (closed, last) in streams.items():
        if not closed and key in sessions:
            evidence = f"line {crash[0]}: {crash[1]}" if crash else f"last line: {last[:400]}"
            _ending.cut_off(sessions[key].episode, _ending.STREAM_JSON_UNFINISHED, evidence)
    for s in sessions.values():
        collector.add_episode(s.episode)
    if metadata:
        collector.note(
            name,
            f"{metadata} session metadata line(s) (summary, snapshots, notices) read, not turns",
        )
    return len(sessions)


SPECS = (
    FormatSpec(
        name=FORMAT,
        description="Claude Code session transcript (~/.claude/projects/*/*.jsonl)",
        detection="JSONL lines with parentUuid/sessionId, or a first summary (leafUuid), "
        "file-history-snapshot or other session line; stream-json output (system init line "
        "with session_id)",
        sniff=sniff,
        ingest=ingest,
        priority=810,
        columns=frozenset(
            {"content", "reasoning", "tool_calls", "tool_call_id", "finish_reason"}
            | {"finish_reason_raw", "input_tokens", "output_tokens", "max_output_tokens"}
            | {"tools_attached", "model", "http_status", "error"}
        ),
        benchmark=False,
        artifact="transcript",
        rerun=None,
        # A response's block lines are one turn and metadata lines are counted in the file's
        # note: not a line format for the robustness accounting.
        seeds={"claude_code": "tests/data/traces/claude_code/session_errors.jsonl"},
    ),
)
