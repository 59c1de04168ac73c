"""What every ingester produces: episodes of messages, turned into rows of the tables.

Ingesters know their file format; this module knows the tables. An ingester reads a file,
builds `Episode`s (messages with their source lines, plus what the run knows about itself) and
hands them to a `Collector`, together with `reject`s for what it could not read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from forensics import schema
from forensics.ingest.apicommon import json_text, text_of
from forensics.redact import redact_name

# How each source spells a finish reason -> our normalised vocabulary. Unknown spellings map to
# "unknown"; a missing reason stays NULL.
FINISH_REASONS: dict[str, str] = {
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "eos": "stop",
    "length": "max_tokens",
    "max_tokens": "max_tokens",
    "max_output_tokens": "max_tokens",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "tool_use": "tool_calls",
    "content_filter": "content_filter",
    "safety": "content_filter",
    "recitation": "content_filter",
    # Gemini: every blocking reason is a filter (formats-api §1.4); a call the model got wrong
    # (malformed, undeclared, too many, missing thought signature) failed the turn: "error".
    # OTHER, IMAGE_OTHER, NO_IMAGE, CONTINUATION and new values stay "unknown" (raw kept).
    "blocklist": "content_filter",
    "prohibited_content": "content_filter",
    "spii": "content_filter",
    "image_safety": "content_filter",
    "image_prohibited_content": "content_filter",
    "image_recitation": "content_filter",
    "model_armor": "content_filter",
    "language": "content_filter",
    "jailbreak": "content_filter",
    "escalation": "content_filter",
    "pup_limited_disabled": "content_filter",
    "malformed_function_call": "error",
    "unexpected_tool_call": "error",
    "too_many_tool_calls": "error",
    "missing_thought_signature": "error",
    "malformed_response": "error",
    "model_length": "model_length",
    "model_context_window_exceeded": "model_length",
    "error": "error",
    # vLLM/SGLang `abort` (client gone, engine stopped); Anthropic `refusal`. Responses API
    # statuses and vLLM `repetition` stay "unknown" with the raw value kept.
    "abort": "error",
    "refusal": "content_filter",
}


def normalise_finish_reason(raw: Any) -> str | None:
    if raw is None or raw == "":
        return None
    return FINISH_REASONS.get(str(raw).strip().lower(), "unknown")


@dataclass
class Run:
    """One benchmark invocation: what it says about itself (models, strategy, labels)."""

    run_id: str
    agent_model: str | None = None
    user_model: str | None = None
    agent_strategy: str | None = None
    variant: str | None = None
    agent_endpoint: str | None = None
    user_endpoint: str | None = None
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def max_output_tokens(self) -> int | None:
        value = self.labels.get("request.max_tokens")
        return int(value) if value and value.isdigit() else None

    @property
    def tools_attached(self) -> bool | None:
        """tau-bench attaches tools to the request for tool-calling and few-shot agents only."""
        if self.agent_strategy is None:
            return None
        return self.agent_strategy in ("tool-calling", "few-shot")


@dataclass
class Episode:
    run: Run
    source_path: str
    source_line: int
    source_format: str
    task_id: str | None = None
    trial: int | None = None
    reward: float | None = None
    termination_reason: str | None = None
    error: str | None = None
    # Why the episode has no (or fewer) turns, when the source says so (trajectories.ingest_note).
    note: str | None = None
    messages: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    # Per-turn column values that the message dict itself does not carry (captures know the
    # request and response around a message: finish reason, usage, caps, HTTP status, …),
    # keyed by message index. Keys are turn column names (schema.RAW_TURNS); they win over
    # what the collector derives from the message and the run.
    turn_fields: dict[int, dict[str, Any]] = field(default_factory=dict)

    def add(self, line: int, message: dict[str, Any], **fields: Any) -> None:
        if fields:
            self.turn_fields[len(self.messages)] = fields
        self.messages.append((line, message))


def tool_calls_of(message: dict[str, Any]) -> list[dict[str, str | None]]:
    """Structured tool calls of a message in either OpenAI shape or the flat tau2 shape."""
    calls = message.get("tool_calls") or []
    out = []
    if isinstance(calls, list):
        for call in calls:
            if not isinstance(call, dict):
                continue
            fn = call.get("function") if isinstance(call.get("function"), dict) else call
            out.append(
                {
                    "id": call.get("id"),
                    "name": fn.get("name"),
                    "arguments": json_text(fn.get("arguments")),
                }
            )
    content = message.get("content")
    if isinstance(content, list):  # Anthropic-style blocks in legacy tau-bench files
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                out.append(
                    {
                        "id": block.get("id"),
                        "name": block.get("name"),
                        "arguments": json_text(block.get("input")),
                    }
                )
    return out


def tau_actor(role: str | None, content: str | None) -> str:
    if role == "assistant":
        return "agent"
    if role == "tool":
        return "env"
    if role == "system":
        return "system"
    if role == "user":
        # ReAct/Act agents receive tool results as user messages prefixed "API output: ".
        if content is not None and content.startswith("API output: "):
            return "env"
        return "user_sim"
    return "unknown"


def is_message(obj: Any) -> bool:
    return (
        isinstance(obj, dict)
        and obj.get("role") in ("system", "user", "assistant", "tool", "function")
        and ("content" in obj or "tool_calls" in obj)
    )


def infer_strategy(traj: list[Any]) -> str | None:
    """tau-bench agent strategy from a trajectory, for sources that do not name it.

    ReAct/Act agents describe their tools inside the system prompt ("#Available tools") and get
    no tools attached to the request; tool-calling and few-shot agents attach them.
    """
    for msg in traj:
        if isinstance(msg, dict) and msg.get("role") == "system":
            content = msg.get("content")
            if isinstance(content, str) and "#Available tools" in content:
                return "react"
            return "tool-calling"
        if isinstance(msg, dict) and msg.get("role") == "tool":
            return "tool-calling"
    return None


def tau_termination(info: dict[str, Any], traj: list[Any]) -> str | None:
    """How a tau-bench episode ended, read from its info and last message."""
    if not isinstance(info, dict):
        return "error" if info else None
    if "error" in info:
        return "error"
    last = traj[-1] if traj else None
    if isinstance(last, dict):
        content = last.get("content")
        if last.get("role") == "user" and isinstance(content, str) and "###STOP###" in content:
            return "user_stop"
        if last.get("role") == "tool" and last.get("name") == "transfer_to_human_agents":
            return "transfer"
    if "reward_info" in info and info.get("reward_info") is None:
        return "max_steps"
    return None


def tau_reward(info: Any, fallback: float | None = None) -> float | None:
    if isinstance(info, dict) and isinstance(info.get("reward_info"), dict):
        reward = info["reward_info"].get("reward")
        if isinstance(reward, int | float):
            return float(reward)
    return fallback


def tau_error(info: Any) -> str | None:
    if isinstance(info, dict) and info.get("error") is not None:
        return str(info["error"])
    if isinstance(info, str) and info:
        return info
    return None


def _excerpt(text: str, limit: int = 200) -> str:
    text = text.replace("\r", "")
    return text if len(text) <= limit else text[:limit] + "…"


class Collector:
    """Accumulates rows of turns, trajectories and rejects from every ingester."""

    def __init__(self) -> None:
        self.turn_rows: list[dict[str, Any]] = []
        self.trajectory_rows: list[dict[str, Any]] = []
        self.reject_rows: list[dict[str, Any]] = []
        self._seen_trajectories: dict[str, int] = {}
        self._trials: dict[tuple[str, str | None], int] = {}
        # Runs stay mutable until the end: a log may name a run's status after its episodes.
        self._runs: dict[str, Run] = {}
        # path -> remarks about a file read without error but with nothing to turn into rows
        # (an empty checkpoint, run metadata): it counts as accounted for, not as a reject.
        self.notes: dict[str, list[str]] = {}
        # directory -> labels of a run-metadata sidecar there (ingest/sidecars.py applies them).
        self.run_metadata: dict[str, dict[str, str]] = {}

    def reject(
        self,
        path: str,
        line: int | None,
        reason: str,
        excerpt: str = "",
        source_format: str | None = None,
    ) -> None:
        self.reject_rows.append(
            {
                "source_path": redact_name(path),
                "source_line": line,
                "source_format": source_format,
                "reason": reason,
                "excerpt": _excerpt(excerpt),
            }
        )

    def note(self, path: str, text: str) -> None:
        self.notes.setdefault(path, []).append(text)

    def add_episode(self, ep: Episode) -> None:
        run = ep.run
        # A secret in a file name must not reach any table either (paths and run ids derive
        # from file names).
        source_path, run_id = redact_name(ep.source_path), redact_name(run.run_id)
        trial = ep.trial
        if trial is None:
            # Console logs do not print the trial: the n-th run of a task in a run is trial n.
            key = (run_id, ep.task_id)
            trial = self._trials.get(key, 0)
            self._trials[key] = trial + 1
        task = ep.task_id if ep.task_id is not None else "unknown"
        base = f"{run_id}/task-{task}/trial-{trial}"
        n = self._seen_trajectories.get(base, 0)
        self._seen_trajectories[base] = n + 1
        trajectory_id = base if n == 0 else f"{base}#{n + 1}"

        agent_turns = tool_calls = 0
        for index, (line, msg) in enumerate(ep.messages):
            role = msg.get("role")
            content = text_of(msg.get("content"))
            calls = tool_calls_of(msg)
            actor = tau_actor(role, content)
            reasoning = msg.get("reasoning_content") or msg.get("reasoning")
            model = run.agent_model if actor == "agent" else None
            endpoint = run.agent_endpoint if actor == "agent" else None
            if actor == "user_sim":
                model, endpoint = run.user_model, run.user_endpoint
            row = {
                "source_path": source_path,
                "source_line": line,
                "source_format": ep.source_format,
                "run_id": run_id,
                "trajectory_id": trajectory_id,
                "task_id": ep.task_id,
                "trial": trial,
                "turn_index": index,
                "role": role,
                "actor": actor,
                "content": content,
                "reasoning": text_of(reasoning),
                "tool_calls": calls,
                "finish_reason": normalise_finish_reason(msg.get("finish_reason")),
                "finish_reason_raw": msg.get("finish_reason"),
                "input_tokens": None,
                "output_tokens": None,
                "reasoning_tokens": None,
                "max_output_tokens": run.max_output_tokens if model else None,
                "tools_attached": run.tools_attached if actor == "agent" else None,
                "tool_choice": None,
                "model": model,
                "endpoint": endpoint,
                "http_status": None,
                "error": None,
                "tool_count": None,
                "stream": None,
                "stream_completed": None,
                "enable_thinking": None,
                "reasoning_budget": None,
                "reasoning_effort": None,
                "cost_usd": None,
                "tool_calls_without_type": None,
                "request_hash": None,
                "request_keys": None,
            }
            overrides = ep.turn_fields.get(index)
            if overrides:
                unknown = overrides.keys() - row.keys()
                if unknown:
                    raise ValueError(f"unknown turn fields: {sorted(unknown)}")
                row.update(overrides)
                if "finish_reason_raw" in overrides and "finish_reason" not in overrides:
                    row["finish_reason"] = normalise_finish_reason(row["finish_reason_raw"])
            if row["actor"] == "agent":
                agent_turns += 1
                tool_calls += len(row["tool_calls"] or [])
            self.turn_rows.append(row)
        self._runs[run_id] = run
        self.trajectory_rows.append(
            {
                "trajectory_id": trajectory_id,
                "run_id": run_id,
                "source_path": source_path,
                "source_line": ep.source_line,
                "source_format": ep.source_format,
                "task_id": ep.task_id,
                "trial": trial,
                "reward": ep.reward,
                "termination_reason": ep.termination_reason,
                "error": ep.error,
                "turn_count": len(ep.messages),
                "agent_turn_count": agent_turns,
                "tool_call_count": tool_calls,
                "ingest_note": ep.note,
            }
        )

    def tables(self) -> tuple[pa.Table, pa.Table, pa.Table]:
        for row in self.trajectory_rows:
            run = self._runs[row["run_id"]]
            row["agent_model"] = run.agent_model
            row["user_model"] = run.user_model
            row["variant"] = run.variant
            row["labels"] = [{"key": k, "value": v} for k, v in sorted(run.labels.items())]
        return (
            pa.Table.from_pylist(self.turn_rows, schema=schema.RAW_TURNS),
            pa.Table.from_pylist(self.trajectory_rows, schema=schema.TRAJECTORIES),
            pa.Table.from_pylist(self.reject_rows, schema=schema.REJECTS),
        )
