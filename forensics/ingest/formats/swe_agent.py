"""SWE-agent `.traj` files and mini-swe-agent trajectories (`*.traj.json`).

SWE-agent (`sweagent/types.py`, docs/usage/trajectories.md) writes `{environment, trajectory,
history, info, replay_config}`: `history` is the conversation the model saw, with `thought`,
`action`, OpenAI-shaped `tool_calls` and `thinking_blocks` on assistant items, and
observations as `role: tool` or (v0.x, thought-action parsers) user messages: every user
message after the agent's first turn is one (SWE-agent marks the task itself an
observation). Demonstrations inlined in the history (`is_demo`) are few-shot examples, not
turns; the trajectory's ingest_note counts them. `info.exit_status` is the termination reason
as SWE-agent spells it (submitted, exit_cost, exit_context, exit_format, `submitted
(exit_cost)`, …); `info.model_stats` holds the run's token and call totals (labels);
`replay_config` names the model, its `completion_kwargs.max_tokens`, and whether tools went
with each request (`parse_function.type: function_calling`).

mini-swe-agent (docs/usage/output_files.md) writes `{info, messages, trajectory_format}`:
OpenAI-format messages whose `extra.response` is the raw API response of an assistant turn
(finish reason, usage, model), observations as user messages (`role: tool` for tool-calling
models), and the end as a last `role: exit` message or `info.exit_status` (Submitted,
LimitsExceeded, TimeExceeded, RepeatedFormatError, an exception's class name with
`exception_str`). Its own test data and early runs are a bare JSON list of the messages,
recognised by the protocol words of its system prompt (`mswea_bash_command`,
`COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`).

A reply the harness can not parse (not exactly one action block, a bad tool call) is answered
by a user message rendered from `format_error_template`. Before v2 the reply itself is the
assistant message before it; from v2 on (`models/utils/actions_text.py`, `litellm_model.py`)
the reply never becomes a message: the format-error message carries it in `extra`
(`interrupt_type: FormatError`, `n_actions`, `model_response`, and the raw API `response`). The
reply is read back from there as the agent turn it was, before the harness's answer, which is
marked `error` FormatError. `LimitsExceeded` is read as the limit it was when the config and
the stats say (`max_iterations` at the step limit, `cost_limit` at the cost limit),
`TimeExceeded` as `time_limit`. v2 saves the trajectory after every step and ends it with the
`exit` message: one without it and without an exit status was cut mid-run (`_ending`).

Neither carries a reward: the benchmark's evaluation scores the submission elsewhere.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from forensics import linear
from forensics.ingest import jsonrecords
from forensics.ingest.api import openai_chat
from forensics.ingest.formats import _ending
from forensics.ingest.parse import files, jsonhead, jsonwalk, walkers
from forensics.ingest.parse.apicommon import (
    as_dict,
    as_float,
    as_int,
    error_text,
    json_text,
    text_of,
)
from forensics.ingest.records import Collector, Episode, Run, excerpt, unreadable
from forensics.ingest.registry import FormatSpec

FORMAT = "swe_agent_traj"
FORMAT_MINI = "mini_swe_agent"

_STEP = re.compile(
    r'"trajectory"\s*:\s*\[\s*(?:\]|\{\s*"(?:action|observation|response|thought|state|query|'
    r'execution_time|extra_info)")'
)
# mini-swe-agent's model_stats open with instance_cost (SWE-agent's with total_cost): enough
# when a long config pushes mini_version past the head.
_MINI = re.compile(
    r'"mini_version"\s*:|"trajectory_format"\s*:\s*"mini-swe-agent|'
    r'"model_stats"\s*:\s*\{\s*"instance_cost"'
)


# A history-only .traj (SWE-agent's demonstrations): its messages carry SWE-agent's own keys.
_HISTORY_ONLY = linear.compile(
    r'(?s)\A\{\s*"history"\s*:\s*\[\s*\{[^\[\]]*?"(?:agent|message_type)"\s*:'
)


def sniff(head: str) -> str | None:
    text = head.lstrip("\ufeff \t\r\n")
    if text.startswith("{") and _STEP.search(text):
        return "JSON object with a trajectory of action/observation steps (SWE-agent .traj)"
    if _HISTORY_ONLY.match(text):
        return "JSON object with a history of SWE-agent messages (agent, message_type): a .traj"
    return None


# The words of mini-swe-agent's own prompts (its action fence and submission command): a bare
# list of messages that opens with them is its message list.
_MINI_PROTOCOL = linear.compile(
    r"mswea_bash_command|COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT|MINI_SWE_AGENT_FINAL_OUTPUT"
)
_LIST_HEAD = linear.compile(r'\A\[\s*\{\s*"role"\s*:\s*"system"')


def sniff_mini(head: str) -> str | None:
    text = head.lstrip("\ufeff \t\r\n")
    if _LIST_HEAD.match(text) and _MINI_PROTOCOL.search(text):
        return "JSON list of messages whose system prompt is mini-swe-agent's (its action format)"
    if not text.startswith("{") or not _MINI.search(text):
        return None
    keys = jsonhead.top_level(text)
    if "messages" in keys or "info" in keys or "trajectory_format" in keys:
        return "JSON object with info.mini_version / trajectory_format (mini-swe-agent)"
    return None


def _document(
    path: Path, collector: Collector, fmt: str, key: str
) -> tuple[dict[str, Any], Callable[[int], int]] | None:
    """The file's object with `key` walked as [(offset, item)], or None once rejected."""
    name = str(path)
    text = files.read_text(path)
    # mini-swe-agent's bare message list: the messages are the whole document.
    bare = fmt == FORMAT_MINI and text.lstrip("\ufeff \t\r\n").startswith("[")
    read = jsonrecords.document(
        collector,
        name,
        text,
        fmt,
        "not a whole trajectory file",
        walkers.positioned()
        if bare
        else lambda text, pos: jsonwalk.obj(text, pos, {key: walkers.positioned()}),
        skip_bom=bare,
    )
    if read is None:
        return None
    doc, line_of = ({key: read.value} if bare else read.value), read.line_of
    if walkers.items(doc, key) is None:
        collector.reject(
            name, 1, f"{key} is not an array", json_text(doc[key]) or "", fmt, f"$.{key}"
        )
        doc[key] = []
    return doc, line_of


