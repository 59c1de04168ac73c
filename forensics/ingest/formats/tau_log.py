"""Plain-text logs with embedded objects: tau-bench console output and the wrappers around it.

The log's own structure groups messages into trajectories:
- `Namespace(...)` (tau-bench prints its argparse args) starts a run and names the models;
- `Running task N` starts a trajectory for task N;
- a system message starts a new trajectory when the current one already has a dialogue;
- `✅|❌ task_id=N {info}` closes the trajectory of task N with its reward;
- a printed result record `{task_id, reward, info, traj}` is a whole trajectory on its own.
Wrapper lines contribute labels: `variant=…`, a `vllm serve …` command line (server flags such
as `--tool-call-parser`), `agent endpoint: …` / `user endpoint: …`.
Everything else is ignored; objects that look like data but do not parse become rejects.
"""

from __future__ import annotations

import ast
import keyword
import re
import shlex
from pathlib import Path
from typing import Any

from forensics.ingest.formats import _ending, tau_results
from forensics.ingest.parse import embedded, files, pyrepr, sdk_repr
from forensics.ingest.parse.apicommon import as_float
from forensics.ingest.records import (
    Collector,
    Episode,
    Run,
    infer_strategy,
    is_message,
    isolated,
    tau_error,
    tau_reward,
    tau_termination,
)
from forensics.ingest.registry import TEXT_SCANNER, FormatSpec

FORMAT = "tau_bench_log"

_RUNNING_TASK = re.compile(r"^\s*Running task (\S+?)(?:,|\s|$)")
_RESULT = re.compile(r"(✅|❌)\s*task_id=(\S+)\s*$")
_RESULT_REACH = 4096  # characters before an object where its result marker is looked for
_NAMESPACE = re.compile(r"^\s*Namespace\((.*)\)\s*$")
_RESULTS_SAVED = re.compile(r"Results saved to (\S+)")
_CHECKPOINT = re.compile(r"\(checkpoint path: (\S+?)\)")
_VARIANT = re.compile(r"\bvariant[=:]\s*([\w.-]+)")
_STATUS = re.compile(r"\b(status|exit_reason)=([\w.-]+)")
_MAX_TOKENS = re.compile(r"\bmax_(?:completion_|output_|new_)?tokens\s*[=:]\s*(\d+)")
_ENDPOINT = re.compile(r"\b(agent|user)[ _-]?(?:endpoint|api[ _]base|base[ _]url)\s*[:=]\s*(\S+)")
_SERVER = re.compile(
    r"(vllm serve\s.*|vllm\.entrypoints\.openai\.api_server\s.*|sglang\.launch_server\s.*)"
)
# Every line a text regex below can match contains one of these: one search skips the rest.
_TEXT_FACT = re.compile(
    r"Namespace\(|Running task|Results saved to|\(checkpoint path: |vllm|sglang|variant"
    r"|status=|exit_reason=|max_|endpoint|api[ _]base|base[ _]url"
)
# Server flags worth carrying as labels: they decide how reasoning and tool calls are parsed.
_SERVER_FLAGS = (
    "--tool-call-parser",
    "--reasoning-parser",
    "--enable-auto-tool-choice",
    "--max-model-len",
    "--chat-template",
    "--model",
)
_NAMESPACE_LABELS = (
    "env",
    "agent_strategy",
    "user_strategy",
    "model_provider",
    "user_model_provider",
    "temperature",
    "task_split",
    "num_trials",
    "max_concurrency",
)


def parse_namespace(body: str) -> dict[str, Any]:
    """argparse's `Namespace(a=1, b='x')` printout as a dict (values as Python literals)."""
    fast = _namespace_as_dict(body)
    return fast if fast is not None else _namespace_by_ast(body)


def _namespace_by_ast(body: str) -> dict[str, Any]:
    try:
        call = ast.parse(f"f({body})", mode="eval").body
    except SyntaxError:
        return {}
    out: dict[str, Any] = {}
    if isinstance(call, ast.Call):
        for kw in call.keywords:
            try:
                out[kw.arg or ""] = ast.literal_eval(kw.value)
            except ValueError:
                out[kw.arg or ""] = ast.unparse(kw.value)
    return out


# A string (skipped whole) or a keyword (group 3) that starts the body or follows `, `.
_KWARG = re.compile(pyrepr.STRING + r"|(?:^|(?<=, ))([A-Za-z_][A-Za-z0-9_]*)=(?!=)")


