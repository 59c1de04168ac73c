"""OpenHands event logs: the V1 SDK conversation directory and the older JSON event lists.

V1 (OpenHands software-agent-sdk) persists a conversation as `base_state.json` (the agent's LLM
config, `execution_status`) and `events/event-{idx:05d}-{id}.json`, one event per file, each
with a `kind`. Turns: `SystemPromptEvent` (system), `MessageEvent` (`llm_message` of the user,
the agent, or the environment's nudges), `ActionEvent` (an agent turn: `thought`,
`reasoning_content`/`thinking_blocks`, `tool_call`; the actions of one LLM response, same
`llm_response_id`, are one turn with several calls), `ObservationEvent`,
`UserRejectObservation` and `AgentErrorEvent` (tool results; the last two as errors).
`LLMCompletionLogEvent` carries the raw completion (`log_data`): the only place with the finish
reason and usage, matched to its turn by response id. `ConversationErrorEvent` is the
conversation's error, its `code` the termination reason (else base_state's
execution_status). The directory is one episode, read when its first event file is met; the
other event files and base_state.json say so in a note.

Before V1, OpenHands wrote a JSON list of events (`id`, `source`, `action` or `observation`,
`args`/`extras`, `tool_call_metadata.model_response` with the finish reason and usage), also
the `history` of each line of its evaluation `output.jsonl` (whose `metadata.llm_config` names
the model and its `max_output_tokens`). An `agent_state_changed`
observation's state is the termination reason; its `reason` when the state is `error` is the
episode's error.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from forensics import linear
from forensics.ingest import jsonrecords
from forensics.ingest.api import openai_chat
from forensics.ingest.formats import _ending
from forensics.ingest.parse import files, jsonhead, jsonwalk
from forensics.ingest.parse.apicommon import (
    as_dict,
    as_int,
    as_list,
    error_text,
    json_text,
    text_of,
)
from forensics.ingest.records import (
    Collector,
    Episode,
    Run,
    excerpt,
    isolated,
    reject_trailing,
    unreadable,
)
from forensics.ingest.registry import FormatSpec

FORMAT = "openhands_events"
FORMAT_LEGACY = "openhands_legacy"
FORMAT_STATE = "openhands_state"

_EVENT_NAME = re.compile(r"^event-(?P<idx>\d{5,})-[0-9a-fA-F\-]{8,}\.json$")
_HISTORY = re.compile(r'"history"\s*:\s*\[\s*(?:\]|\{\s*"id"\s*:)')
_MAX_ITERATION = linear.compile(r"Agent reached maximum iteration")
_STATE_KEYS = {"execution_status", "persistence_dir", "max_iterations", "stuck_detection"}
# Events that are no message of the conversation (state changes, pauses, condensation, token
# ids, streaming deltas, hooks): counted in the note.
_TURN_KINDS = {
    "SystemPromptEvent",
    "MessageEvent",
    "ActionEvent",
    "ObservationEvent",
    "UserRejectObservation",
    "AgentErrorEvent",
}


def sniff(head: str) -> str | None:
    keys = jsonhead.top_level(head)
    kind = keys.get("kind")
    if not isinstance(kind, str) or "source" not in keys:
        return None
    if ("id" in keys or "timestamp" in keys) and kind.endswith(("Event", "Observation")):
        return f"JSON object of kind {kind} with id and source (OpenHands V1 event)"
    return None


def claim(head: bytes, path: Path | None) -> str | None:
    """An event file in a conversation's events/ directory, by its name: a first event can
    hold a system prompt and tool schemas longer than the head detection sees."""
    if path is None or path.parent.name != "events" or not _EVENT_NAME.match(path.name):
        return None
    if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        return "events/event-NNNNN-<id>.json (OpenHands V1 conversation event)"
    return None


def sniff_state(head: str) -> str | None:
    keys = jsonhead.top_level(head)
    if "agent" in keys and "id" in keys and _STATE_KEYS & keys.keys():
        return "JSON object with id, agent and execution_status (OpenHands V1 base_state.json)"
    return None


def sniff_legacy(head: str) -> str | None:
    text = head.lstrip("\ufeff \t\r\n")
    if text.startswith("["):
        keys = jsonhead.top_level(text)
        if "source" in keys and ("action" in keys or "observation" in keys):
            return "JSON array of events with source and action/observation (OpenHands)"
        return None
    first = text.split("\n", 1)[0]
    # The history can start past the head when the instruction is long: EvalOutput's first
    # keys (instance_id, test_result, instruction) say what the line is.
    keys = jsonhead.top_level(first)
    history = _HISTORY.search(first) or {"test_result", "instruction"} <= keys.keys()
    if text.startswith("{") and "instance_id" in keys and history:
        return "JSON lines with instance_id and an event history (OpenHands evaluation output)"
    return None


# --- V1 -------------------------------------------------------------------------------------


def _texts(parts: Any) -> str | None:
    if isinstance(parts, dict):
        parts = [parts]
    return text_of(parts) if isinstance(parts, list | str) else None


def _reasoning(event: Mapping[str, Any]) -> str | None:
    if isinstance(event.get("reasoning_content"), str) and event["reasoning_content"]:
        return event["reasoning_content"]
    blocks = event.get("thinking_blocks")
    texts = (
        [as_dict(b).get("thinking") for b in blocks if isinstance(b, dict)]
        if isinstance(blocks, list)
        else []
    )
    thoughts = [t for t in texts if isinstance(t, str)]
    return "\n".join(thoughts) if thoughts else None


def _completion(log_data: Any) -> tuple[str | None, dict[str, Any]]:
    """(response id, turn columns) of an LLMCompletionLogEvent's JSON-encoded log."""
    try:
        data = jsonwalk.loads(log_data) if isinstance(log_data, str) else as_dict(log_data)
    except (ValueError, RecursionError):
        return None, {}
    response = as_dict(as_dict(data).get("response"))
    response_id = response.get("id") if isinstance(response.get("id"), str) else None
    return response_id, openai_chat.call_columns(response)


