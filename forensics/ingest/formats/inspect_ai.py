"""Inspect AI evaluation logs: the `.eval` ZIP and the `.json` document, read directly.

One sample (id, epoch) is one trajectory. Its turns are `sample.messages`, the conversation as
the solver left it; each assistant message takes the model call that produced it from the
sample's events (`event: "model"`, matched by message id, else by text and tool-call ids,
else by order): the stop reason (stop, max_tokens, model_length, tool_calls, content_filter,
unknown; `length` in old logs), usage, the requested `config.max_tokens`, the tools offered
and the call's error. An assistant message whose `source` is `input` (a few-shot answer in
the sample's input) is prompt: actor system. Reasoning content parts (`type: reasoning`,
their summary when redacted) go to `reasoning`; a tool call whose arguments did not parse
(`parse_error`) and a tool result's `error` {type, message} become the turn's `error`. The
sample's `limit` (termination_reason `<type>_limit`, e.g. `token_limit`) and `error` end the
trajectory; the first score is its reward (C/I/P/N as Inspect's value_to_float reads them).

Condensed logs store long text once in `sample.attachments` and write `attachment://<hash>`
where it was; model events of newer logs keep their input as `input_refs` into a shared message
pool (`events_data.messages`, formerly `message_pool`). Turns come from the messages, which are
resolved from the attachments, so neither pool is needed.

Members of a `.eval` are located as `<archive>!<member>` (see zipmembers); a `.json` log by its
own path and the line of each message. Model calls that produced no message of the sample
(scorers, sub-agents) are counted in the trajectory's ingest_note, not read as turns.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from forensics.ingest import jsonrecords
from forensics.ingest.parse import files, jsonhead, jsonwalk, walkers, zipmembers
from forensics.ingest.parse.apicommon import (
    as_dict,
    as_float,
    as_int,
    error_text,
    json_text,
    tool_choice_text,
)
from forensics.ingest.records import (
    NESTED_TOO_DEEPLY,
    Collector,
    Episode,
    Run,
    excerpt,
    isolated,
    unreadable,
)
from forensics.ingest.registry import FormatSpec

FORMAT = "inspect_eval"
FORMAT_JSON = "inspect_json"

_ACTORS = {"assistant": "agent", "user": "user_sim", "tool": "env", "system": "system"}
_ATTACHMENT = "attachment://"
# Inspect's value_to_float for the letter grades.
_GRADES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_HEADER_MEMBERS = ("header.json", "_journal/start.json")


def claim(head: bytes, path: Path | None) -> str | None:
    if not head.startswith(zipmembers.ZIP_MAGIC):
        return None
    first = zipmembers.first_member_name(head) or ""
    if first in _HEADER_MEMBERS or first.startswith(("samples/", "_journal/")):
        return f"ZIP archive whose first member is {first} (Inspect AI .eval log)"
    if path is not None and path.suffix.lower() == ".eval":
        return "ZIP archive named .eval (Inspect AI log)"
    return None


def sniff_json(head: str) -> str | None:
    keys = jsonhead.top_level(head)
    if "eval" in keys and "version" in keys and ("status" in keys or "plan" in keys):
        return "JSON object with version, status and eval (Inspect AI log)"
    return None


# --- run ------------------------------------------------------------------------------------


def _run(log: Mapping[str, Any], fallback_id: str) -> tuple[Run, int | None]:
    """The run of a log header and the output cap its generate config requests."""
    spec = as_dict(log.get("eval"))
    task = spec.get("task") if isinstance(spec.get("task"), str) else None
    eval_id = spec.get("eval_id") or spec.get("task_id") or spec.get("run_id")
    run_id = f"{task}:{eval_id}" if task and isinstance(eval_id, str) else fallback_id
    run = Run(run_id=run_id)
    if isinstance(spec.get("model"), str):
        run.agent_model = spec["model"]
    if isinstance(spec.get("model_base_url"), str):
        run.agent_endpoint = spec["model_base_url"]
    cap = as_int(as_dict(spec.get("model_generate_config")).get("max_tokens"))
    if cap is None:
        cap = as_int(as_dict(as_dict(log.get("plan")).get("config")).get("max_tokens"))
    labels = {
        "task": task,
        "status": log.get("status"),
        "inspect_ai": as_dict(spec.get("packages")).get("inspect_ai"),
        "sandbox": as_dict(spec.get("sandbox")).get("type"),
        "request.max_tokens": cap,
    }
    run.labels.update({k: str(v) for k, v in labels.items() if isinstance(v, str | int)})
    return run, cap


# --- one sample -----------------------------------------------------------------------------


def _resolver(sample: dict[str, Any]) -> Callable[[Any], Any]:
    attachments = as_dict(sample.get("attachments"))

    def resolve(value: Any) -> Any:
        if isinstance(value, str):
            if value.startswith(_ATTACHMENT):
                found = attachments.get(value[len(_ATTACHMENT) :])
                return found if isinstance(found, str) else value
            return value
        if isinstance(value, list):
            return [resolve(v) for v in value]
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        return value

    return resolve


def _texts(content: Any) -> tuple[str | None, str | None]:
    """(visible text, reasoning) of a message's content: a string or a list of parts."""
    if content is None or isinstance(content, str):
        return content, None
    if not isinstance(content, list):
        return json.dumps(content, ensure_ascii=False, sort_keys=True), None
    texts, reasoning = [], []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif not isinstance(part, dict):
            continue
        elif part.get("type") == "reasoning":
            # A redacted block holds ciphertext; its summary is what can be read.
            text = part.get("summary") if part.get("redacted") else part.get("reasoning")
            if isinstance(text, str):
                reasoning.append(text)
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part.get("refusal"), str):
            texts.append(part["refusal"])
    return "\n".join(texts), ("\n".join(reasoning) if reasoning else None)