class _Unclosed(Exception):
    pass


def _namespace_as_dict(body: str) -> dict[str, Any] | None:
    """`a=1, b='x'` read as the dict literal `{'a': 1, 'b': 'x'}` through pyrepr, without
    compiling it; None when that is not exactly what the ast reading gives. The keywords
    rewritten must come back as the dict's keys, in order: a `name=` inside a value, a repeated
    keyword or a positional argument makes them differ (or the text not JSON) and the ast
    reading decides."""
    names: list[str] = []

    def key(m: re.Match[str]) -> str:
        name = m.group(3)
        if name is None:
            if not (m.group(1) or m.group(2)):
                # A quote that does not close: no literal, and Python's parser says so.
                raise _Unclosed
            return m.group()
        names.append(name)
        return f'"{name}": '

    try:
        rewritten = _KWARG.sub(key, body)
    except _Unclosed:
        return None
    read, value = pyrepr.loads("{" + rewritten + "}")
    if not read or list(value) != names or any(keyword.iskeyword(n) for n in names):
        return None
    return value


def parse_server_command(cmd: str) -> dict[str, str]:
    try:
        argv = shlex.split(cmd)
    except ValueError:
        argv = cmd.split()
    labels = {"server.command": cmd.strip()}
    if argv[:2] == ["vllm", "serve"] and len(argv) > 2 and not argv[2].startswith("-"):
        labels["server.model"] = argv[2]
    for i, arg in enumerate(argv):
        name, _, inline = arg.partition("=")
        if name in _SERVER_FLAGS:
            key = "server." + name.lstrip("-").replace("-", "_")
            if inline:
                labels[key] = inline
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                labels[key] = argv[i + 1]
            else:
                labels[key] = "true"
    return labels