def _event_files(events_dir: Path) -> list[Path]:
    found = []
    for p in events_dir.iterdir():
        match = _EVENT_NAME.match(p.name)
        if match and p.is_file():
            found.append((int(match["idx"]), p.name, p))
    return [p for _, _, p in sorted(found)]


def _state_run(conversation: Path) -> tuple[Run, int | None, str | None]:
    """Run, output cap and execution status from the conversation's base_state.json."""
    run = Run(run_id=conversation.name or "openhands")
    state: dict[str, Any] = {}
    path = conversation / "base_state.json"
    if path.is_file():
        try:
            loaded = jsonwalk.loads(files.read_text(path))
            state = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError, RecursionError, files.TooLarge):
            state = {}
    llm = as_dict(as_dict(state.get("agent")).get("llm"))
    if isinstance(llm.get("model"), str):
        run.agent_model = llm["model"]
    if isinstance(llm.get("base_url"), str):
        run.agent_endpoint = llm["base_url"]
    status = state.get("execution_status")
    return run, as_int(llm.get("max_output_tokens")), status if isinstance(status, str) else None


def ingest(path: Path, collector: Collector) -> int:
    """A V1 event file: the whole conversation when it is the directory's first event."""
    name = str(path)
    events_dir = path.parent
    in_layout = _EVENT_NAME.match(path.name) is not None and events_dir.name == "events"
    event_files = _event_files(events_dir) if in_layout else [path]
    if event_files and event_files[0] != path:
        collector.note(name, f"event of the conversation read with {event_files[0].name}")
        collector.metadata_files.add(name)
        return 0
    conversation = events_dir.parent if in_layout else events_dir
    run, cap, status = (
        _state_run(conversation) if in_layout else (Run(run_id=path.stem), None, None)
    )
    ep = Episode(
        run=run,
        source_path=name,
        source_line=1,
        source_format=FORMAT,
        task_id=conversation.name if in_layout else path.stem,
        json_path="$",
    )
    ep.termination_reason = status
    completions: dict[str, dict[str, Any]] = {}
    response_turn: dict[str, int] = {}
    skipped = 0
    last_status: str | None = None  # the stream's own execution_status updates
    for where, line, event, json_path in _events(event_files, in_layout, path, collector):
        if not isinstance(event, dict):
            collector.reject(
                where, line, "event is not a JSON object", json_text(event) or "", FORMAT, json_path
            )
            continue
        with isolated(collector, where, line, FORMAT, json_path):
            kind = event.get("kind")
            if kind == "ConversationStateUpdateEvent" and event.get("key") == "execution_status":
                value = event.get("value")
                last_status = value if isinstance(value, str) else last_status
                skipped += 1
                continue
            if kind == "LLMCompletionLogEvent":
                response_id, fields = _completion(event.get("log_data"))
                if response_id:
                    completions[response_id] = fields
                continue
            if kind == "ConversationErrorEvent":
                code, detail = event.get("code"), error_text(event.get("detail"))
                ep.error = f"{code}: {detail}" if isinstance(code, str) else detail
                # the error's code (its exception type) says more than the last status
                ep.termination_reason = code if isinstance(code, str) else "error"
                continue
            if kind not in _TURN_KINDS:
                skipped += 1
                continue
            _add_v1(ep, event, kind, where, cap, response_turn, run, line)
    for response_id, index in response_turn.items():
        if response_id in completions:
            ep.turn_fields[index] |= completions[response_id]
    _mark_tools(ep, any(f.get("tool_count") for f in ep.turn_fields.values()))
    if skipped:
        ep.note = f"{skipped} event(s) that are no message (state updates, condensation, …)"
    # The conversation's last execution status, from its state file or its own updates: still
    # `running` when the events end means the run stopped while the agent worked.
    if (status or last_status) == "running" and ep.messages:
        last = ep.messages[-1][1]
        said = (text_of(last.get("content")) or "").strip()
        _ending.cut_off(
            ep, _ending.OPENHANDS_UNFINISHED, f"last event ({last.get('role')}): {said[-300:]}"
        )
    collector.add_episode(ep)
    return 1