def _refusal(content: Any) -> str | None:
    """The refusal parts of an assistant message: a text part flagged `refusal: true` (what
    Inspect makes of an OpenAI refusal) or a part holding `refusal` text."""
    texts = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("refusal") is True and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part.get("refusal"), str) and not isinstance(part.get("text"), str):
            texts.append(part["refusal"])
    return "\n".join(texts) if texts else None


def _tool_calls(msg: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    calls, errors = [], []
    raw = msg.get("tool_calls")
    for call in raw if isinstance(raw, list) else []:
        if not isinstance(call, dict):
            continue
        name = call.get("function")
        calls.append(
            {
                "id": call.get("id") if isinstance(call.get("id"), str) else None,
                "name": name if isinstance(name, str) else None,
                "arguments": json_text(call.get("arguments")),
            }
        )
        if call.get("parse_error"):
            errors.append(f"tool call {name} arguments did not parse: {call['parse_error']}")
    return calls, errors


def _model_events(events: Any) -> Iterator[dict[str, Any]]:
    """Model events in log order, nested ones (old tool/subtask events) included."""
    for event in events if isinstance(events, list) else []:
        if not isinstance(event, dict):
            continue
        if event.get("event") == "model":
            yield event
        if isinstance(event.get("events"), list):
            yield from _model_events(event["events"])


def _choice(output: Any) -> dict[str, Any]:
    choices = as_dict(output).get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return {}


def _message_id(event: dict[str, Any]) -> str | None:
    message_id = as_dict(_choice(event.get("output")).get("message")).get("id")
    return message_id if isinstance(message_id, str) else None


class _Calls:
    """The sample's model calls, each given to at most one assistant message: the call whose
    output message has the message's id; else (ids differ between versions, or are absent)
    the first unused call whose output has the same text and tool-call ids; else, in logs
    without message ids, the next call without one."""

    def __init__(self, events: Any, resolve: Callable[[Any], Any]) -> None:
        self.resolve = resolve
        self.pending: dict[int, dict[str, Any]] = {id(e): e for e in _model_events(events)}
        self.by_id: dict[str, dict[str, Any]] = {}
        for event in self.pending.values():
            message_id = _message_id(event)
            if message_id is not None:
                self.by_id.setdefault(message_id, event)

    def take(
        self, msg: dict[str, Any], content: str | None, calls: list[dict[str, Any]]
    ) -> dict[str, Any] | None:
        message_id = msg.get("id") if isinstance(msg.get("id"), str) else None
        event = self.by_id.get(message_id) if message_id is not None else None
        if event is None or id(event) not in self.pending:
            ids = [c["id"] for c in calls]
            event = next((e for e in self.pending.values() if self._same(e, content, ids)), None)
        if event is None and message_id is None:
            event = next((e for e in self.pending.values() if _message_id(e) is None), None)
        if event is not None:
            del self.pending[id(event)]
        return event

    def _same(self, event: dict[str, Any], content: str | None, call_ids: list[Any]) -> bool:
        message = as_dict(self.resolve(_choice(event.get("output")).get("message")))
        text, _ = _texts(message.get("content"))
        calls, _ = _tool_calls(message)
        return text == content and [c["id"] for c in calls] == call_ids


def _call_fields(event: dict[str, Any], output: Any, cap: int | None) -> dict[str, Any]:
    """Turn columns from a model call: its event (request side) and output."""
    choice = _choice(output)
    usage = as_dict(as_dict(output).get("usage"))
    fields: dict[str, Any] = {
        "finish_reason_raw": choice.get("stop_reason")
        if isinstance(choice.get("stop_reason"), str)
        else None,
        "input_tokens": as_int(usage.get("input_tokens")),
        "output_tokens": as_int(usage.get("output_tokens")),
        "reasoning_tokens": as_int(usage.get("reasoning_tokens")),
    }
    config_cap = as_int(as_dict(event.get("config")).get("max_tokens"))
    fields["max_output_tokens"] = config_cap if config_cap is not None else cap
    if isinstance(event.get("tools"), list):
        fields["tools_attached"] = bool(event["tools"])
        fields["tool_count"] = len(event["tools"])
    if event.get("tool_choice") is not None:
        fields["tool_choice"] = tool_choice_text(event["tool_choice"])
    model = event.get("model") or as_dict(output).get("model")
    if isinstance(model, str):
        fields["model"] = model
    error = error_text(event.get("error")) or error_text(as_dict(output).get("error"))
    if error:
        fields["error"] = error
    return fields


def _score(scores: Any) -> float | None:
    for score in as_dict(scores).values():
        value = as_dict(score).get("value")
        if isinstance(value, bool):
            return float(value)
        if isinstance(value, int | float):
            return as_float(value)
        if isinstance(value, str):
            grade = _GRADES.get(value.strip().upper())
            if grade is not None:
                return grade
            if value.strip().lower() in ("yes", "true", "correct"):
                return 1.0
            if value.strip().lower() in ("no", "false", "incorrect"):
                return 0.0
        return None  # the first scorer decides; a dict or list value is no single reward
    return None


def _episode(
    collector: Collector,
    fmt: str,
    sample: dict[str, Any],
    offsets: dict[int, int],
    run: Run,
    cap: int | None,
    source_path: str,
    line_of: Callable[[int], int],
    start: int,
    json_prefix: str,
) -> Episode:
    """A sample as an episode; offsets locate its messages and events (by their id)."""
    resolve = _resolver(sample)
    epoch = sample.get("epoch")
    ep = Episode(
        run=run,
        source_path=source_path,
        source_line=line_of(start),
        source_format=fmt,
        task_id=str(sample["id"]) if isinstance(sample.get("id"), str | int) else None,
        trial=epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else None,
        reward=_score(sample.get("scores")),
        json_path=json_prefix,
    )
    limit = as_dict(sample.get("limit"))
    error = error_text(as_dict(sample.get("error")).get("message") or sample.get("error"))
    if not isinstance(limit.get("type"), str):  # logs before sample.limit: the limit event
        logged = got if isinstance(got := sample.get("events"), list) else []
        limit = next((e for e in logged if as_dict(e).get("event") == "sample_limit"), {})
    if isinstance(limit.get("type"), str):
        ep.termination_reason = f"{limit['type']}_limit"
    elif error:
        ep.termination_reason = "error"
    ep.error = error

    events = sample.get("events")
    if not isinstance(events, list):
        events = as_dict(sample.get("transcript")).get("events")
    calls = _Calls(events, resolve)
    messages = sample["messages"] if isinstance(sample.get("messages"), list) else []
    assistants = [i for i, m in enumerate(messages) if as_dict(m).get("role") == "assistant"]
    final = sample.get("output")

    for i, msg in enumerate(messages):
        where = f"{json_prefix}.messages[{i}]"
        line = line_of(offsets.get(id(msg), start))
        if unreadable(collector, source_path, line, msg, fmt, where):
            continue
        if not isinstance(msg, dict):
            collector.reject(
                source_path, line, "message is not a JSON object", json_text(msg) or "", fmt, where
            )
            continue
        msg = resolve(msg)
        role = msg.get("role") if isinstance(msg.get("role"), str) else None
        content, reasoning = _texts(msg.get("content"))
        fields: dict[str, Any] = {
            "actor": _ACTORS.get(role, "unknown") if role else "unknown",
            "reasoning": reasoning,
        }
        errors: list[str] = []
        if role == "assistant" and msg.get("source") == "input":
            # A few-shot answer written into the sample's input: prompt, not model output.
            fields["actor"] = "system"
        elif role == "assistant":
            calls_, errors = _tool_calls(msg)
            fields["tool_calls"] = calls_
            fields["model"] = msg.get("model") if isinstance(msg.get("model"), str) else None
            fields["model"] = fields["model"] or run.agent_model
            fields["max_output_tokens"] = cap
            event = calls.take(msg, content, calls_)
            if event is not None:
                fields |= _call_fields(event, resolve(event.get("output")), cap)
            elif i == assistants[-1] and isinstance(final, dict):
                # Logs without model events: the sample's output is its last call.
                fields |= _call_fields({}, resolve(final), cap)
            if fields.get("error"):
                errors.insert(0, fields["error"])
        elif role == "tool":
            tool_error = msg.get("error")
            if tool_error:
                errors.append(error_text(tool_error) or "tool error")
        fields["error"] = "; ".join(errors) if errors else None
        message = {"role": role, "content": content}
        if role == "assistant":
            message["refusal"] = _refusal(msg.get("content"))
        ep.add(line, message, **fields)
        ep.json_paths[len(ep.messages) - 1] = where

    # A call that failed produced no message; it ended the sample or was retried. Like a failed
    # request in a capture, it is an agent turn with the error, after the messages.
    for event in list(calls.pending.values()):
        if error_text(event.get("error")):
            del calls.pending[id(event)]
            fields = _call_fields(event, resolve(event.get("output")), cap)
            line = line_of(offsets.get(id(event), start))
            ep.add(line, {"role": "assistant", "content": None}, actor="agent", **fields)
            ep.json_paths[len(ep.messages) - 1] = f"{json_prefix}.events"
    outside = len(calls.pending)
    if outside:
        ep.note = (
            f"{outside} model call(s) produced no message of the sample (scorers, sub-agents, "
            "retries): not read as turns"
        )
    return ep


# --- files ----------------------------------------------------------------------------------


def _sample_walker(text: str, pos: int) -> tuple[dict[str, Any], int]:
    return jsonwalk.obj(
        text, pos, {"messages": walkers.positioned(), "events": walkers.positioned()}
    )


def _split(sample: dict[str, Any]) -> tuple[dict[str, Any], dict[int, int]]:
    """A walked sample with plain messages and events, and where each of them starts (by the
    id of the element)."""
    offsets: dict[int, int] = {}
    for key in ("messages", "events"):
        walked = walkers.items(sample, key)
        if walked is not None:
            sample[key] = [m for _, m in walked]
            offsets |= {id(m): p for p, m in walked}
    return sample, offsets


def _add_sample(
    collector: Collector,
    text: str,
    source_path: str,
    run: Run,
    cap: int | None,
    fmt: str,
    line_of: Callable[[int], int],
    start: int,
    sample: Any,
    json_prefix: str,
) -> int:
    if not isinstance(sample, dict):
        collector.reject(
            source_path,
            line_of(start),
            "sample is not a JSON object",
            excerpt(text, start),
            fmt,
            json_prefix,
        )
        return 0
    sample, offsets = _split(sample)
    if not isinstance(sample.get("messages", []), list):
        bad = json_text(sample["messages"]) or ""
        collector.reject(
            source_path,
            line_of(start),
            "messages is not an array",
            bad,
            fmt,
            f"{json_prefix}.messages",
        )
    ep = _episode(
        collector, fmt, sample, offsets, run, cap, source_path, line_of, start, json_prefix
    )
    collector.add_episode(ep)
    return 1


def ingest_json(path: Path, collector: Collector) -> int:
    name = str(path)
    text = files.read_text(path)
    read = jsonrecords.document(
        collector,
        name,
        text,
        FORMAT_JSON,
        "not a whole Inspect AI log",
        lambda t, pos: jsonwalk.obj(t, pos, {"samples": walkers.positioned(_sample_walker)}),
    )
    if read is None:
        return 0
    log, line_of = read.value, read.line_of
    run, cap = _run(log, path.stem)
    samples = walkers.items(log, "samples")
    if samples is None:
        bad = json_text(log["samples"]) or ""
        collector.reject(name, 1, "samples is not an array", bad, FORMAT_JSON, "$.samples")
        return 0
    if not samples:
        collector.note(name, _no_samples(log))
        return 0
    count = 0
    for i, (pos, sample) in enumerate(samples):
        where = f"$.samples[{i}]"
        if unreadable(collector, name, line_of(pos), sample, FORMAT_JSON, where, text, pos):
            continue
        with isolated(collector, name, line_of(pos), FORMAT_JSON, where):
            count += _add_sample(
                collector, text, name, run, cap, FORMAT_JSON, line_of, pos, sample, where
            )
    return count


def _no_samples(log: Mapping[str, Any]) -> str:
    status = log.get("status") if isinstance(log.get("status"), str) else "unknown"
    error = error_text(as_dict(log.get("error")).get("message"))
    return f"Inspect AI log without samples (status {status}" + (f": {error})" if error else ")")


def ingest_eval(path: Path, collector: Collector) -> int:
    try:
        return _read_eval(path, collector)
    except zipmembers.UNREADABLE as exc:
        # The central directory is read before any member: nothing was read from this file.
        reason = f"not a readable ZIP archive ({type(exc).__name__}: {exc})"
        collector.reject(str(path), None, reason, "", FORMAT)
        return 0


def _wanted(name: str) -> bool:
    # Summaries, reductions and the journal's summaries repeat what the samples hold.
    return name in _HEADER_MEMBERS or (name.startswith("samples/") and name.endswith(".json"))


def _read_eval(path: Path, collector: Collector) -> int:
    name = str(path)
    run: Run | None = None
    cap: int | None = None
    log: Mapping[str, Any] = {}
    count = 0
    rejected = 0
    samples_seen = 0
    for member in zipmembers.members(path, first=_HEADER_MEMBERS, wanted=_wanted):
        where = zipmembers.member_path(name, member.name)
        if member.data is None:
            collector.reject(where, None, member.problem or "not read", "", FORMAT, "$")
            rejected += 1
            continue
        text = member.data.decode("utf-8", errors="replace").lstrip("\ufeff")
        if member.name in _HEADER_MEMBERS:
            if run is not None:
                continue  # the header supersedes the journal's start; both name the run
            try:
                log = as_dict(jsonwalk.loads(text))
            except (ValueError, RecursionError) as exc:
                reason = NESTED_TOO_DEEPLY if isinstance(exc, RecursionError) else str(exc)
                collector.reject(where, 1, f"invalid JSON: {reason}", text, FORMAT, "$")
                rejected += 1
                continue  # the journal's start, when there is one, names the run
            run, cap = _run(log, path.stem)
            continue
        samples_seen += 1
        if run is None:
            run, cap = _run({}, path.stem)
        with isolated(collector, where, 1, FORMAT, "$"):
            read = jsonrecords.document(
                collector, where, text, FORMAT, "invalid JSON", _sample_walker, json_path="$"
            )
            if read is None:
                rejected += 1
                continue
            count += _add_sample(
                collector, text, where, run, cap, FORMAT, read.line_of, read.start, read.value, "$"
            )
    if count == 0:
        if run is None and samples_seen == 0 and rejected == 0:
            reason = "ZIP archive without Inspect AI log members (header.json, samples/)"
            collector.reject(name, None, reason, "", FORMAT)
        elif samples_seen == 0 and rejected == 0:
            collector.note(name, _no_samples(log))
        elif rejected:
            collector.note(name, f"{rejected} member(s) rejected (see rejects)")
    return count


# What a model event and its message give a turn (_call_fields, _episode).
_COLUMNS = frozenset(
    {
        "content", "reasoning", "tool_calls", "finish_reason", "finish_reason_raw",
        "input_tokens", "output_tokens", "reasoning_tokens", "max_output_tokens",
        "tools_attached", "tool_count", "tool_choice", "model", "endpoint", "error", "refusal",
    }
)  # fmt: skip
# The plan reruns samples by id: Inspect's --sample-id takes them comma-separated.
_RERUN = "inspect eval: --sample-id {tasks}"

SPECS = (
    FormatSpec(
        name=FORMAT,
        description="Inspect AI .eval log (ZIP of JSON members, deflate or zstd)",
        detection="a ZIP archive whose first member is header.json, _journal/… or samples/…, "
        "or any ZIP archive named .eval",
        claim=claim,
        ingest=ingest_eval,
        priority=100,
        columns=_COLUMNS,
        benchmark=False,
        artifact="log",
        rerun=_RERUN,
        rerun_separator=",",
        seeds={"inspect_eval": "tests/data/agents/inspect/log_formats.eval"},
    ),
    FormatSpec(
        name=FORMAT_JSON,
        description="Inspect AI .json log",
        detection="a JSON object with version and eval, and status or plan",
        sniff=sniff_json,
        ingest=ingest_json,
        priority=110,
        columns=_COLUMNS,
        benchmark=False,
        artifact="log",
        rerun=_RERUN,
        rerun_separator=",",
        seeds={"inspect_json": "tests/data/agents/inspect/synthetic_failures.json"},
    ),
)
