"""The Arrow schemas of every table forensics produces: the one place they are defined.

Each column carries a description; `forensics schema` prints them, and the same text is the
documentation of the DuckDB/Parquet tables people query.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

# A source_path inside a container names the member after this: `logs/run.eval!samples/1.json`.
# Readers write it and the gate parses it, so it is part of the tables' contract.
ARCHIVE_MEMBER_SEPARATOR = "!"

# Vocabulary every stage shares: rules declare it, diagnosis ranks by it, the gate and the
# renderers speak it. It lives here, below every stage, so none imports another for words.
SEVERITIES = ["info", "low", "medium", "high", "critical"]
CONFIDENCES = ["hard", "heuristic"]
DOC_SECTIONS = ["detects", "why", "example", "fix", "false_positives"]

TOOL_CALL = pa.struct(
    [
        pa.field("id", pa.string()),
        pa.field("name", pa.string()),
        pa.field("arguments", pa.string()),
    ]
)
LABEL = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.string())])
# A component of a reward as the benchmark scored it (tau2 reward_breakdown: DB, COMMUNICATE, …).
REWARD_PART = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.float64())])
# An action the task expected, who was to take it, and whether a call matched it.
EXPECTED_ACTION = pa.struct(
    [
        pa.field("name", pa.string()),
        pa.field("requestor", pa.string()),
        pa.field("matched", pa.bool_()),
    ]
)
# A tool call written as text (enrich: text_calls): error is why it does not parse, NULL if it does.
TEXT_CALL = pa.struct(
    [
        pa.field("name", pa.string()),
        pa.field("arguments", pa.string()),
        pa.field("error", pa.string()),
    ]
)


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    doc: str
    # Text in it can come from the inputs (log text, file names, metadata): secrets are masked
    # in it once, between ingest and enrichment (redact.redact_table). A new column that
    # carries input text says so here and cannot be forgotten by the redaction pass. A derived
    # column that decodes text (JSON escapes, Python literals) is redacted where it is derived,
    # after decoding: what the pass saw encoded is plain there.
    redact: bool = False


def _schema(columns: list[Column]) -> pa.Schema:
    return pa.schema(
        [
            pa.field(
                c.name, c.type, metadata={"doc": c.doc} | ({"redact": "1"} if c.redact else {})
            )
            for c in columns
        ],
    )


def redacted_columns(table_schema: pa.Schema) -> list[str]:
    """Columns of a table whose text is redacted (Column.redact)."""
    return [f.name for f in table_schema if f.metadata and f.metadata.get(b"redact") == b"1"]


# Columns a source fills (or leaves NULL when it does not know). Ingest modules build rows with
# exactly these keys.
TURN_COLUMNS: list[Column] = [
    Column("source_path", pa.string(), "File the record was read from.", redact=True),
    Column("source_line", pa.int64(), "1-based line where the record starts in source_path."),
    Column(
        "source_format",
        pa.string(),
        "Detected input format, e.g. tau_bench_log, tau_bench_results.",
    ),
    Column(
        "run_id",
        pa.string(),
        "Run the trajectory belongs to (one benchmark invocation).",
        redact=True,
    ),
    Column(
        "trajectory_id", pa.string(), "Stable id of the episode: run, task, trial.", redact=True
    ),
    Column(
        "task_id",
        pa.string(),
        "Benchmark task id as text (tau-bench ints become '12').",
        redact=True,
    ),
    Column("trial", pa.int64(), "Trial number of the task within the run, when known."),
    Column("turn_index", pa.int64(), "0-based position of the message in its trajectory."),
    Column("role", pa.string(), "Message role: system, user, assistant or tool.", redact=True),
    Column(
        "actor",
        pa.string(),
        "Who produced it: agent, user_sim, env (tool results) or system. "
        "The tau user simulator has role user and actor user_sim.",
    ),
    Column(
        "content", pa.string(), "Message text exactly as logged (secrets redacted).", redact=True
    ),
    Column(
        "reasoning",
        pa.string(),
        "Reasoning the source kept apart from content (reasoning_content, thought parts).",
        redact=True,
    ),
    Column(
        "tool_calls",
        pa.list_(TOOL_CALL),
        "Structured tool calls returned with the message; arguments as JSON text.",
        redact=True,
    ),
    Column(
        "finish_reason",
        pa.string(),
        "Normalised: stop, max_tokens, tool_calls, content_filter, model_length, error, unknown. "
        "NULL when the source records none (never guessed as stop).",
    ),
    Column(
        "finish_reason_raw", pa.string(), "Finish reason exactly as the source had it.", redact=True
    ),
    Column("input_tokens", pa.int64(), "Prompt tokens of the call that produced the turn."),
    Column("output_tokens", pa.int64(), "Completion tokens, reasoning included."),
    Column("reasoning_tokens", pa.int64(), "Reasoning tokens, when reported separately."),
    Column("max_output_tokens", pa.int64(), "Output-token cap requested for the call."),
    Column(
        "tools_attached",
        pa.bool_(),
        "Whether the request offered tools the model could call (NULL when unknown).",
    ),
    Column("tool_choice", pa.string(), "tool_choice of the request, when known.", redact=True),
    Column("model", pa.string(), "Model that produced the turn, when known.", redact=True),
    Column(
        "endpoint", pa.string(), "Provider or base URL the call went to, when known.", redact=True
    ),
    Column("http_status", pa.int64(), "HTTP status of the call, when captured."),
    Column("error", pa.string(), "Error message attached to the call or the episode.", redact=True),
    Column(
        "tool_count",
        pa.int64(),
        "Number of tools (function schemas) offered in the request, when the request was captured.",
    ),
    Column("stream", pa.bool_(), "Whether the request asked for a streamed (SSE) response."),
    Column(
        "stream_completed",
        pa.bool_(),
        "For a streamed response: it ended properly ([DONE], a finish reason, message_stop). "
        "False: the capture was cut off mid-stream. NULL when not streamed or unknown.",
    ),
    Column(
        "enable_thinking",
        pa.bool_(),
        "Thinking switch of the request: chat_template_kwargs.enable_thinking (vLLM/SGLang) or "
        "thinking.type enabled/disabled (Anthropic, Z.ai). NULL when the request does not say.",
    ),
    Column(
        "reasoning_budget",
        pa.int64(),
        "Reasoning-token budget requested for the call (Gemini thinkingConfig.thinkingBudget: "
        "0 = thinking off, -1 = automatic). NULL when the request does not say.",
    ),
    Column(
        "reasoning_effort",
        pa.string(),
        "Reasoning level requested for the call, as the source spelled it (Gemini "
        "thinkingConfig.thinkingLevel). NULL when the request does not say.",
        redact=True,
    ),
    Column(
        "cost_usd",
        pa.float64(),
        "Cost of the call that produced the turn, in USD, as the source reported it "
        "(tau2 per-message cost; 0.0 for local models).",
    ),
    Column(
        "tool_calls_without_type",
        pa.int64(),
        'Raw tool calls of the response (OpenAI shape, stream deltas merged by index) whose "type" '
        "key was missing or null, as Mistral's API and LiteLLM's Mistral streaming send them. 0 "
        "when every call had it; NULL when the source's tool-call shape has no type field at all "
        "(tau2's flattened calls, Gemini functionCall, Anthropic tool_use).",
    ),
    Column(
        "request_hash",
        pa.string(),
        "Fingerprint of the request: its messages by role, visible text and tool calls (ids and "
        "reasoning left out, as linking compares them) and every other body key (tools, caps, "
        "sampling parameters) as sent: equal hashes mean the same request was sent again. NULL "
        "without the request.",
    ),
    Column(
        "request_keys",
        pa.list_(pa.string()),
        "Distinct key paths of the request body, sorted: its top-level keys and every key inside "
        "messages, list items written [] (e.g. messages[].role, messages[].metadata._db_id, "
        "messages[].tool_calls[].function.name). Tool-call arguments and tool schemas are not "
        "walked. NULL without the request.",
        redact=True,
    ),
    Column(
        "fused_from",
        pa.string(),
        "path:line of the call record (a capture of the same run) that supplied this turn's "
        "call columns (finish reason, tokens, caps, status) when its own artifact lacked them; "
        "NULL when nothing was fused in.",
        redact=True,
    ),
    Column(
        "tool_call_id",
        pa.string(),
        "Tool results: the id of the call the result answers (OpenAI tool_call_id, Responses "
        "call_id, Anthropic tool_use_id, Gemini functionResponse.id, tau2's tool message id). "
        "In captured traffic, the response's id of that call when the client replayed it under "
        "another id. NULL otherwise or when the source keeps none.",
        redact=True,
    ),
    Column(
        "tool_name",
        pa.string(),
        "Tool results: the name of the tool the result says it comes from (the OpenAI-style "
        "tool message's name, tau-bench's and tau2's). NULL otherwise or when the source keeps "
        "none.",
        redact=True,
    ),
    Column(
        "offered_tools",
        pa.list_(pa.string()),
        "Names of the tools the request offered (OpenAI tools[].function.name and functions[], "
        "Anthropic and Responses tools[].name, Gemini functionDeclarations[].name), sorted. "
        "NULL when the request was not captured.",
        redact=True,
    ),
    Column(
        "replayed",
        pa.bool_(),
        "Captured API traffic: true for a message taken from a request's history (the client "
        "sent it again), false for a response the capture holds. NULL for sources without "
        "requests (results files, logs).",
    ),
    Column(
        "refusal",
        pa.string(),
        "The refusal the model returned in place of an answer, where the API keeps it apart "
        "from content (OpenAI Chat message.refusal, Responses refusal content parts, Inspect "
        "refusal text parts); NULL otherwise. Stop reasons that withhold an answer are in "
        "finish_reason (content_filter); the derived column refused joins both.",
        redact=True,
    ),
    Column(
        "request_time",
        pa.float64(),
        "Captured API traffic: when the call was made, in seconds since the Unix epoch (UTC), as "
        "the capture dates it (a HAR entry's startedDateTime, a Ruby VCR interaction's "
        "recorded_at, else the response's Date header). NULL when undated.",
    ),
    Column(
        "agent_name",
        pa.string(),
        "Multi-agent runs: the agent that spoke, as the source names it (an AG2 message's "
        "name, a Magentic-One speaker such as 'Orchestrator (-> WebSurfer)', the smolagents "
        "agent whose run span holds the call); NULL where the source has one agent.",
        redact=True,
    ),
    Column(
        "span_id",
        pa.string(),
        "Traces: the id of the span the turn was read from (an LLM call, a tool), so a label "
        "that names a span finds its turns; NULL for sources without spans.",
        redact=True,
    ),
    Column(
        "span_path",
        pa.list_(pa.string()),
        "Span trees: the span ids from the trace's root down to span_id (its last), so a label "
        "that names an agent or step span finds the turns inside it; NULL where the reader does "
        "not see the tree.",
        redact=True,
    ),
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
        "300 chars, where headers dominate. >= 4 means the text repeats itself. Agent and "
        "user-simulator turns only (NULL for others).",
    ),
    Column(
        "prev_same_actor_similarity",
        pa.float64(),
        "Jaccard similarity of word bigrams with the previous turn of the same actor in the "
        "trajectory (NULL for the first turn or texts under 8 words). Agent and user-simulator "
        "turns only (NULL for others).",
    ),
    Column(
        "tail_period",
        pa.int64(),
        "Length in chars of a unit that repeats back to back at least 3 times at the end of "
        "content+reasoning (last 2,000 chars), covering 200+ chars; NULL when none does. Agent "
        "and user-simulator turns only (NULL for others).",
    ),
    Column(
        "tail_repeat_chars",
        pa.int64(),
        "How many chars at the end that exact repetition covers (NULL when none).",
    ),
    Column(
        "tool_markup_format",
        pa.string(),
        "Assistant turns: the tool-call markup found as text, named by the vLLM "
        "--tool-call-parser that reads it (hermes, qwen3_coder, deepseek_v3, …; "
        "unwrapped_json: a bare call no parser reads), first match of the failure catalogue "
        "§1.3 order; the model id settles xlam/mistral and hermes/ernie45. NULL: none.",
    ),
    Column(
        "tool_markup_in",
        pa.string(),
        "Where that markup sits: content (visible text), reasoning (reasoning field or an "
        "inline reasoning block) or tool_name (inside a structured call's name).",
    ),
    Column(
        "asks_user",
        pa.bool_(),
        "Agent turns: the visible text asks the user something (a question mark, 'please "
        "confirm/provide', 'let me know', 'could you'). NULL for other turns.",
    ),
    Column(
        "announces_action",
        pa.bool_(),
        "Agent turns: the last sentence announces an action ('Let me look up your order.', "
        "'One moment.'), unconditionally, and the turn asks the user nothing. NULL for other "
        "turns.",
    ),
    Column(
        "request_private_keys",
        pa.list_(pa.string()),
        "Key paths of request_keys with a private segment (a key starting with _).",
    ),
    Column(
        "request_foreign_keys",
        pa.list_(pa.string()),
        "Key paths of request_keys inside messages that the OpenAI chat schema does not define "
        "(lenient servers ignore them; strict validators answer 400/422 extra_forbidden).",
    ),
    Column(
        "text_call_format",
        pa.string(),
        "Assistant turns: the text protocol of a tool call written in the visible text "
        "(forensics/check/textcalls.py): react_action (tau-bench ReAct/Act `Action: {json}`), "
        'react_action_input (`Action:` + `Action Input:`), json_action ({"action"|"name": …, '
        '"arguments"|"action_input"|…: …}), tool_code (```tool_code fence of Python '
        "calls), mistral_tool_calls ([TOOL_CALLS]), llama_python_tag (<|python_tag|>). NULL: none.",
    ),
    Column(
        "text_calls",
        pa.list_(TEXT_CALL),
        "The calls that text writes, as its harness would parse them: name, arguments (JSON "
        "text, or the raw payload when it does not parse) and error (why it does not parse; "
        "NULL when it does). NULL when text_call_format is NULL.",
        redact=True,  # check/textcalls.py redacts the decoded calls
    ),
]

# Derived columns of the episode-level rules (think-loop, action-loop, …), kept in their own
# block so the list above stays as it is.
DERIVED_COLUMNS += [
    Column(
        "reasoning_calls",
        pa.list_(TEXT_CALL),
        "Assistant turns whose tool-call markup sits in the reasoning (tool_markup_in = "
        "reasoning): the calls it writes (forensics/check/markupcalls.py), error NULL for a "
        "call the model made (complete, parseable, a tool the request offered, the last thing "
        "the reasoning holds), else why it is not one (quoted in prose, a placeholder that does "
        "not parse, a name no tool has). NULL otherwise, and for markup formats not parsed there.",
        redact=True,
    ),
    Column(
        "refused",
        pa.bool_(),
        "Assistant turns: the model or the provider withheld the answer, whatever the provider: "
        "a refusal text (refusal), or a finish reason that blocks (content_filter: OpenAI "
        "content_filter, Anthropic refusal, Gemini SAFETY/RECITATION/PROHIBITED_CONTENT/"
        "BLOCKLIST/SPII/…, Bedrock guardrail_intervened; not Gemini's LANGUAGE, which blocks "
        "nothing). NULL for other turns.",
    ),
    Column(
        "prev_same_actor_containment",
        pa.float64(),
        "Share of the shorter text's word bigrams found in the other, between the turn and the "
        "previous turn of the same actor: tolerates turns cut at different lengths (NULL as for "
        "prev_same_actor_similarity).",
    ),
]

TURNS = _schema(TURN_COLUMNS + DERIVED_COLUMNS)
RAW_TURNS = _schema(TURN_COLUMNS)

TRAJECTORY_COLUMNS: list[Column] = [
    Column("trajectory_id", pa.string(), "Stable id of the episode.", redact=True),
    Column("run_id", pa.string(), "Run the episode belongs to.", redact=True),
    Column("source_path", pa.string(), "File the episode was read from.", redact=True),
    Column("source_line", pa.int64(), "Line where the episode starts."),
    Column("source_format", pa.string(), "Detected input format."),
    Column("task_id", pa.string(), "Benchmark task id.", redact=True),
    Column("trial", pa.int64(), "Trial number, when known."),
    Column("reward", pa.float64(), "Reward of the episode (NULL when never scored)."),
    Column(
        "termination_reason",
        pa.string(),
        "How the episode ended: user_stop, transfer, max_steps, error, … when known.",
        redact=True,
    ),
    Column(
        "error", pa.string(), "Error that ended the episode, when the source kept one.", redact=True
    ),
    Column("agent_model", pa.string(), "Model of the agent.", redact=True),
    Column("user_model", pa.string(), "Model of the user simulator.", redact=True),
    Column(
        "variant",
        pa.string(),
        "Experiment variant label (e.g. an emotional user variant).",
        redact=True,
    ),
    Column(
        "labels",
        pa.list_(LABEL),
        "Run metadata as key/value pairs (provider, strategy, server flags, …).",
        redact=True,
    ),
    Column("turn_count", pa.int64(), "Number of turns."),
    Column("agent_turn_count", pa.int64(), "Number of agent turns."),
    Column("tool_call_count", pa.int64(), "Structured tool calls made by the agent."),
    Column(
        "ingest_note",
        pa.string(),
        "Why the episode has fewer turns than it happened to have, when ingest knows (e.g. a "
        "tau2 voice simulation logged as audio ticks without text messages).",
        redact=True,
    ),
    Column(
        "sources",
        pa.list_(pa.string()),
        "Every artifact the episode was read from (console log, results file, capture, ...), "
        "sorted: one episode seen in several files is one trajectory (ingest.fusion).",
        redact=True,
    ),
    Column(
        "disagreements",
        pa.string(),
        "Where those artifacts contradict each other (two different rewards), in words; NULL "
        "when they agree.",
        redact=True,
    ),
    Column(
        "reward_breakdown",
        pa.list_(REWARD_PART),
        "The reward's components as the benchmark scored them (tau2 reward_info."
        "reward_breakdown: DB, COMMUNICATE, ENV_ASSERTION, ACTION, NL_ASSERTION); NULL when the "
        "source keeps none.",
        redact=True,
    ),
    Column(
        "db_match",
        pa.bool_(),
        "Whether the environment's final database equals the one the expected actions produce "
        "(tau2 reward_info.db_check.db_match); NULL when not checked.",
    ),
    Column(
        "expected_actions",
        pa.list_(EXPECTED_ACTION),
        "The actions the task expected: name, requestor (assistant or user) and whether a call "
        "matched (tau2 reward_info.action_checks, action_match), else the task's "
        "evaluation_criteria.actions (matched NULL); [] when the task expects none, NULL when "
        "unknown.",
        redact=True,
    ),
]
TRAJECTORIES = _schema(TRAJECTORY_COLUMNS)

# Filled by diagnosis, not by ingest: the `trajectories` table of the outputs carries them.
DIAGNOSED_TRAJECTORY_COLUMNS: list[Column] = [
    Column(
        "fault_class",
        pa.string(),
        "Whose failure the episode shows: infra (a plumbing cause: configuration, parser, "
        "provider, harness, user simulator; wins over model, as it invalidates the "
        "measurement), model, unclassified (causes without a class), unexplained (reward < 1 "
        "and no cause); NULL for an episode without causes that lost no reward.",
    ),
]
TRAJECTORY_TABLE = _schema(TRAJECTORY_COLUMNS + DIAGNOSED_TRAJECTORY_COLUMNS)

FINDING_COLUMNS: list[Column] = [
    Column(
        "finding_id",
        pa.string(),
        "Stable fingerprint of the finding: rule, task, trial and turn (not the message).",
    ),
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
    Column("details", pa.string(), "JSON object of values the rule hands diagnosis, or NULL."),
]
FINDINGS = _schema(FINDING_COLUMNS)

REJECT_COLUMNS: list[Column] = [
    Column("source_path", pa.string(), "File the record came from.", redact=True),
    Column("source_line", pa.int64(), "Line where the unreadable record starts (NULL: file)."),
    Column("source_format", pa.string(), "Format the file was detected as, if any."),
    Column(
        "json_path",
        pa.string(),
        "Where the bad value sits inside the record (JSONPath, e.g. $[3].traj[2]), when known.",
        redact=True,
    ),
    Column("reason", pa.string(), "Why it could not be read, in one line.", redact=True),
    Column("excerpt", pa.string(), "First characters of the record (redacted).", redact=True),
]
REJECTS = _schema(REJECT_COLUMNS)

# The diagnosis and per-run rollups as tables, so SQL users (--db, --parquet, scan().sql) can join
# causes to findings and compare runs without re-deriving them.
CAUSE_COLUMNS: list[Column] = [
    Column("rank", pa.int64(), "1 = the cause to fix first (impact, then causal order)."),
    Column("cause", pa.string(), "Cause id; findings.cause points here."),
    Column("title", pa.string(), "What went wrong, in one line."),
    Column("severity", pa.string(), "Highest severity among its findings."),
    Column("confidence", pa.string(), "hard when any of its findings is hard, else heuristic."),
    Column("trajectories", pa.int64(), "Trajectories it touches."),
    Column("findings", pa.int64(), "Findings it groups (its own rules only)."),
    Column("reward_lost", pa.float64(), "Sum of 1 - reward over the trajectories it touches."),
    Column("why_ranked", pa.string(), "The ranking argument, in words."),
    Column("rules", pa.list_(pa.string()), "Rules whose findings it groups."),
    Column(
        "explains",
        pa.list_(
            pa.struct(
                [
                    pa.field("rule", pa.string()),
                    pa.field("findings", pa.int64()),
                    pa.field("trajectories", pa.int64()),
                ]
            )
        ),
        "Downstream symptoms (other rules' findings) it explains in its trajectories.",
    ),
    Column(
        "fixes",
        pa.list_(
            pa.struct(
                [
                    pa.field("rank", pa.int64()),
                    pa.field("action", pa.string()),
                    pa.field("detail", pa.string()),
                ]
            )
        ),
        "Fixes in priority order, with parameters computed from the data.",
    ),
    Column("trajectory_ids", pa.list_(pa.string()), "Trajectories it touches."),
    Column("evidence", pa.list_(pa.string()), "finding_id of the most telling findings."),
]
CAUSES = _schema(CAUSE_COLUMNS)

RUN_COLUMNS: list[Column] = [
    Column("run_id", pa.string(), "Run (one benchmark invocation)."),
    Column("source_path", pa.string(), "First file the run was read from."),
    Column("source_format", pa.string(), "Detected input format of that file."),
    Column("agent_model", pa.string(), "Agent model (first seen in the run)."),
    Column("user_model", pa.string(), "User-simulator model (first seen in the run)."),
    Column("variant", pa.string(), "Experiment variant (first seen in the run)."),
    Column(
        "domain",
        pa.string(),
        "Benchmark domain / environment (retail, airline, telecom, ...) from the run metadata.",
    ),
    Column(
        "started",
        pa.string(),
        "When the run started, as its artifacts say: a timestamp from the run metadata, else "
        "from a results file name (tau-bench's _MMDDHHMMSS suffix gives MM-DD HH:MM:SS, no "
        "year). NULL when nothing says.",
    ),
    Column(
        "sources",
        pa.list_(pa.string()),
        "Every artifact the run's episodes were read from, sorted.",
        redact=True,
    ),
    Column("trajectories", pa.int64(), "Trajectories in the run."),
    Column("turns", pa.int64(), "Turns in the run."),
    Column("findings", pa.int64(), "Findings in the run."),
    Column("trajectories_with_findings", pa.int64(), "Trajectories with at least one finding."),
    Column("mean_reward", pa.float64(), "Mean reward of its scored trajectories."),
]
RUNS = _schema(RUN_COLUMNS)

TABLES: dict[str, pa.Schema] = {
    "turns": TURNS,
    "trajectories": TRAJECTORY_TABLE,
    "findings": FINDINGS,
    "rejects": REJECTS,
    "causes": CAUSES,
    "runs": RUNS,
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