class _LogReader:
    def __init__(self, path: Path, collector: Collector) -> None:
        self.path = path
        self.collector = collector
        self.runs = 0
        self.run: Run | None = None
        self.last_run: Run | None = None
        self.waiting: dict[str, Episode] = {}
        self.context: dict[str, str] = {}  # wrapper facts seen before the next run starts
        self.episode: Episode | None = None
        self.records = 0

    # -- runs -------------------------------------------------------------------------------
    def start_run(self, args: dict[str, Any]) -> None:
        self.close_episode()
        self.runs += 1
        run = Run(run_id=f"{self.path.name}#run{self.runs}")
        run.agent_model = _str(args.get("model"))
        run.user_model = _str(args.get("user_model"))
        run.agent_strategy = _str(args.get("agent_strategy"))
        for key in _NAMESPACE_LABELS:
            if key in args and args[key] is not None:
                run.labels[key] = str(args[key])
        self.apply_context(run, self.context)
        self.context = {}
        self.run = run

    def current_run(self) -> Run:
        if self.run is None:
            self.runs += 1
            self.run = Run(run_id=f"{self.path.name}#run{self.runs}")
            self.apply_context(self.run, self.context)
            self.context = {}
        return self.run

    @staticmethod
    def apply_context(run: Run, context: dict[str, str]) -> None:
        for key, value in context.items():
            run.labels[key] = value
            if key == "variant":
                run.variant = value
            elif key == "agent_endpoint":
                run.agent_endpoint = value
            elif key == "user_endpoint":
                run.user_endpoint = value

    def note(self, key: str, value: str) -> None:
        """A wrapper fact: it belongs to the open run, or to the next one if none is open."""
        if self.run is not None:
            self.apply_context(self.run, {key: value})
        else:
            self.context[key] = value

    def end_run(self) -> None:
        self.close_episode()
        self.last_run, self.run = self.run, None

    # -- episodes ---------------------------------------------------------------------------
    def open_episode(self, line: int, task_id: str | None) -> Episode:
        self.close_episode()
        self.episode = Episode(
            run=self.current_run(),
            source_path=str(self.path),
            source_line=line,
            source_format=FORMAT,
            task_id=task_id,
        )
        return self.episode

    def close_episode(self) -> None:
        if self.episode is not None:
            ep = self.episode
            self.episode = None
            if not ep.messages and ep.reward is None and ep.task_id is not None:
                # "Running task N" with nothing printed yet: with concurrent tasks its result
                # line comes later, after other tasks started.
                self.waiting[ep.task_id] = ep
                return
            if ep.run.agent_strategy is None:
                ep.run.agent_strategy = infer_strategy([m for _, m in ep.messages])
            if ep.termination_reason is None:
                ep.termination_reason = tau_termination({}, [m for _, m in ep.messages])
            self.collector.add_episode(ep)

    def add_message(self, line: int, msg: dict[str, Any], **fields: Any) -> None:
        ep = self.episode
        if msg.get("role") == "system" and ep is not None and ep.messages:
            ep = None  # a new conversation starts
        if ep is None:
            ep = self.open_episode(line, None)
        ep.add(line, msg, **fields)
        self.records += 1

    def add_result(self, line: int, mark: str, task_id: str, info: Any) -> None:
        ep = self.episode
        if ep is None or (ep.task_id is not None and ep.task_id != task_id):
            self.close_episode()
            # No messages were printed for this task: keep the outcome as an empty trajectory.
            ep = self.waiting.pop(task_id, None) or self.open_episode(line, task_id)
            self.episode = ep
        ep.task_id = task_id
        fallback = 1.0 if mark == "✅" else 0.0
        ep.reward = tau_reward(info, fallback)
        ep.error = tau_error(info)
        ep.termination_reason = tau_termination(info, [m for _, m in ep.messages])
        self.records += 1
        self.close_episode()

    def add_record(self, line: int, record: dict[str, Any]) -> None:
        self.close_episode()
        info = record.get("info")
        traj = got if isinstance(got := record.get("traj"), list) else []
        trial = record.get("trial")
        run = self.current_run()
        if run.agent_strategy is None:
            run.agent_strategy = infer_strategy(traj)
        ep = Episode(
            run=run,
            source_path=str(self.path),
            source_line=line,
            source_format=FORMAT,
            task_id=str(record.get("task_id")),
            trial=trial if isinstance(trial, int) else None,
            reward=tau_reward(info, _float(record.get("reward"))),
            termination_reason=tau_termination(info, traj),
            error=tau_error(info),
            messages=[(line, m) for m in traj if isinstance(m, dict)],
        )
        self.collector.add_episode(ep)
        self.records += 1

    # -- lines ------------------------------------------------------------------------------
    def feed(self, line: embedded.Line) -> None:
        text = line.text
        if text is None:
            self.collector.reject(
                str(self.path),
                line.number,
                files.long_line(),
                source_format=FORMAT,
            )
            return
        if not line.objects:
            self.feed_text(line.number, text)
            return
        for found in line.objects:
            self.feed_object(found)

    def feed_text(self, number: int, text: str) -> None:
        if not _TEXT_FACT.search(text):
            return  # most lines (HTTP logs, progress) state nothing this reader keeps
        if m := _NAMESPACE.match(text):
            self.start_run(parse_namespace(m.group(1)))
        elif m := _RUNNING_TASK.match(text):
            self.open_episode(number, m.group(1))
        elif m := _RESULTS_SAVED.search(text):
            # The results file names the run (and, in tau-bench, when it started).
            self.current_run().labels.setdefault("results_file", m.group(1))
            self.end_run()
        elif m := _CHECKPOINT.search(text):
            self.current_run().labels.setdefault("results_file", m.group(1))
        else:
            self.feed_wrapper(text)

    def feed_wrapper(self, text: str) -> None:
        """Facts a wrapper prints about the run: variant, server flags, endpoints, caps."""
        facts: dict[str, str] = {}
        if m := _SERVER.search(text):
            facts.update(parse_server_command(m.group(1)))
        variant = m.group(1) if (m := _VARIANT.search(text)) else None
        status = {f"wrapper.{m.group(1)}": m.group(2) for m in _STATUS.finditer(text)}
        for m in _ENDPOINT.finditer(text):
            facts[f"{m.group(1)}_endpoint"] = m.group(2)
        if m := _MAX_TOKENS.search(text):
            facts["request.max_tokens"] = m.group(1)
        last = self.last_run
        if status and self.run is None and last is not None and variant in (None, last.variant):
            # "variant=X status=... exit_reason=..." after a run ended reports on that run.
            self.apply_context(last, status)
            return
        if variant is not None:
            facts["variant"] = variant
        for key, value in {**facts, **status}.items():
            self.note(key, value)

    def feed_object(self, found: embedded.Found) -> None:
        if found.error is not None:
            self.collector.reject(
                str(self.path), found.line, found.error, found.text, source_format=FORMAT
            )
            return
        value = found.value
        # Only the text just before the object can hold its `✅ task_id=N`: searching the whole
        # prefix again for each object was quadratic in a line of many objects.
        result = _RESULT.search(found.line_text, max(0, found.start - _RESULT_REACH), found.start)
        if result and isinstance(value, dict):
            self.add_result(found.line, result.group(1), result.group(2), value)
        elif sdk_repr.is_sdk_object(value):
            if (read := sdk_repr.as_message(value)) is not None:
                message, fields = read
                self.add_message(
                    found.line, message, **{k: v for k, v in fields.items() if v is not None}
                )
            else:
                reason = f"printed {value['__class__']} holds no message"
                self.collector.reject(
                    str(self.path), found.line, reason, found.text, source_format=FORMAT
                )
        elif is_message(value):
            self.add_message(found.line, value)
        elif isinstance(value, dict) and {"task_id", "traj"} <= value.keys():
            self.add_record(found.line, value)
        elif isinstance(value, dict) and ("role" in value or "traj" in value):
            self.collector.reject(
                str(self.path),
                found.line,
                "object looks like a message or result but lacks the fields to read it",
                found.text,
                source_format=FORMAT,
            )
        # Other objects (config dumps, HTTP payloads) are not trajectory data.

    def finish(self) -> None:
        # tau-bench prints a result line for every task it runs: a task still open when the
        # log ends was cut off (a log cut short, or a run still going). An episode the log
        # never announced (no `Running task`) has no such line to miss.
        open_ = self.episode
        # One without messages is left waiting by close_episode, and noted there.
        if (
            open_ is not None
            and open_.task_id is not None
            and open_.reward is None
            and open_.messages
        ):
            self.unfinished(open_)
        self.close_episode()
        for ep in self.waiting.values():
            self.unfinished(ep)
            self.collector.add_episode(ep)  # started, never reported a result
        self.waiting.clear()

    def unfinished(self, ep: Episode) -> None:
        said = (
            f"the log ends before the result line of task {ep.task_id} (started on line "
            f"{ep.source_line}): cut short, or the run was still going; "
            f"{len(ep.messages)} message(s) read"
        )
        last = ep.messages[-1][1] if ep.messages else {}
        content = last.get("content")
        text = content.strip()[-300:] if isinstance(content, str) else ""
        # One run-cut-off finding says it (issue 21), not the note alone.
        _ending.cut_off(ep, said, f"last message ({last.get('role')}): {text}" if last else None)
        self.collector.note(str(self.path), said)


