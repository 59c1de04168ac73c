"""Ingest: files in, tables out. Each file's format is detected from its first bytes."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from forensics import progress
from forensics.ingest import fusion
from forensics.ingest.api import gemini
from forensics.ingest.formats import (
    atropos,
    capture,
    cassette,
    claude_code,
    har,
    harbor,
    inspect_ai,
    ollama_capture,
    openhands,
    otlp,
    sharegpt,
    sidecars,
    sse_capture,
    swe_agent,
    tau2,
    tau_log,
    tau_results,
)
from forensics.ingest.parse import files, jsonwalk
from forensics.ingest.records import NESTED_TOO_DEEPLY, Collector
from forensics.ingest.rows import clean_text


@dataclass(frozen=True)
class Format:
    name: str
    description: str
    sniff: Callable[[str], str | None]  # head of the file as text -> why it matches, or None
    ingest: Callable[[Path, Collector], int]
    # A container format (a zip of JSON members, …) claims its file from the raw first bytes
    # and the path, before text detection would call the file binary.
    claim: Callable[[bytes, Path | None], str | None] | None = None
    # The turn columns (schema.RAW_TURNS) its reader can fill, beyond the identity columns
    # every reader fills: `forensics formats` derives from it which rules can run on the
    # format. None: not declared.
    columns: frozenset[str] | None = None
    # How the format is recognised, in words, for `forensics formats` (else the description).
    detection: str | None = None


def _sniff_tau_results(head: str) -> str | None:
    if tau_results.looks_like(head):
        return "JSON array whose first element has task_id and traj (tau-bench results)"
    return None


def _sniff_text(head: str) -> str | None:
    return "text: scanned line by line for JSON / Python-repr objects and tau-bench markers"


# Column declarations shared by formats read by the same code (`forensics formats`).
_MESSAGE_COLUMNS = frozenset(
    {"content", "reasoning", "tool_calls", "tool_call_id", "finish_reason", "finish_reason_raw"}
)
_TAU2_COLUMNS = _MESSAGE_COLUMNS | {
    "input_tokens", "output_tokens", "reasoning_tokens", "max_output_tokens", "tools_attached",
    "model", "endpoint", "error", "cost_usd",
}  # fmt: skip
# A response with its request: every dialect of exchange.py and the request side.
_API_RESPONSE_COLUMNS = _MESSAGE_COLUMNS | {
    "input_tokens", "output_tokens", "reasoning_tokens", "model", "error", "http_status",
    "stream", "stream_completed", "tool_calls_without_type",
}  # fmt: skip
_API_COLUMNS = _API_RESPONSE_COLUMNS | {
    "max_output_tokens", "tools_attached", "tool_choice", "tool_count", "endpoint",
    "enable_thinking", "reasoning_budget", "reasoning_effort", "request_hash", "request_keys",
    "offered_tools", "tool_call_id", "replayed",
}  # fmt: skip
_GEMINI_COLUMNS = _API_COLUMNS - {
    "tool_calls_without_type", "enable_thinking", "request_keys", "request_hash", "tool_count",
}  # fmt: skip

# First match wins; the text scanner takes whatever else is text and reports it if it finds
# nothing.
FORMATS: list[Format] = [
    Format(
        inspect_ai.FORMAT,
        "Inspect AI .eval log (ZIP of JSON members, deflate or zstd)",
        lambda head: None,
        inspect_ai.ingest_eval,
        claim=inspect_ai.claim,
    ),
    Format(
        inspect_ai.FORMAT_JSON,
        "Inspect AI .json log",
        inspect_ai.sniff_json,
        inspect_ai.ingest_json,
    ),
    Format(
        tau_results.FORMAT,
        "tau-bench results / checkpoint JSON",
        _sniff_tau_results,
        tau_results.ingest,
        columns=_MESSAGE_COLUMNS | {"tools_attached", "model", "error"},
        detection='a JSON array whose head holds "task_id" and "traj"',
    ),
    Format(
        tau2.FORMAT,
        "tau2-bench results (monolithic or dir layout)",
        tau2.sniff_results,
        tau2.ingest,
        columns=_TAU2_COLUMNS,
        detection="a JSON object with info (agent_info/user_info), tasks and simulations",
    ),
    Format(
        tau2.FORMAT_SIMULATION,
        "tau2-bench simulation file (dir layout)",
        tau2.sniff_simulation,
        tau2.ingest_simulation,
        columns=_TAU2_COLUMNS,
        detection="a JSON object with id, task_id and messages/ticks/termination_reason",
    ),
    Format(harbor.FORMAT, "Harbor / Terminal-Bench ATIF trajectory", harbor.sniff, harbor.ingest),
    Format(
        harbor.FORMAT_RESULT,
        "Harbor trial result.json (reward, exception)",
        harbor.sniff_result,
        harbor.ingest_result,
    ),
    Format(
        openhands.FORMAT,
        "OpenHands V1 event (events/ directory)",
        openhands.sniff,
        openhands.ingest,
        claim=openhands.claim,
    ),
    Format(
        openhands.FORMAT_STATE,
        "OpenHands V1 base_state.json",
        openhands.sniff_state,
        openhands.ingest_state,
    ),
    Format(
        openhands.FORMAT_LEGACY,
        "OpenHands event list / evaluation output.jsonl (before V1)",
        openhands.sniff_legacy,
        openhands.ingest_legacy,
    ),
    Format(swe_agent.FORMAT, "SWE-agent .traj trajectory", swe_agent.sniff, swe_agent.ingest),
    Format(
        swe_agent.FORMAT_MINI,
        "mini-swe-agent trajectory (.traj.json)",
        swe_agent.sniff_mini,
        swe_agent.ingest_mini,
    ),
    Format(
        gemini.FORMAT,
        "Gemini generateContent responses / SDK dumps",
        gemini.sniff,
        gemini.ingest,
        columns=_GEMINI_COLUMNS,
        detection="Gemini response keys (candidates, promptFeedback, usageMetadata) in one "
        "body, JSONL, a JSON-array stream or alt=sse events",
    ),
    # API captures: before the sidecar sniffer, whose small status objects a lone API body
    # could resemble. Cassettes are YAML as often as JSON: before the text scanner takes them.
    Format(
        cassette.FORMAT,
        "HTTP cassettes (vcrpy, Ruby VCR, go-vcr) of LLM API calls",
        cassette.sniff,
        cassette.ingest,
        columns=_API_COLUMNS,
        detection="a YAML or JSON document whose interactions / http_interactions list holds "
        "recorded HTTP exchanges",
    ),
    Format(
        har.FORMAT,
        "HAR 1.2 capture of LLM API calls",
        har.sniff,
        har.ingest,
        columns=_API_COLUMNS,
        detection="a JSON object with log.entries / log.creator",
    ),
    Format(
        capture.LITELLM_FORMAT,
        "LiteLLM standard logging payloads / spend-log rows",
        capture.sniff_litellm,
        capture.ingest_litellm,
        columns=_API_COLUMNS,
        detection="records with call_type (StandardLoggingPayload, spend-log rows)",
    ),
    # Before captures: a generate answer's `response` key is not a request/response pair.
    Format(
        ollama_capture.FORMAT,
        "Ollama answers saved as NDJSON (streams, whole answers)",
        ollama_capture.sniff,
        ollama_capture.ingest,
        columns=_API_COLUMNS,
        detection="a first object with model, done and message or response (Ollama answers)",
    ),
    Format(
        capture.FORMAT,
        "captured LLM API calls (request/response pairs, Batch lines, bodies)",
        capture.sniff,
        capture.ingest,
        columns=_API_COLUMNS,
        detection="records with request/response, custom_id (Batch), or bare response bodies",
    ),
    Format(
        sse_capture.FORMAT,
        "streamed response bodies (SSE)",
        sse_capture.sniff,
        sse_capture.ingest,
        columns=_API_RESPONSE_COLUMNS | {"replayed"},
        detection="server-sent events (data: lines) that are not Gemini chunks",
    ),
    Format(
        sharegpt.FORMAT,
        "ShareGPT conversations with Hermes <tool_call> text (hermes-agent, Hermes datasets)",
        sharegpt.sniff,
        sharegpt.ingest,
        columns=frozenset(
            {"content", "reasoning", "tool_calls", "model", "tools_attached", "tool_count"}
        ),
        detection="JSONL lines or a JSON array of objects with `conversations` of from/value turns",
    ),
    Format(
        claude_code.FORMAT,
        "Claude Code session transcript (~/.claude/projects/*/*.jsonl)",
        claude_code.sniff,
        claude_code.ingest,
        columns=frozenset(
            {
                "content",
                "reasoning",
                "tool_calls",
                "tool_call_id",
                "finish_reason",
                "finish_reason_raw",
                "input_tokens",
                "output_tokens",
                "max_output_tokens",
                "tools_attached",
                "model",
                "http_status",
                "error",
            }
        ),
        detection="JSONL lines with parentUuid/sessionId, or a first summary (leafUuid), "
        "file-history-snapshot or other session line; stream-json output (system init line "
        "with session_id)",
    ),
    Format(
        otlp.FORMAT,
        "OpenTelemetry traces of LLM calls (GenAI semconv, OpenInference, OpenLLMetry)",
        otlp.sniff,
        otlp.ingest,
        columns=frozenset(
            {
                "content",
                "reasoning",
                "tool_calls",
                "finish_reason",
                "finish_reason_raw",
                "input_tokens",
                "output_tokens",
                "reasoning_tokens",
                "max_output_tokens",
                "tools_attached",
                "model",
                "endpoint",
                "http_status",
                "error",
            }
        ),
        detection="OTLP JSON with resourceSpans (one export per line or one document), or "
        "ConsoleSpanExporter objects with context.trace_id/span_id",
    ),
    Format(
        atropos.FORMAT,
        "Atropos scored groups (process-mode rollout dumps)",
        atropos.sniff,
        atropos.ingest,
        columns=frozenset(
            {"content", "reasoning", "tool_calls", "tool_call_id", "max_output_tokens"}
        ),
        detection='JSONL whose lines start with {"tokens": [[<ids>…, or objects with tokens, '
        "masks and scores",
    ),
    Format(
        sidecars.FORMAT,
        "run-metadata sidecar (labels its run)",
        sidecars.sniff,
        sidecars.ingest,
        columns=frozenset(),  # labels the run's episodes; fills no turn
        detection="a small JSON object with run status fields (status, exit_reason, …)",
    ),
    Format(
        tau_log.FORMAT,
        "text log with embedded messages",
        _sniff_text,
        tau_log.ingest,
        columns=_MESSAGE_COLUMNS
        | {"input_tokens", "output_tokens", "reasoning_tokens", "max_output_tokens"}
        | {"tools_attached", "model", "endpoint"},
        detection="any other text: JSON objects, Python reprs and printed SDK objects in it",
    ),
]


@dataclass
class FileReport:
    path: str
    format: str | None
    reason: str
    records: int
    # What ingest says about a file it read without rows (an empty checkpoint, run metadata).
    note: str | None = None
    # The file describes a run rather than holds its episodes: no rows is no failure.
    metadata: bool = False


@dataclass
class Ingested:
    turns: pa.Table
    trajectories: pa.Table
    rejects: pa.Table
    files: list[FileReport]
    # (path, reason) of entries a directory walk passed over: hidden, not artifacts, outputs.
    skipped: list[tuple[str, str]] = field(default_factory=list)


def detect(head: bytes, path: Path | None = None) -> tuple[Format | None, str]:
    """The format of a file from its first bytes (and its path, for containers), and the
    reason for the verdict."""
    for fmt in FORMATS:
        if fmt.claim is not None and (why := fmt.claim(head, path)) is not None:
            return fmt, why
    if not head.strip():
        return None, "empty file"
    if b"\x00" in head:
        return None, "binary file (NUL bytes), not a log or JSON"
    text = head.decode("utf-8", errors="replace")
    if text.count("\ufffd") > max(8, len(text) // 100):
        return None, "binary file (mostly invalid UTF-8), not a log or JSON"
    text = jsonwalk.skip_broken_lead(text)
    for fmt in FORMATS:
        try:
            why = fmt.sniff(text)
        except Exception:
            continue
        if why is not None:
            return fmt, why
    return None, "unknown format"


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Parsed JSON holds no reference cycles, nor do the rows built from it, yet every dict
    parsed would trigger the cyclic collector, which re-walks all the rows collected so far: a
    fifth of the ingest time on large captures. Reference counting still frees everything (a
    cycle an ingester did make waits for the collector to be back); the collector's previous
    state is restored."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def ingest(
    paths: list[str],
    *,
    exclude: list[Path] | None = None,
    limits: files.Limits | None = None,
    ignore: Callable[[Path], bool] | None = None,
    fuse: bool = True,
) -> Ingested:
    """Read every file named by paths (files, directories, globs) into the tables.

    exclude: the tool's own outputs, skipped in directory walks; ignore: the user's
    ignore-paths; fuse: one trajectory per episode seen in several artifacts (fusion).
    Raises files.InputError only for a path that does not exist.
    """
    expansion = files.expand(paths, exclude)
    if ignore is not None:
        ignored = {p for p in expansion.files if ignore(p)}
        expansion.skipped += [(str(p), "ignore-paths") for p in sorted(ignored)]
        expansion.files = [p for p in expansion.files if p not in ignored]
    # The collector comes back on only once the rows are Arrow tables and the Python objects
    # they were built from are freed: it never walks them (otherwise its first passes after
    # the read walk every row and message once more, for nothing).
    with no_cyclic_gc():
        ingested = _read(expansion, limits or files.Limits(), fuse)
    # A full collection empties the interpreter's free lists (tuples, dicts, floats): their
    # objects, the last ones the read freed, are scattered over the arenas of the parsed JSON
    # and keep them from going back to the system (about 100 MB after a 1 GB capture).
    gc.collect()
    return ingested


def _read(expansion: files.Expansion, limits: files.Limits, fuse: bool) -> Ingested:
    collector = Collector()
    reports: list[FileReport] = []
    for path, reason in expansion.rejected:
        collector.reject(path, None, reason)
        reports.append(FileReport(clean_text(path), None, reason, 0))
    progress.begin(expansion.files)
    progress.counting(lambda: collector.turn_count)
    for path in expansion.files:
        progress.file(path)
        with files.reading(limits) as damage:
            reports.append(_read_file(path, collector, damage))
    turns, trajectories, rejects = collector.tables()
    trajectories = sidecars.apply(trajectories, collector.run_metadata)
    for report in reports:
        if report.format == sidecars.FORMAT:
            report.note = sidecars.describe(Path(report.path), trajectories)
    fused = fusion.fuse(turns, trajectories) if fuse else fusion.unfused(turns, trajectories)
    turns, trajectories = fused.turns, fused.trajectories
    for report in reports:
        if others := fused.merged_into.get(report.path):
            said = f"episodes also read from {', '.join(sorted(others))}: counted once there"
            report.note = f"{report.note}; {said}" if report.note else said
    reports.sort(key=lambda r: r.path)
    skipped = [(clean_text(p), reason) for p, reason in expansion.skipped]
    return Ingested(turns, trajectories, rejects, reports, skipped)


def _read_file(path: Path, collector: Collector, damage: list[str]) -> FileReport:
    """One file into the collector. Whatever happens inside a reader stays with this file: it
    becomes a reject naming the file; the rows it had already produced are kept."""
    name = clean_text(str(path))  # what tables and reports call the file (see records)
    try:
        fmt, why = detect(files.head(path), path)
    except OSError as exc:
        fmt, why = None, f"cannot read: {exc.strerror or exc}"
    if fmt is None:
        if damage:  # nothing could be inflated: the damage is the reason, not "empty"
            why = f"{damage[0]}; nothing before it could be read"
        collector.reject(name, None, why)
        return FileReport(name, None, why, 0)
    rejects_before = collector.rejects_of(name)
    episodes_before = len(collector.trajectory_rows)
    failure: str | None = None
    try:
        records = fmt.ingest(path, collector)
    except files.TooLarge as exc:
        failure = str(exc)
    except OSError as exc:
        failure = f"read error: {exc.strerror or exc}"
    except RecursionError:
        failure = NESTED_TOO_DEEPLY
    except MemoryError:
        failure = "out of memory reading this file"
    except Exception as exc:  # a bug in a reader: this file's reject, never the scan's end
        failure = (
            f"the {fmt.name} reader failed ({type(exc).__name__}: {exc}); this is a bug in "
            "forensics, please report it"
        )
    if failure is not None:
        collector.reject(name, None, f"{failure}; records read before it are kept", "", fmt.name)
        records = len(collector.trajectory_rows) - episodes_before
    for reason in damage:
        collector.reject(name, None, reason, source_format=fmt.name)
    note = "; ".join(collector.notes.get(str(path), [])) or None
    if records == 0 and note is None and collector.rejects_of(name) == rejects_before:
        # The text scanner accepts any text; a file it found nothing in was never a log.
        reason = "no recognizable records (unknown format)"
        collector.reject(name, None, reason)
        return FileReport(name, None, reason, 0)
    metadata = str(path) in collector.metadata_files
    return FileReport(name, fmt.name, why, records, note, metadata)