def _events(
    event_files: list[Path], in_layout: bool, path: Path, collector: Collector
) -> Iterator[tuple[str, int, Any, str | None]]:
    """(source, line, event, JSON path) of a conversation's events: one per event file in
    the events/ layout; every record of a lone file (an event, or the JSONL a conversation's
    events are exported to, one per line)."""
    if not in_layout:
        name = str(path)
        for rec in jsonrecords.read(path, collector, FORMAT):
            yield name, rec.line, rec.value, rec.json_path
        return
    for event_path in event_files:
        where = str(event_path)
        try:
            event = jsonwalk.loads(files.read_text(event_path))
        except (ValueError, RecursionError) as exc:
            collector.reject(where, 1, f"invalid JSON: {exc}", "", FORMAT, "$")
            continue
        except (OSError, files.TooLarge) as exc:
            collector.reject(where, None, f"event not read: {exc}", "", FORMAT, "$")
            continue
        yield where, 1, event, "$"


def _add_v1(
    ep: Episode,
    event: dict[str, Any],
    kind: str,
    where: str,
    cap: int | None,
    response_turn: dict[str, int],
    run: Run,
    line: int = 1,
) -> None:
    source = event.get("source")
    if kind == "SystemPromptEvent":
        tools = event.get("tools")
        ep.add(
            line,
            {"role": "system", "content": _texts(event.get("system_prompt"))},
            actor="system",
            source_path=where,
            tool_count=len(tools) if isinstance(tools, list) else None,
        )
        return
    if kind == "MessageEvent":
        message = as_dict(event.get("llm_message"))
        role = message.get("role") if isinstance(message.get("role"), str) else None
        actor = {"user": "user_sim", "agent": "agent", "environment": "env"}.get(
            str(source), "unknown"
        )
        fields: dict[str, Any] = {"actor": actor, "source_path": where}
        if actor == "agent":
            fields |= {
                "reasoning": _reasoning(message),
                "max_output_tokens": cap,
                "model": run.agent_model,
            }
        ep.add(
            line,
            {
                "role": role,
                "content": _texts(message.get("content")),
                "tool_calls": message.get("tool_calls"),
            },
            **fields,
        )
        if actor == "agent" and isinstance(event.get("llm_response_id"), str):
            response_turn.setdefault(event["llm_response_id"], len(ep.messages) - 1)
        return
    if kind == "ActionEvent":
        call = as_dict(event.get("tool_call"))
        structured = {
            "id": call.get("id") or event.get("tool_call_id"),
            "name": call.get("name") or event.get("tool_name"),
            "arguments": json_text(call.get("arguments")),
        }
        structured = {k: v if isinstance(v, str) else None for k, v in structured.items()}
        response_id = event.get("llm_response_id")
        if isinstance(response_id, str) and response_id in response_turn:
            # another call of the same LLM response: the same turn
            index = response_turn[response_id]
            ep.turn_fields[index]["tool_calls"].append(structured)
            return
        ep.add(
            line,
            {"role": "assistant", "content": _texts(event.get("thought"))},
            actor="agent",
            source_path=where,
            reasoning=_reasoning(event),
            tool_calls=[structured],
            max_output_tokens=cap,
            model=run.agent_model,
        )
        if isinstance(response_id, str):
            response_turn[response_id] = len(ep.messages) - 1
        return
    error = None
    if kind == "ObservationEvent":
        observation = as_dict(event.get("observation"))
        content = _texts(observation.get("content"))
        if observation.get("is_error"):
            error = content or "tool error"
    elif kind == "UserRejectObservation":
        content = error_text(event.get("rejection_reason"))
        error = f"rejected: {content}"
    else:  # AgentErrorEvent: the tool call failed in the scaffold
        content = error_text(event.get("error"))
        error = content or "agent error"
    ep.add(line, {"role": "tool", "content": content}, actor="env", source_path=where, error=error)