def _str(value: Any) -> str | None:
    return None if value is None else str(value)


def _float(value: Any) -> float | None:
    return as_float(value) if isinstance(value, int | float) else None


def ingest(path: Path, collector: Collector) -> int:
    """Read one text log into the collector; returns the number of records recognised."""
    reader = _LogReader(path, collector)
    for line in embedded.scan(files.iter_lines(path)):
        try:
            reader.feed(line)
        except Exception:
            # Handled as `with isolated(...)` around each line would, without entering a
            # context manager for every line of the log.
            with isolated(collector, str(path), line.number, FORMAT):
                raise
    reader.finish()
    return reader.records


def sniff(head: str) -> str | None:
    return "text: scanned line by line for JSON / Python-repr objects and tau-bench markers"


SPECS = (
    FormatSpec(
        name=FORMAT,
        description="text log with embedded messages",
        detection="any other text: JSON objects, Python reprs and printed SDK objects in it",
        sniff=sniff,
        ingest=ingest,
        # Last: it takes any text, and a file it finds nothing in is reported unknown.
        priority=TEXT_SCANNER,
        columns=frozenset(
            {"content", "reasoning", "tool_calls", "tool_call_id", "tool_name"}
            | {"finish_reason", "finish_reason_raw", "input_tokens", "output_tokens"}
            | {"reasoning_tokens", "max_output_tokens", "tools_attached", "model", "endpoint"}
        ),
        benchmark=True,
        artifact="log",
        rerun=tau_results.RERUN,
        seeds={
            "tau_bench_log": "sample_logs/output2.txt",
            "sdk_repr_log": "tests/data/traces/sdk_repr/langgraph_prints.log",
        },
    ),
)
