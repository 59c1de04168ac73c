"""What every ingester produces: episodes of messages, turned into rows of the tables.

Ingesters know their file format; this module knows the tables. An ingester reads a file,
builds `Episode`s (messages with their source lines, plus what the run knows about itself) and
hands them to a `Collector`, together with `reject`s for what it could not read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from forensics import interrupts, schema
from forensics.ingest.parse import jsonwalk
from forensics.ingest.parse.apicommon import as_float, count_of, json_text, text_of
from forensics.ingest.parse.files import TooLarge, keep_records
from forensics.ingest.rows import BadValue, RowMaker, clean_text
from forensics.redact import CONTEXT_AFTER, clip

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
    "tool_call": "tool_calls",  # OpenTelemetry GenAI output messages' finish_reason
    "function_call": "tool_calls",
    "tool_use": "tool_calls",
    "content_filter": "content_filter",
    # Bedrock Converse: a guardrail or the provider's filter stopped the answer.
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
    "eos_token": "stop",  # Text Generation Inference
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
        return count_of(value) if value else None

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
    # How the benchmark scored it, where it says (trajectories.reward_breakdown, db_match,
    # expected_actions): rows of schema.REWARD_PART and schema.EXPECTED_ACTION.
    reward_breakdown: list[dict[str, Any]] | None = None
    db_match: bool | None = None
    expected_actions: list[dict[str, Any]] | None = None
    messages: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    # JSON path of the record and of each message (by index) in the file, where the reader
    # knows them: they locate a rejected record beyond its line.
    json_path: str | None = None
    json_paths: dict[int, str] = field(default_factory=dict)
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
            fn = got if isinstance(got := call.get("function"), dict) else call
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


def _tool_name(message: dict[str, Any]) -> str | None:
    value = message.get("name")
    return value if isinstance(value, str) and value else None


def _call_id(message: dict[str, Any]) -> str | None:
    value = message.get("tool_call_id", message.get("id"))
    return value if isinstance(value, str) and value else None


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


def tau_termination(info: Any, traj: list[Any]) -> str | None:
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
            return as_float(reward)
    return fallback


def tau_error(info: Any) -> str | None:
    if isinstance(info, dict) and info.get("error") is not None:
        return str(info["error"])
    if isinstance(info, str) and info:
        return info
    return None


NESTED_TOO_DEEPLY = "JSON nested deeper than the parser's limit (about 990 levels)"


EXCERPT_CHARS = 200


def excerpt(text: str, start: int = 0) -> str:
    """`text[start:start + 200]` for a reject, cut from redacted text: a secret across either
    cut is masked whole, not left as a prefix too short to recognise (redact.clip)."""
    return clip(text, EXCERPT_CHARS, start)


def _excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    window = text[: limit + CONTEXT_AFTER]
    cut = clip(clean_text(window.replace("\r", "")), limit, ellipsis="…")
    return cut if len(window) == len(text) or cut.endswith("…") else cut + "…"


@contextmanager
def isolated(
    collector: Collector, path: str, line: int | None, fmt: str, json_path: str | None = None
) -> Iterator[None]:
    """One record's failure stays with that record: it becomes its reject, the file goes on.

    File-level conditions (a size cap, an I/O error) still end the file's read.
    """
    try:
        yield
    except (TooLarge, OSError):
        raise
    except RecursionError:
        collector.reject(path, line, NESTED_TOO_DEEPLY, "", fmt, json_path)
    except Exception as exc:
        interrupts.raise_if_interrupted(exc)  # a Ctrl-C a library wrapped: not this record's
        collector.reject(
            path,
            line,
            f"record not read: the {fmt} reader failed on it ({type(exc).__name__}: {exc}); "
            "this is a bug in forensics, please report it",
            "",
            fmt,
            json_path,
        )


def unreadable(
    collector: Collector,
    path: str,
    line: int | None,
    item: Any,
    fmt: str,
    json_path: str | None = None,
    text: str = "",
    start: int = 0,
) -> bool:
    """Whether item is a record the walk could not read (jsonwalk.Unreadable: JSON, but with an
    integer too long to convert), rejected here alone: the records around it are read. Its
    excerpt is cut from text at start only then (redacting a window costs)."""
    if not isinstance(item, jsonwalk.Unreadable):
        return False
    shown = excerpt(text, start) if text else ""
    collector.reject(path, line, f"record not read: {item.reason}", shown, fmt, json_path)
    return True


def reject_trailing(
    collector: Collector, path: str, text: str, end: int, line_of: Callable[[int], int], fmt: str
) -> None:
    """Data after a whole document is not ignored: it is rejected from where it starts."""
    pos = jsonwalk.trailing(text, end)
    if pos is not None:
        collector.reject(
            path,
            line_of(pos),
            f"{jsonwalk.TRAILING} ({len(text) - pos:,} chars) was not read",
            excerpt(text, pos),
            fmt,
        )


def _safe_json(value: Any) -> str:
    try:
        return json_text(value) or ""
    except (RecursionError, ValueError, TypeError):
        return ""


_TURNS = RowMaker(schema.RAW_TURNS)
_TRAJECTORIES = RowMaker(schema.TRAJECTORIES)
_REJECTS = RowMaker(schema.REJECTS)
# Set on the trajectory row once the run is complete (a log may name its models at the end).
_RUN_COLUMNS = ("agent_model", "user_model", "variant", "labels")
# Turn rows become an Arrow record batch every this many rows: the Python dicts of a row
# (about ten times the size of its values) then live only until their batch is built.
BATCH_ROWS = 4096


class Collector:
    """Accumulates rows of turns, trajectories and rejects from every ingester.

    Every row is checked against its table's schema when it is made: a value that does not fit
    rejects its record (a message, or a whole episode for an episode-level value), never the
    table.
    """

    def __init__(self, sink: Callable[[pa.RecordBatch], None] | None = None) -> None:
        # Rows of added episodes are final (add_episode sets their trajectory_id and trial
        # last): they wait here only until there are BATCH_ROWS of them. A batch holds whole
        # episodes; with a sink it leaves at once (a scan streams it to disk), else it is kept
        # for tables().
        self._turn_rows: list[dict[str, Any]] = []
        self._turn_batches: list[pa.RecordBatch] = []
        self._sink = sink
        self.turn_count = 0
        self.trajectory_rows: list[dict[str, Any]] = []
        self.reject_rows: list[dict[str, Any]] = []
        self._reject_count: dict[str, int] = {}
        self._seen_trajectories: dict[str, int] = {}
        self._trials: dict[tuple[str, str | None], int] = {}
        # Runs stay mutable until the end: a log may name a run's status after its episodes.
        self._runs: dict[str, Run] = {}
        # path -> remarks about a file read without error but with nothing to turn into rows
        # (an empty checkpoint, run metadata): it counts as accounted for, not as a reject.
        self.notes: dict[str, list[str]] = {}
        # directory -> labels of a run-metadata sidecar there (ingest/sidecars.py applies them).
        self.run_metadata: dict[str, dict[str, str]] = {}
        # Files that describe a run rather than hold its episodes (a sidecar, a tau2 dir
        # layout's results.json): read without rows, they are input all the same.
        self.metadata_files: set[str] = set()

    def reject(
        self,
        path: str,
        line: int | None,
        reason: str,
        excerpt: str = "",
        source_format: str | None = None,
        json_path: str | None = None,
    ) -> None:
        if not keep_records(1, line):
            return
        row = _REJECTS.blank()
        row.update(
            source_path=clean_text(path),
            source_line=line if isinstance(line, int) else None,
            source_format=source_format,
            json_path=json_path,
            reason=clean_text(" ".join(str(reason).split())),
            excerpt=_excerpt(excerpt if isinstance(excerpt, str) else str(excerpt)),
        )
        self.reject_rows.append(_REJECTS.check(row))
        self._reject_count[row["source_path"]] = self._reject_count.get(row["source_path"], 0) + 1

    def rejects_of(self, path: str) -> int:
        return self._reject_count.get(path, 0)

    def note(self, path: str, text: str) -> None:
        self.notes.setdefault(path, []).append(text)

    def _trajectory_id(
        self, run_id: str, task_id: str | None, trial: int | None
    ) -> tuple[str, int]:
        if trial is None:
            # Console logs do not print the trial: the n-th run of a task in a run is trial n.
            key = (run_id, task_id)
            trial = self._trials.get(key, 0)
            self._trials[key] = trial + 1
        task = task_id if task_id is not None else "unknown"
        base = f"{run_id}/task-{task}/trial-{trial}"
        n = self._seen_trajectories.get(base, 0)
        self._seen_trajectories[base] = n + 1
        return (base if n == 0 else f"{base}#{n + 1}"), trial

    def _turn_row(self, ep: Episode, index: int, line: int, msg: dict[str, Any]) -> dict[str, Any]:
        run = ep.run
        role = msg.get("role")
        content = text_of(msg.get("content"))
        actor = tau_actor(role, content if isinstance(content, str) else None)
        model = run.agent_model if actor == "agent" else None
        endpoint = run.agent_endpoint if actor == "agent" else None
        if actor == "user_sim":
            model, endpoint = run.user_model, run.user_endpoint
        row = _TURNS.blank()
        row.update(
            source_path=ep.source_path,
            source_format=ep.source_format,
            run_id=run.run_id,
            task_id=ep.task_id,
            turn_index=index,
            role=role,
            actor=actor,
            content=content,
            reasoning=text_of(msg.get("reasoning_content") or msg.get("reasoning")),
            tool_calls=tool_calls_of(msg),
            finish_reason=normalise_finish_reason(msg.get("finish_reason")),
            finish_reason_raw=msg.get("finish_reason"),
            max_output_tokens=run.max_output_tokens if model else None,
            tools_attached=run.tools_attached if actor == "agent" else None,
            model=model,
            endpoint=endpoint,
            # tau2 names the call a tool message answers `id`, the OpenAI shape `tool_call_id`
            tool_call_id=_call_id(msg) if role == "tool" else None,
            refusal=text_of(msg.get("refusal")) or None,
            tool_name=_tool_name(msg) if role == "tool" else None,
        )
        overrides = ep.turn_fields.get(index)
        if overrides:
            unknown = overrides.keys() - row.keys()
            if unknown:
                raise ValueError(f"unknown turn fields: {sorted(unknown)}")  # a reader's bug
            row.update(overrides)
            if "finish_reason_raw" in overrides and "finish_reason" not in overrides:
                row["finish_reason"] = normalise_finish_reason(row["finish_reason_raw"])
        row["source_line"] = line  # the message's own line, whatever the fields say
        return row

    def add_episode(self, ep: Episode) -> None:
        if not keep_records(len(ep.messages) + 1, ep.source_line):
            return
        run = ep.run
        # A file name that is not UTF-8 reaches Python as lone surrogates: shown with U+FFFD,
        # it still names the file, and the rows built from it stay writable.
        ep.source_path, run.run_id = clean_text(ep.source_path), clean_text(run.run_id)
        rows: list[dict[str, Any]] = []
        dropped = 0
        for index, (line, msg) in enumerate(ep.messages):
            try:
                row = _TURNS.check(self._turn_row(ep, index - dropped, line, msg))
            except BadValue as exc:
                dropped += 1
                self.reject(
                    ep.source_path,
                    line,
                    f"message {index} of the episode: {exc}",
                    _safe_json(msg),
                    ep.source_format,
                    ep.json_paths.get(index),
                )
                continue
            rows.append(row)
        trajectory_id, trial = self._trajectory_id(run.run_id, ep.task_id, ep.trial)
        note = ep.note
        if dropped:
            extra = f"{dropped} message(s) rejected (see rejects)"
            note = f"{note}; {extra}" if note else extra
        agent = [r for r in rows if r["actor"] == "agent"]
        calls = sum(len(r["tool_calls"] or []) for r in agent)
        traj = self._episode_row(ep, trajectory_id, trial, (len(rows), len(agent), calls), note)
        if traj is None:
            return
        for row in rows:
            row["trajectory_id"], row["trial"] = trajectory_id, trial
        self._turn_rows.extend(rows)
        self.turn_count += len(rows)
        if len(self._turn_rows) >= BATCH_ROWS:
            self._flush_turns()
        self._runs[run.run_id] = run
        self.trajectory_rows.append(traj)

    def add_turn_batch(self, episodes: list[Episode], turns: pa.RecordBatch) -> None:
        """Whole episodes whose turn rows a reader built column-wise: `turns` holds, in order,
        one row per message of each (schema.RAW_TURNS, every value already checked, none of
        them rejected, trajectory_id and trial null). The trajectories, their ids, trials,
        counts and the record budget are add_episode's."""
        # Per row: is it the agent's, and how many tool calls the agent made in it; summed per
        # episode from running totals.
        agent = pc.equal(turns.column("actor"), "agent").fill_null(False)
        calls = pc.if_else(agent, pc.list_value_length(turns.column("tool_calls")), 0)
        agents_to = [0, *pc.cumulative_sum(agent.cast(pa.int64())).to_pylist()]
        calls_to = [0, *pc.cumulative_sum(calls.fill_null(0)).to_pylist()]
        keep: list[int] = []  # rows of the episodes kept
        ids: list[str] = []
        trials: list[int] = []
        start = 0
        for ep in episodes:
            n = len(ep.messages)
            at, start = start, start + n
            if not keep_records(n + 1, ep.source_line):
                continue
            run = ep.run
            ep.source_path, run.run_id = clean_text(ep.source_path), clean_text(run.run_id)
            trajectory_id, trial = self._trajectory_id(run.run_id, ep.task_id, ep.trial)
            counts = (n, agents_to[start] - agents_to[at], calls_to[start] - calls_to[at])
            traj = self._episode_row(ep, trajectory_id, trial, counts, ep.note)
            if traj is None:
                continue
            keep.extend(range(at, start))
            ids += [trajectory_id] * n
            trials += [trial] * n
            self.turn_count += n
            self._runs[run.run_id] = run
            self.trajectory_rows.append(traj)
        if not ids:
            return
        kept = turns if len(keep) == turns.num_rows else turns.take(pa.array(keep, pa.int64()))
        for name, values in (("trajectory_id", ids), ("trial", trials)):
            field = schema.RAW_TURNS.field(name)
            at = schema.RAW_TURNS.get_field_index(name)
            kept = kept.set_column(at, field, pa.array(values, field.type))
        self._flush_turns()  # rows of earlier episodes go first
        self._hand(kept)

    def _episode_row(
        self,
        ep: Episode,
        trajectory_id: str,
        trial: int,
        counts: tuple[int, int, int],
        note: str | None,
    ) -> dict[str, Any] | None:
        """The episode's trajectory row, checked; None (and the episode rejected) when a value
        does not fit. counts: its turns, agent turns and the agent's tool calls."""
        turns, agent_turns, tool_calls = counts
        traj = _TRAJECTORIES.blank()
        traj.update(
            trajectory_id=trajectory_id,
            run_id=ep.run.run_id,
            source_path=ep.source_path,
            source_line=ep.source_line,
            source_format=ep.source_format,
            task_id=ep.task_id,
            trial=trial,
            reward=ep.reward,
            termination_reason=ep.termination_reason,
            error=ep.error,
            turn_count=turns,
            agent_turn_count=agent_turns,
            tool_call_count=tool_calls,
            ingest_note=note,
            reward_breakdown=ep.reward_breakdown,
            db_match=ep.db_match,
            expected_actions=ep.expected_actions,
            labels=[],
        )
        try:
            _TRAJECTORIES.check(traj)
        except BadValue as exc:
            self.reject(
                ep.source_path,
                ep.source_line,
                f"episode not read: {exc}",
                "",
                ep.source_format,
                ep.json_path,
            )
            return None
        return traj

    def _flush_turns(self) -> None:
        if self._turn_rows:
            batch = pa.RecordBatch.from_pylist(self._turn_rows, schema=schema.RAW_TURNS)
            self._turn_rows = []
            self._hand(batch)

    def _hand(self, batch: pa.RecordBatch) -> None:
        """A batch of whole episodes' turns to the sink, or kept for tables()."""
        if self._sink is None:
            self._turn_batches.append(batch)
        else:
            self._sink(batch)

    def _run_values(self, run: Run, path: str, fmt: str | None) -> dict[str, Any]:
        """What the run says about itself, checked once; a bad value is dropped and rejected."""
        values: dict[str, Any] = {
            "agent_model": run.agent_model,
            "user_model": run.user_model,
            "variant": run.variant,
            "labels": [{"key": k, "value": v} for k, v in sorted(run.labels.items())],
        }
        for name in _RUN_COLUMNS:
            try:
                _TRAJECTORIES.check(_TRAJECTORIES.blank() | {name: values[name]})
            except BadValue as exc:
                self.reject(path, None, f"run metadata not read: {exc}", "", fmt)
                values[name] = [] if name == "labels" else None
        return values

    def tables(self) -> tuple[pa.Table, pa.Table, pa.Table]:
        """(turns, trajectories, rejects); with a sink, the turns went to it and this turn
        table is empty."""
        checked: dict[str, dict[str, Any]] = {}
        for row in self.trajectory_rows:
            run_id = row["run_id"]
            if run_id not in checked:
                run = self._runs[run_id]
                checked[run_id] = self._run_values(run, row["source_path"], row["source_format"])
            row.update(checked[run_id])
        self._flush_turns()
        return (
            pa.Table.from_batches(self._turn_batches, schema=schema.RAW_TURNS),
            pa.Table.from_pylist(self.trajectory_rows, schema=schema.TRAJECTORIES),
            pa.Table.from_pylist(self.reject_rows, schema=schema.REJECTS),
        )