def _mark_tools(ep: Episode, attached: bool) -> None:
    """Agent turns of an agent that was offered tools (V1: the system prompt event lists
    them) say so; otherwise it stays unknown."""
    if not attached:
        return
    for index, fields in ep.turn_fields.items():
        if fields.get("actor") == "agent":
            fields["tools_attached"] = True
            ep.turn_fields[index] = fields


def ingest_state(path: Path, collector: Collector) -> int:
    name = str(path)
    text = files.read_text(path)
    whole = jsonrecords.document(
        collector, name, text, FORMAT_STATE, "not a whole conversation state"
    )
    if whole is None:
        return 0
    if (path.parent / "events").is_dir():
        collector.note(name, "conversation state, applied to the events beside it")
    else:
        collector.note(name, "conversation state without an events directory: no turns")
    collector.metadata_files.add(name)
    return 0


# --- before V1 ------------------------------------------------------------------------------


class _Legacy:
    """Events of one pre-V1 history -> an episode."""

    def __init__(
        self, ep: Episode, collector: Collector, prefix: str, cap: int | None = None
    ) -> None:
        self.ep, self.collector, self.prefix, self.cap = ep, collector, prefix, cap
        self.response_turn: dict[str, int] = {}
        self.skipped = 0
        self.state: str | None = None

    def add(self, i: int, line: int, event: Any) -> None:
        where = f"{self.prefix}[{i}]"
        ep = self.ep
        if not isinstance(event, dict):
            self.collector.reject(
                ep.source_path,
                line,
                "event is not a JSON object",
                json_text(event) or "",
                ep.source_format,
                where,
            )
            return
        source = event.get("source")
        action, observation = event.get("action"), event.get("observation")
        metadata = as_dict(event.get("tool_call_metadata"))
        response = as_dict(metadata.get("model_response"))
        args, extras = as_dict(event.get("args")), as_dict(event.get("extras"))
        if observation == "agent_state_changed":
            state = extras.get("agent_state")
            if isinstance(state, str):
                self.state = state
                if state == "error" and extras.get("reason"):
                    ep.error = error_text(extras.get("reason"))
            return
        if isinstance(action, str):
            if action == "system":
                ep.add(
                    line,
                    {"role": "system", "content": text_of(args.get("content"))},
                    actor="system",
                )
            elif action == "message" and source == "user":
                ep.add(
                    line,
                    {"role": "user", "content": text_of(args.get("content"))},
                    actor="user_sim",
                )
            elif source == "agent" and action not in ("change_agent_state", "recall"):
                self._agent(line, event, args, metadata, response)
            else:
                self.skipped += 1
                return
        elif isinstance(observation, str) and observation not in ("null", "recall"):
            content = (
                event.get("content")
                if isinstance(event.get("content"), str)
                else event.get("message")
            )
            error = (text_of(content) or "error") if observation == "error" else None
            ep.add(line, {"role": "tool", "content": text_of(content)}, actor="env", error=error)
        else:
            self.skipped += 1
            return
        ep.json_paths[len(ep.messages) - 1] = where

    def _agent(
        self,
        line: int,
        event: dict[str, Any],
        args: Mapping[str, Any],
        metadata: Mapping[str, Any],
        response: Mapping[str, Any],
    ) -> None:
        ep = self.ep
        call_id = metadata.get("tool_call_id")
        calls = []
        if isinstance(metadata.get("function_name"), str):
            arguments = None
            choice = (
                as_dict((response.get("choices") or [{}])[0])
                if isinstance(response.get("choices"), list)
                else {}
            )
            for call in as_list(as_dict(choice.get("message")).get("tool_calls")):
                if isinstance(call, dict) and call.get("id") == call_id:
                    arguments = json_text(as_dict(call.get("function")).get("arguments"))
            calls.append(
                {
                    "id": call_id if isinstance(call_id, str) else None,
                    "name": metadata["function_name"],
                    "arguments": arguments,
                }
            )
        response_id = response.get("id")
        if isinstance(response_id, str) and response_id in self.response_turn:
            ep.turn_fields[self.response_turn[response_id]]["tool_calls"].extend(calls)
            return
        choices = response.get("choices")
        message = (
            as_dict(as_dict(choices[0]).get("message"))
            if isinstance(choices, list) and choices
            else {}
        )
        content = text_of(message.get("content"))
        if content is None:
            thought = (
                args.get("thought")
                or args.get("final_thought")
                or args.get("content")
                or event.get("message")
            )
            content = text_of(thought) if isinstance(thought, str | list) else None
        reasoning = message.get("reasoning_content")
        fields: dict[str, Any] = {
            "actor": "agent",
            "tool_calls": calls,
            "reasoning": reasoning if isinstance(reasoning, str) else None,
            "model": ep.run.agent_model,
            "max_output_tokens": self.cap,
        }
        fields |= openai_chat.call_columns(response)
        ep.add(line, {"role": "assistant", "content": content}, **fields)
        if isinstance(response_id, str):
            self.response_turn[response_id] = len(ep.messages) - 1

    def finish(self) -> None:
        self.ep.termination_reason = self.state
        # Calls recorded with tool_call_metadata: the agent ran with native function calling,
        # which offers the tools with every request.
        _mark_tools(self.ep, any(f.get("tool_calls") for f in self.ep.turn_fields.values()))
        if self.skipped:
            self.ep.note = (
                f"{self.skipped} event(s) that are no message (state changes, recalls, …)"
            )


