"""ShareGPT conversations with Hermes tool calls: hermes-agent trajectories and the Hermes
function-calling datasets (one record per JSONL line, or a JSON array of records).

A record is `{"conversations": [{"from": ..., "value": ...}, ...], ...}`; speakers are system,
human, gpt and tool. The Hermes protocol writes calls as text in `gpt` turns,
`<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`, and results in `tool` turns
inside `<tool_response>` tags; the tools offered sit in `tools` (a JSON string or a list) or in
the system prompt's `<tools>` block. hermes-agent adds `model` and `completed`, and keeps the
reasoning the API returned as a leading `<think>` block of the value: read back into the
reasoning column.

How a hermes-agent run ended (`run_agent.py`, `batch_runner.py`): `completed` is true only when
the agent gave a final response within its iteration budget. `partial: true` (batch runs) means
it stopped after the model called tools that do not exist three times in a row: termination
`invalid_tool_calls`, the model's. Out of iterations, hermes-agent asks for a summary with
"You've reached the maximum number of tool-calling iterations allowed…" (older versions answer
"I've reached the maximum number of iterations…" themselves): termination `max_iterations`,
the notice as the error. Any other `completed: false` run ended without its final answer (an
API failure, an interrupt): declared cut off (`_ending`).

A call is a structured call here, as a server's hermes parser would have made it: its markup
leaves the content. One that does not parse (cut off, broken JSON) stays a call with its raw
text as arguments, so it is seen as malformed instead of vanishing; the Python-dict spelling
the Hermes datasets use (`{'arguments': {...}, 'name': ...}`) is read as the dict it is.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from forensics import linear
from forensics.ingest import jsonrecords
from forensics.ingest.formats import _ending
from forensics.ingest.parse import jsonhead, jsonwalk
from forensics.ingest.records import Collector, Episode, Run, excerpt, isolated
from forensics.ingest.registry import FormatSpec

FORMAT = "sharegpt"

_ROLES = {
    "system": "system",
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "model": "assistant",
    "tool": "tool",
    "function_response": "tool",
    "observation": "tool",
    "ipython": "tool",
    "function-response": "tool",
    "tool_response": "tool",
    # The original ShareGPT scrape and Glaive-style function-calling sets.
    "chatgpt": "assistant",
    "bing": "assistant",
    "bard": "assistant",
    "function_call": "assistant",
    "function-call": "assistant",
}
# Speakers whose whole value is one call (`{"name": ..., "arguments": ...}`), not text.
_CALL_SPEAKERS = {"function_call", "function-call"}
_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.S)
# The prompt names the tags in prose ("within <tools> </tools> XML tags") before the block.
# RE2: under `re` every `<tools>[` of a text without a closer rescanned the rest (quadratic).
_TOOLS = linear.compile(rf"(?s)<tools>{linear.SPACE}*([\[{{].*?){linear.SPACE}*</tools>")
_NAME = re.compile(r"""["']name["']\s*:\s*["']([^"']+)["']""")
# hermes-agent exports the reasoning the API returned apart as a leading <think> block; only a
# closed block is the exporter's: an unclosed one is the model's own cut-off output.
_THINK = re.compile(r"\A\s*<think>(.*?)</think>\s*", re.S)
# hermes-agent's words when the iteration budget ran out: the request it sends the model
# (MAX_ITERATIONS_SUMMARY_REQUEST) and the answers older versions wrote themselves.
_ITERATION_LIMIT = linear.compile(
    r"reached the maximum number of tool-calling iterations|"
    r"(?:I've|I have|I) reached the maximum (?:number of )?iterations|"
    r"I reached the iteration limit"
)
HERMES_UNFINISHED = (
    "hermes-agent marked the run not completed (completed: false) and nothing in it says the "
    "iteration limit ended it: it ended without its final answer"
)


def sniff(head: str) -> str | None:
    keys = jsonhead.top_level(head)
    if "conversations" in keys and keys["conversations"] is None and '"from"' in head:
        return "records with conversations of from/value turns (ShareGPT, Hermes tool calls)"
    return None


def _call(body: str, index: int) -> dict[str, str | None]:
    """One <tool_call> body as a call; unparseable bodies keep their raw text as arguments."""
    text = body.strip()
    value = _literal(text)
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        args = value.get("arguments", value.get("parameters"))
        if not isinstance(args, str):
            args = json.dumps(args if args is not None else {}, ensure_ascii=False, sort_keys=True)
        return {"id": f"call_{index}", "name": value["name"], "arguments": args}
    name = _NAME.search(text)
    return {"id": f"call_{index}", "name": name.group(1) if name else None, "arguments": text}


def split_calls(value: str) -> tuple[str, list[dict[str, str | None]]]:
    """A gpt turn's text without its <tool_call> blocks, and the calls they hold."""
    calls = [_call(m.group(1), i) for i, m in enumerate(_CALL.finditer(value))]
    if not calls:
        return value, []
    return _CALL.sub("", value).strip(), calls


def leading_reasoning(text: str) -> tuple[str | None, str]:
    """(reasoning, the rest) of a text that opens with a closed <think> block, else (None, text).

    An unclosed block stays in the text: it is the model's own output cut off.
    """
    think = _THINK.match(text)
    if think is None:
        return None, text
    return think.group(1).strip(), text[think.end() :]


def _tools(record: dict[str, Any]) -> tuple[bool | None, int | None]:
    """(tools attached, how many) from `tools`, else from a <tools> block of the system turn."""
    tools = record.get("tools")
    if isinstance(tools, str) and tools.strip():
        try:
            tools = jsonwalk.loads(tools)
        except (json.JSONDecodeError, RecursionError):
            return True, None  # offered, in a spelling we can not count
    if isinstance(tools, list):
        return bool(tools), len(tools)
    turns = record.get("conversations")
    for turn in turns if isinstance(turns, list) else []:
        if isinstance(turn, dict) and turn.get("from") == "system":
            value = turn.get("value")
            block = _TOOLS.search(value) if isinstance(value, str) else None
            if block:
                listed = _literal(block.group(1))
                return True, len(listed) if isinstance(listed, list) else None
    return None, None


def _literal(text: str) -> Any:
    """A JSON value, or the Python literal the Hermes datasets print instead; None if neither."""
    try:
        return jsonwalk.loads(text)
    except (json.JSONDecodeError, RecursionError):
        pass
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _task_id(record: dict[str, Any]) -> str | None:
    for key in ("id", "prompt_index", "task_id"):
        value = record.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool):
            return str(value)
    return None


def _episode(
    run: Run, path: Path, rec: jsonrecords.Record, record: dict[str, Any], collector: Collector
) -> Episode | None:
    name = str(path)
    turns = record.get("conversations")
    base = rec.json_path or "$"
    if not isinstance(turns, list):
        reason = "record has no conversations list"
        collector.reject(name, rec.line, reason, excerpt(json.dumps(record)), FORMAT, rec.json_path)
        return None
    model = record.get("model") if isinstance(record.get("model"), str) else None
    attached, count = _tools(record)
    ep = Episode(
        run=run,
        source_path=name,
        source_line=rec.line,
        source_format=FORMAT,
        task_id=_task_id(record),
        json_path=rec.json_path,
    )
    for i, turn in enumerate(turns):
        where = f"{base}.conversations[{i}]"
        speaker = turn.get("from", turn.get("role")) if isinstance(turn, dict) else None
        # In a pretty-printed array each turn has its own line: its speaker key, found in order
        # (inside JSON strings a quote is escaped, so only keys match).
        key = '"from"' if isinstance(turn, dict) and "from" in turn else '"role"'
        line = rec.locate(key) if rec.locate is not None and isinstance(turn, dict) else rec.line
        role = _ROLES.get(speaker) if isinstance(speaker, str) else None
        if role is None:
            reason = (
                "turn is not an object"
                if not isinstance(turn, dict)
                else f"turn {i}: unknown speaker {speaker!r} (expected system, human, gpt, tool)"
            )
            collector.reject(name, line, reason, excerpt(json.dumps(turn)), FORMAT, where)
            continue
        value = turn.get("value", turn.get("content"))
        message: dict[str, Any] = {"role": role, "content": value}
        fields: dict[str, Any] = {}
        if role == "assistant":
            calls: list[dict[str, str | None]] = []
            if isinstance(value, str) and speaker in _CALL_SPEAKERS:
                message["content"], calls = "", [_call(value, 0)]
            elif isinstance(value, str):
                message["reasoning"], value = leading_reasoning(value)
                message["content"], calls = split_calls(value)
            fields = {
                "tool_calls": calls,
                "model": model,
                "tools_attached": attached,
                "tool_count": count,
            }
        ep.json_paths[len(ep.messages)] = where
        ep.add(line, message, **fields)
    if record.get("completed") is False:
        _hermes_end(ep, record)
    return ep


def _hermes_end(ep: Episode, record: dict[str, Any]) -> None:
    """How a hermes-agent run that did not complete ended (see the module's docstring)."""
    if record.get("partial") is True:
        ep.termination_reason = "invalid_tool_calls"
        ep.error = (
            "hermes-agent stopped the run as partial: the model called tools that do not exist "
            "three times in a row (partial: true)"
        )
        return
    for _, message in reversed(ep.messages):
        content = message.get("content")
        # the notice is a message of the run; a system prompt that mentions the limit is not one
        text = content if isinstance(content, str) and message.get("role") != "system" else ""
        if (found := _ITERATION_LIMIT.search(text)) is not None:
            ep.termination_reason = "max_iterations"
            start = text.rfind("\n", 0, found.start()) + 1
            ep.error = text[start : start + 300].strip()
            return
    last = next((m for _, m in reversed(ep.messages)), None)
    evidence = None
    if last is not None:
        said = last.get("content") if isinstance(last.get("content"), str) else ""
        evidence = f"last turn ({last.get('role')}): {said.strip()[-300:]}"
    _ending.cut_off(ep, HERMES_UNFINISHED, evidence)


def ingest(path: Path, collector: Collector) -> int:
    run = Run(run_id=path.stem)
    episodes = 0
    for rec in jsonrecords.read(path, collector, FORMAT):
        with isolated(collector, str(path), rec.line, FORMAT, rec.json_path):
            if not isinstance(rec.value, dict):
                collector.reject(
                    str(path), rec.line, "record is not a JSON object", "", FORMAT, rec.json_path
                )
                continue
            ep = _episode(run, path, rec, rec.value, collector)
            if ep is None:
                continue
            if run.agent_model is None and isinstance(rec.value.get("model"), str):
                run.agent_model = rec.value["model"]
            collector.add_episode(ep)
            episodes += 1
    return episodes


SPECS = (
    FormatSpec(
        name=FORMAT,
        description="ShareGPT conversations with Hermes <tool_call> text (hermes-agent, Hermes "
        "datasets)",
        detection="JSONL lines or a JSON array of objects with `conversations` of from/value turns",
        sniff=sniff,
        ingest=ingest,
        priority=800,
        columns=frozenset(
            {"content", "reasoning", "tool_calls", "model", "tools_attached", "tool_count"}
        ),
        benchmark=False,
        artifact="conversations",
        rerun=None,
        seeds={"sharegpt": "tests/data/traces/sharegpt/hermes_agent_trajectories.jsonl"},
    ),
)