def _walked(doc: dict[str, Any], key: str) -> list[tuple[int, Any]]:
    return walkers.items(doc, key) or []


def _thinking(item: dict[str, Any]) -> str | None:
    blocks = item.get("thinking_blocks")
    blocks = blocks if isinstance(blocks, list) else []
    texts = [
        b["thinking"] for b in blocks if isinstance(b, dict) and isinstance(b.get("thinking"), str)
    ]
    if texts:
        return "\n".join(texts)
    reasoning = item.get("reasoning_content")
    return reasoning if isinstance(reasoning, str) else None


def _agent_config(replay: Any) -> dict[str, Any]:
    """The agent section of replay_config (a JSON string in SWE-agent 1.x files)."""
    if isinstance(replay, str):
        try:
            replay = jsonwalk.loads(replay)
        except (ValueError, RecursionError):
            return {}
    return dict(as_dict(as_dict(replay).get("agent")))


def _request_side(agent: dict[str, Any]) -> dict[str, Any]:
    """Columns every agent turn shares: the cap of the model config and whether tools went
    with each request (function calling; thought-action parsers describe them in the prompt)."""
    model = as_dict(agent.get("model"))
    kwargs = as_dict(model.get("completion_kwargs"))
    parser = as_dict(as_dict(agent.get("tools")).get("parse_function")).get("type")
    fields: dict[str, Any] = {
        "max_output_tokens": as_int(kwargs.get("max_tokens"))
        or as_int(kwargs.get("max_completion_tokens")),
        "tools_attached": parser == "function_calling" if isinstance(parser, str) else None,
    }
    if isinstance(model.get("api_base"), str):
        fields["endpoint"] = model["api_base"]
    return fields