def ingest_legacy(path: Path, collector: Collector) -> int:
    name = str(path)
    text = files.read_text(path)
    line_of = jsonwalk.LineCounter(text)
    start = jsonwalk.skip_ws(text, 0)
    if text[start : start + 1] != "[":
        return _ingest_output_jsonl(path, collector)
    ep = Episode(
        run=Run(run_id=path.parent.name or "openhands"),
        source_path=name,
        source_line=1,
        source_format=FORMAT_LEGACY,
        task_id=path.stem,
        json_path="$",
    )
    legacy = _Legacy(ep, collector, "$")
    try:
        end = start
        for i, (pos, event, stop) in enumerate(jsonwalk.elements(text, start)):
            end = stop
            if unreadable(
                collector, name, line_of(pos), event, FORMAT_LEGACY, f"$[{i}]", text, pos
            ):
                continue
            with isolated(collector, name, line_of(pos), FORMAT_LEGACY, f"$[{i}]"):
                legacy.add(i, line_of(pos), event)
        end = jsonwalk.skip_ws(text, end) + 1
    except jsonwalk.WalkError as exc:
        collector.reject(
            name,
            line_of(exc.pos),
            f"event list cut short: {exc.msg}",
            excerpt(text, exc.pos),
            FORMAT_LEGACY,
        )
    else:
        reject_trailing(collector, name, text, end, line_of, FORMAT_LEGACY)
    legacy.finish()
    collector.add_episode(ep)
    return 1


