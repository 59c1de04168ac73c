"""The Arrow schemas of every table forensics produces: the one place they are defined.

Each column carries a description; `forensics schema` prints them, and the same text is the
documentation of the DuckDB/Parquet tables people query.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

TOOL_CALL = pa.struct(
    [
        pa.field("id", pa.string()),
        pa.field("name", pa.string()),
        pa.field("arguments", pa.string()),
    ]
)
LABEL = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.string())])


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    doc: str


def _schema(columns: list[Column]) -> pa.Schema:
    return pa.schema(
        [pa.field(c.name, c.type, metadata={"doc": c.doc}) for c in columns],
    )


# Columns a source fills (or leaves NULL when it does not know). Ingest modules build rows with
# exactly these keys.
TURN_COLUMNS: list[Column] = [
    Column("source_path", pa.string(), "File the record was read from."),
    Column("source_line", pa.int64(), "1-based line where the record starts in source_path."),
    Column(
        "source_format",
        pa.string(),
        "Detected input format, e.g. tau_bench_log, tau_bench_results.",
    ),
    Column("run_id", pa.string(), "Run the trajectory belongs to (one benchmark invocation)."),
    Column("trajectory_id", pa.string(), "Stable id of the episode: run, task, trial."),
    Column("task_id", pa.string(), "Benchmark task id as text (tau-bench ints become '12')."),
    Column("trial", pa.int64(), "Trial number of the task within the run, when known."),
    Column("turn_index", pa.int64(), "0-based position of the message in its trajectory."),
    Column("role", pa.string(), "Message role: system, user, assistant or tool."),
    Column(
        "actor",
        pa.string(),
        "Who produced it: agent, user_sim, env (tool results) or system. "
        "The tau user simulator has role user and actor user_sim.",
    ),
    Column("content", pa.string(), "Message text exactly as logged (secrets redacted)."),
    Column(
        "reasoning",
        pa.string(),
        "Reasoning the source kept apart from content (reasoning_content, thought parts).",
    ),
    Column(
        "tool_calls",
        pa.list_(TOOL_CALL),
        "Structured tool calls returned with the message; arguments as JSON text.",
    ),
    Column(
        "finish_reason",
        pa.string(),
        "Normalised: stop, max_tokens, tool_calls, content_filter, model_length, error, unknown. "
        "NULL when the source records none (never guessed as stop).",
    ),
    Column("finish_reason_raw", pa.string(), "Finish reason exactly as the source had it."),
    Column("input_tokens", pa.int64(), "Prompt tokens of the call that produced the turn."),
    Column("output_tokens", pa.int64(), "Completion tokens, reasoning included."),
    Column("reasoning_tokens", pa.int64(), "Reasoning tokens, when reported separately."),
    Column("max_output_tokens", pa.int64(), "Output-token cap requested for the call."),
    Column(
        "tools_attached",
        pa.bool_(),
        "Whether the request offered tools the model could call (NULL when unknown).",
    ),
    Column("tool_choice", pa.string(), "tool_choice of the request, when known."),
    Column("model", pa.string(), "Model that produced the turn, when known."),
    Column("endpoint", pa.string(), "Provider or base URL the call went to, when known."),
    Column("http_status", pa.int64(), "HTTP status of the call, when captured."),
    Column("error", pa.string(), "Error message attached to the call or the episode."),
]

# Columns `enrich` derives from the ones above, vectorised.
DERIVED_COLUMNS: list[Column] = [
    Column("turn_key", pa.string(), "trajectory_id#turn_index: unique key of a turn."),
    Column("think_open_count", pa.int64(), "Reasoning openers (<think>, …) in content."),
    Column("think_close_count", pa.int64(), "Reasoning closers (</think>, …) in content."),
    Column(
        "visible_text",
        pa.string(),
        "content with reasoning blocks removed (closed blocks and an unclosed tail).",
    ),
    Column("visible_chars", pa.int64(), "Length of visible_text after trimming whitespace."),
    Column("content_chars", pa.int64(), "Length of content."),
    Column("tool_call_count", pa.int64(), "Number of structured tool calls."),
    Column("has_tool_calls", pa.bool_(), "tool_call_count > 0."),
    Column(
        "has_reasoning",
        pa.bool_(),
        "The turn reasons: a reasoning field or reasoning markup in content.",
    ),
    Column(
        "compression_ratio",
        pa.float64(),
        "zlib ratio raw/compressed of the last 2,000 chars of content+reasoning; NULL under "
        "300 chars, where headers dominate. >= 4 means the text repeats itself.",
    ),
    Column(
        "prev_same_actor_similarity",
        pa.float64(),
        "Jaccard similarity of word bigrams with the previous turn of the same actor in the "
        "trajectory (NULL for the first turn or texts under 8 words).",
    ),
]

TURNS = _schema(TURN_COLUMNS + DERIVED_COLUMNS)
RAW_TURNS = _schema(TURN_COLUMNS)

TRAJECTORY_COLUMNS: list[Column] = [
    Column("trajectory_id", pa.string(), "Stable id of the episode."),
    Column("run_id", pa.string(), "Run the episode belongs to."),
    Column("source_path", pa.string(), "File the episode was read from."),
    Column("source_line", pa.int64(), "Line where the episode starts."),
    Column("source_format", pa.string(), "Detected input format."),
    Column("task_id", pa.string(), "Benchmark task id."),
    Column("trial", pa.int64(), "Trial number, when known."),
    Column("reward", pa.float64(), "Reward of the episode (NULL when never scored)."),
    Column(
        "termination_reason",
        pa.string(),
        "How the episode ended: user_stop, transfer, max_steps, error, … when known.",
    ),
    Column("error", pa.string(), "Error that ended the episode, when the source kept one."),
    Column("agent_model", pa.string(), "Model of the agent."),
    Column("user_model", pa.string(), "Model of the user simulator."),
    Column("variant", pa.string(), "Experiment variant label (e.g. an emotional user variant)."),
    Column(
        "labels",
        pa.list_(LABEL),
        "Run metadata as key/value pairs (provider, strategy, server flags, …).",
    ),
    Column("turn_count", pa.int64(), "Number of turns."),
    Column("agent_turn_count", pa.int64(), "Number of agent turns."),
    Column("tool_call_count", pa.int64(), "Structured tool calls made by the agent."),
]
TRAJECTORIES = _schema(TRAJECTORY_COLUMNS)

FINDING_COLUMNS: list[Column] = [
    Column("finding_id", pa.string(), "Stable fingerprint of the finding (rule + turn)."),
    Column("rule", pa.string(), "Rule id, e.g. unclosed-think."),
    Column("severity", pa.string(), "info, low, medium, high or critical."),
    Column("confidence", pa.string(), "hard (provable from the record) or heuristic."),
    Column("cause", pa.string(), "Root cause the rule points to."),
    Column("run_id", pa.string(), "Run of the trajectory."),
    Column("trajectory_id", pa.string(), "Trajectory of the finding."),
    Column("task_id", pa.string(), "Task id of the trajectory."),
    Column("trial", pa.int64(), "Trial of the trajectory."),
    Column("turn_index", pa.int64(), "Turn the finding points at."),
    Column("role", pa.string(), "Role of that turn."),
    Column("actor", pa.string(), "Actor of that turn."),
    Column("source_path", pa.string(), "File of that turn."),
    Column("source_line", pa.int64(), "Line of that turn."),
    Column("message", pa.string(), "What was found, in one sentence."),
    Column("evidence", pa.string(), "Excerpt of the record that shows it (redacted)."),
]
FINDINGS = _schema(FINDING_COLUMNS)

REJECT_COLUMNS: list[Column] = [
    Column("source_path", pa.string(), "File the record came from."),
    Column("source_line", pa.int64(), "Line where the unreadable record starts (NULL: file)."),
    Column("source_format", pa.string(), "Format the file was detected as, if any."),
    Column("reason", pa.string(), "Why it could not be read, in one line."),
    Column("excerpt", pa.string(), "First characters of the record (redacted)."),
]
REJECTS = _schema(REJECT_COLUMNS)

TABLES: dict[str, pa.Schema] = {
    "turns": TURNS,
    "trajectories": TRAJECTORIES,
    "findings": FINDINGS,
    "rejects": REJECTS,
}


def describe() -> str:
    """The schema reference as text: one block per table, one line per column."""
    lines: list[str] = []
    for table, schema in TABLES.items():
        lines.append(f"{table}")
        width = max(len(f.name) for f in schema)
        for field in schema:
            doc = field.metadata[b"doc"].decode()
            lines.append(f"  {field.name:<{width}}  {field.type!s:<12}  {doc}")
        lines.append("")
    return "\n".join(lines)