def _stats_labels(stats: Any, prefix: str) -> dict[str, str]:
    return {
        f"{prefix}.{k}": str(v)
        for k, v in as_dict(stats).items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    }


def ingest(path: Path, collector: Collector) -> int:
    """A SWE-agent .traj: one trajectory."""
    read = _document(path, collector, FORMAT, "history")
    if read is None:
        return 0
    doc, line_of = read
    name = str(path)
    info = as_dict(doc.get("info"))
    agent = _agent_config(doc.get("replay_config"))
    model = as_dict(agent.get("model")).get("name")
    run = Run(run_id=path.parent.name or "swe-agent")
    run.agent_model = model if isinstance(model, str) else None
    request = _request_side(agent)
    run.labels.update(_stats_labels(info.get("model_stats"), "model_stats"))
    if isinstance(info.get("swe_agent_version"), str):
        run.labels["swe_agent_version"] = info["swe_agent_version"]
    status = info.get("exit_status")
    ep = Episode(
        run=run,
        source_path=name,
        source_line=1,
        source_format=FORMAT,
        task_id=path.name.removesuffix(".traj").removesuffix(".json") or None,
        termination_reason=status if isinstance(status, str) and status else None,
        json_path="$",
    )
    if isinstance(status, str) and "error" in status:
        ep.error = status
    demos = 0
    acted = False
    for i, (pos, item) in enumerate(_walked(doc, "history")):
        where = f"$.history[{i}]"
        if unreadable(collector, name, line_of(pos), item, FORMAT, where):
            continue
        if not isinstance(item, dict):
            collector.reject(
                name,
                line_of(pos),
                "history item is not a JSON object",
                excerpt(json.dumps(item)),
                FORMAT,
                where,
            )
            continue
        if item.get("is_demo"):
            demos += 1
            continue
        role = item.get("role") if isinstance(item.get("role"), str) else None
        if role == "assistant":
            actor, acted = "agent", True
        elif role == "tool" or (role == "user" and acted):
            actor = "env"
        else:
            actor = {"system": "system", "user": "user_sim"}.get(role or "", "unknown")
        fields: dict[str, Any] = {"actor": actor}
        if actor == "agent":
            fields |= {"reasoning": _thinking(item), "model": run.agent_model} | request
        message = {
            "role": role,
            "content": item.get("content"),
            "tool_calls": item.get("tool_calls"),
        }
        ep.add(line_of(pos), message, **fields)
        ep.json_paths[len(ep.messages) - 1] = where
    if demos:
        ep.note = f"{demos} demonstration message(s) (is_demo) are few-shot examples, not turns"
    collector.add_episode(ep)
    return 1


# --- mini-swe-agent -------------------------------------------------------------------------


_MINI_ACTORS = {"assistant": "agent", "tool": "env", "system": "system", "user": "user_sim"}


def _response_fields(extra: Mapping[str, Any], cap: int | None) -> dict[str, Any]:
    response = as_dict(extra.get("response"))
    fields: dict[str, Any] = {**openai_chat.call_columns(response), "max_output_tokens": cap}
    cost = extra.get("cost")
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        fields["cost_usd"] = as_float(cost)
    choice = openai_chat.first_choice(response.get("choices"))
    reasoning = as_dict(choice.get("message")).get("reasoning_content")
    if isinstance(reasoning, str):
        fields["reasoning"] = reasoning
    return fields