def _ingest_output_jsonl(path: Path, collector: Collector) -> int:
    """Evaluation output.jsonl: one instance per line, its `history` the event list."""
    name = str(path)
    count = 0
    for number, line in files.iter_lines(path):
        if line is None:
            collector.reject(name, number, "line too long to read", "", FORMAT_LEGACY)
            continue
        if not line.strip():
            continue
        try:
            record = jsonwalk.loads(line)
        except (ValueError, RecursionError) as exc:
            collector.reject(name, number, f"invalid JSON: {exc}", line, FORMAT_LEGACY)
            continue
        if not isinstance(record, dict) or not isinstance(record.get("history"), list):
            collector.reject(name, number, "not an instance with a history", line, FORMAT_LEGACY)
            continue
        with isolated(collector, name, number, FORMAT_LEGACY, "$"):
            metadata = as_dict(record.get("metadata"))
            llm = as_dict(metadata.get("llm_config"))
            run = Run(run_id=path.parent.name or "openhands")
            run.agent_model = llm.get("model") if isinstance(llm.get("model"), str) else None
            instance = record.get("instance_id")
            ep = Episode(
                run=run,
                source_path=name,
                source_line=number,
                source_format=FORMAT_LEGACY,
                task_id=str(instance) if instance is not None else None,
                json_path="$",
            )
            cap = as_int(llm.get("max_output_tokens"))
            legacy = _Legacy(ep, collector, "$.history", cap)
            for i, event in enumerate(record["history"]):
                legacy.add(i, number, event)
            legacy.finish()
            if record.get("error"):
                ep.error = error_text(record["error"])
                ep.termination_reason = ep.termination_reason or "error"
                # OpenHands' own words when the iteration budget ends a headless run
                # (`Agent reached maximum iteration in headless mode. Current iteration: N,
                # max iteration: N`): the step limit, not an exception of the harness.
                if ep.error and _MAX_ITERATION.search(ep.error):
                    ep.termination_reason = "max_iterations"
                    limit = as_int(metadata.get("max_iterations"))
                    if limit is not None:
                        run.labels["max_iterations"] = str(limit)
            collector.add_episode(ep)
            count += 1
    return count


# Agent turns with their reasoning and calls, tool results with their errors, and what the raw
# completion (V1: LLMCompletionLogEvent; before: tool_call_metadata.model_response) adds.
_COLUMNS = frozenset(
    {"content", "reasoning", "tool_calls", "model", "max_output_tokens", "tools_attached"}
    | {"error", "finish_reason", "finish_reason_raw", "input_tokens", "output_tokens"}
    | {"reasoning_tokens"}
)
_V1 = "tests/data/agents/openhands/v1/11111111222233334444555555555555"

SPECS = (
    FormatSpec(
        name=FORMAT,
        description="OpenHands V1 event (events/ directory)",
        detection="a file events/event-NNNNN-<id>.json of a conversation, or a JSON object "
        "whose kind ends in Event or Observation, with source and id or timestamp",
        claim=claim,
        sniff=sniff,
        ingest=ingest,
        priority=400,
        # V1 adds the offered tools (system prompt event) and the LLM's base_url.
        columns=_COLUMNS | {"tool_count", "endpoint"},
        benchmark=False,
        artifact="conversation",
        rerun=None,
        seeds={
            "openhands_events": f"{_V1}/events/"
            "event-00003-005e0000-0000-0040-0080-000000000003.json"
        },
    ),
    FormatSpec(
        name=FORMAT_STATE,
        description="OpenHands V1 base_state.json",
        detection="a JSON object with id, agent and execution_status, persistence_dir, "
        "max_iterations or stuck_detection",
        sniff=sniff_state,
        ingest=ingest_state,
        priority=410,
        columns=frozenset(),  # read for the model and cap of the events beside it
        benchmark=False,
        artifact="conversation",
        rerun=None,
        seeds={"openhands_state": f"{_V1}/base_state.json"},
    ),
    FormatSpec(
        name=FORMAT_LEGACY,
        description="OpenHands event list / evaluation output.jsonl (before V1)",
        detection="a JSON array of events with source and action or observation, or JSON lines "
        "with instance_id and an event history (evaluation output.jsonl)",
        sniff=sniff_legacy,
        ingest=ingest_legacy,
        priority=420,
        columns=_COLUMNS,
        benchmark=False,
        artifact="events",
        rerun=None,
        seeds={"openhands_legacy": "tests/data/agents/openhands/legacy/basic_interactions.json"},
    ),
)