def ingest_mini(path: Path, collector: Collector) -> int:
    read = _document(path, collector, FORMAT_MINI, "messages")
    if read is None:
        return 0
    doc, line_of = read
    name = str(path)
    info = as_dict(doc.get("info"))
    model_config = as_dict(as_dict(info.get("config")).get("model"))
    kwargs = as_dict(model_config.get("model_kwargs"))
    cap = as_int(kwargs.get("max_tokens")) or as_int(kwargs.get("max_completion_tokens"))
    run = Run(run_id=path.parent.parent.name or path.parent.name or "mini-swe-agent")
    if isinstance(model_config.get("model_name"), str):
        run.agent_model = model_config["model_name"]
    run.labels.update(_stats_labels(info.get("model_stats"), "model_stats"))
    if isinstance(info.get("mini_version"), str):
        run.labels["mini_version"] = info["mini_version"]
    stem = path.name.removesuffix(".json").removesuffix(".traj")
    ep = Episode(
        run=run,
        source_path=name,
        source_line=1,
        source_format=FORMAT_MINI,
        task_id=stem or None,
        json_path="$",
    )
    status = info.get("exit_status")
    error = None
    seen_user = False
    exited = False
    for i, (pos, msg) in enumerate(_walked(doc, "messages")):
        where = f"$.messages[{i}]"
        if unreadable(collector, name, line_of(pos), msg, FORMAT_MINI, where):
            continue
        if not isinstance(msg, dict):
            collector.reject(
                name,
                line_of(pos),
                "message is not a JSON object",
                excerpt(json.dumps(msg)),
                FORMAT_MINI,
                where,
            )
            continue
        extra = as_dict(msg.get("extra"))
        if isinstance(extra.get("exit_status"), str) and extra["exit_status"]:
            status = extra["exit_status"]
            error = error_text(extra.get("exception_str")) or error
        role = msg.get("role") if isinstance(msg.get("role"), str) else None
        if role == "exit":
            exited = True
            continue  # the end of the run, read above; not a message the model saw
        rejected = extra.get("interrupt_type") == "FormatError"
        if rejected:
            _rejected_reply(ep, line_of(pos), where, extra, run, cap)
        actor = _MINI_ACTORS.get(role or "", "unknown")
        if role == "user" and seen_user:
            actor = "env"  # observations and format-error feedback from the harness
        seen_user = seen_user or role == "user"
        fields: dict[str, Any] = {"actor": actor}
        if actor == "agent":
            fields["model"] = run.agent_model
            reasoning = msg.get("reasoning_content")
            fields["reasoning"] = reasoning if isinstance(reasoning, str) else None
            fields |= _response_fields(extra, cap)
        elif rejected:
            n = as_int(extra.get("n_actions"))
            fields["error"] = "FormatError" + (f" (found {n} actions)" if n is not None else "")
        ep.add(
            line_of(pos),
            {
                "role": role,
                "content": text_of(msg.get("content")),
                "tool_calls": msg.get("tool_calls"),
            },
            **fields,
        )
        ep.json_paths[len(ep.messages) - 1] = where
    ep.termination_reason = status if isinstance(status, str) and status else None
    ep.error = error
    _mini_limits(ep, info, run)
    version = info.get("mini_version")
    if (
        not exited
        and ep.termination_reason is None
        and (doc.get("trajectory_format") == "mini-swe-agent-1.1" or str(version).startswith("2."))
    ):
        last = ep.messages[-1][1] if ep.messages else {}
        said = text_of(last.get("content")) or ""
        evidence = f"last message ({last.get('role')}): {said.strip()[-300:]}" if last else None
        _ending.cut_off(ep, _ending.MINI_UNFINISHED, evidence)
    attached = _mini_tools(info, ep)
    for fields in ep.turn_fields.values():
        if fields.get("actor") == "agent":
            fields["tools_attached"] = attached
    collector.add_episode(ep)
    return 1


def _rejected_reply(
    ep: Episode, line: int, where: str, extra: Mapping[str, Any], run: Run, cap: int | None
) -> None:
    """The reply a v2 format-error message carries (extra.response, extra.model_response), as
    the agent turn the harness rejected."""
    response = as_dict(extra.get("response"))
    choice = openai_chat.first_choice(response.get("choices"))
    message = as_dict(choice.get("message"))
    content = message.get("content") if "content" in message else extra.get("model_response")
    if not message and not isinstance(extra.get("model_response"), str):
        return  # the harness kept nothing of the reply
    fields: dict[str, Any] = {"actor": "agent", "model": run.agent_model}
    fields |= _response_fields(extra, cap)
    reasoning = message.get("reasoning_content")
    fields["reasoning"] = reasoning if isinstance(reasoning, str) else None
    ep.add(
        line,
        {"role": "assistant", "content": text_of(content), "tool_calls": message.get("tool_calls")},
        **fields,
    )
    ep.json_paths[len(ep.messages) - 1] = f"{where}.extra"


def _mini_limits(ep: Episode, info: Mapping[str, Any], run: Run) -> None:
    """LimitsExceeded as the limit it was, TimeExceeded as the time limit (module docstring)."""
    if ep.termination_reason == "TimeExceeded":
        ep.termination_reason, ep.error = "time_limit", ep.error or "TimeExceeded"
        return
    if ep.termination_reason != "LimitsExceeded":
        return
    agent = as_dict(as_dict(info.get("config")).get("agent"))
    stats = as_dict(info.get("model_stats"))
    steps, calls = as_int(agent.get("step_limit")), as_int(stats.get("api_calls"))
    budget, spent = agent.get("cost_limit"), stats.get("instance_cost")
    if steps and calls is not None and 0 < steps <= calls:
        run.labels["max_iterations"] = str(steps)
        ep.termination_reason = "max_iterations"
        ep.error = f"LimitsExceeded: {calls} model calls reached the step_limit {steps}"
    elif isinstance(budget, int | float) and isinstance(spent, int | float) and 0 < budget <= spent:
        ep.termination_reason = "cost_limit"
        ep.error = f"LimitsExceeded: instance cost {spent:.2f} reached the cost_limit {budget:g}"


def _mini_tools(info: Mapping[str, Any], ep: Episode) -> bool | None:
    """Whether the bash tool went with each request: tool calls in the messages say so;
    text-based models (and every model of mini-swe-agent 1.x) parse actions from the text."""
    if any(msg.get("tool_calls") for _, msg in ep.messages):
        return True
    model_type = as_dict(info.get("config")).get("model_type")
    version = info.get("mini_version")
    if (isinstance(model_type, str) and "textbased" in model_type) or (
        isinstance(version, str) and version.startswith("1.")
    ):
        return False
    return None


SPECS = (
    FormatSpec(
        name=FORMAT,
        description="SWE-agent .traj trajectory",
        detection="a JSON object whose trajectory array starts with a step of action, "
        "observation, response, thought, …, or whose history messages carry SWE-agent's agent / "
        "message_type keys",
        sniff=sniff,
        ingest=ingest,
        priority=500,
        # The history keeps no finish reason nor usage (only run totals, as labels); the replay
        # config gives the cap, the endpoint and whether tools went with each request.
        columns=frozenset(
            {"content", "reasoning", "tool_calls", "model", "max_output_tokens"}
            | {"tools_attached", "endpoint"}
        ),
        benchmark=False,
        artifact="trajectories",
        rerun=None,
        seeds={"swe_agent_traj": "tests/data/agents/swe_agent/networking_1.traj"},
    ),
    FormatSpec(
        name=FORMAT_MINI,
        description="mini-swe-agent trajectory (.traj.json)",
        detection='a JSON object with info.mini_version, trajectory_format "mini-swe-agent…" '
        "or model_stats opening with instance_cost; a JSON list of messages whose system prompt "
        "is mini-swe-agent's (mswea_bash_command, COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT)",
        sniff=sniff_mini,
        ingest=ingest_mini,
        priority=510,
        # Each assistant message's extra.response is the raw API response.
        # v2's format-error messages are marked `error` FormatError (the harness's verdict).
        columns=frozenset(
            {"content", "reasoning", "tool_calls", "model", "max_output_tokens", "cost_usd"}
            | {"input_tokens", "output_tokens", "reasoning_tokens", "finish_reason"}
            | {"finish_reason_raw", "tools_attached", "error"}
        ),
        benchmark=False,
        artifact="trajectories",
        rerun=None,
        seeds={
            "mini_swe_agent": "tests/data/agents/mini_swe_agent/swe-agent__test-repo-1/"
            "swe-agent__test-repo-1.traj.json"
        },
    ),
)
