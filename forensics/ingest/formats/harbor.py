"""Harbor / Terminal-Bench trials: ATIF `trajectory.json` (+ continuation files) and the
trial's `result.json`.

ATIF (harbor `rfcs/0001-trajectory-format.md`, v1.x) is `{schema_version, session_id, agent,
steps, final_metrics, continued_trajectory_ref}`. Each step (`source` system, user or agent)
is a turn: `message` as content (a string or content parts), `reasoning_content`,
`tool_calls[{tool_call_id, function_name, arguments}]`, `metrics{prompt_tokens,
completion_tokens, cost_usd}`, the step's `model_name`; every `observation.results[]` entry
with content is a tool turn (env) after it. ATIF keeps no finish reason nor output cap (a
`finish_reason` or `stop_reason` in a step's `extra` is read when an agent puts one there).

One model response can span several steps. Harbor's Claude Code converter before 2026-05-31
(harbor `agents/installed/claude_code.py`, #1760 bundles them) and its Codex converter before
2026-06-20 (#1888) wrote one step per event of the agent's own log: a step per content block
(thinking, text, each tool_use), each carrying a copy of the message's `extra` (its
`stop_reason`, e.g. `tool_use` on the text step too) and, until 2026-03-01 (#905), the same
usage. Consecutive agent steps of one model call are one turn (`_same_call`): their text,
reasoning and calls joined, the tool results after them. A call is recognised by an id the
steps share in `extra` (message or response id), by identical prompt usage (prompt and cached
tokens: a later call's prompt holds the earlier output, so it grows), or, for a writer that kept
the usage on the first block only, by a tool-call-only step without usage that follows it.
ATIF-v1.7's `llm_call_count` marks a writer that counts calls itself: its steps stay as they are.

A context hand-off continues the trajectory in `trajectory.cont-N.json` (named by
`continued_trajectory_ref`): those steps are the same episode, each turn located in its own
file; their `is_copied_context` steps repeat what came before and are not turns again. A
continuation file next to its first file is read with it (a note says so); on its own it is
read as a trajectory.

The trial directory's `result.json` (harbor `models/trial/result.py`: task_name,
trial_name, `verifier_result.rewards`, `exception_info{exception_type, exception_message}`,
`agent_info.model_info`) gives the episode its task, trial, reward, termination reason (the
exception type, e.g. AgentTimeoutError) and error. A trial that ended before the agent wrote a
trajectory is an episode without turns, from result.json alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forensics.ingest import jsonrecords
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
from forensics.ingest.records import Collector, Episode, Run, unreadable
from forensics.ingest.registry import FormatSpec

FORMAT = "harbor_atif"
FORMAT_RESULT = "harbor_trial_result"

_ROLES = {"system": "system", "user": "user", "agent": "assistant"}
_ACTORS = {"system": "system", "user": "user_sim", "agent": "agent"}
_CONT = re.compile(r"^(?P<main>.*trajectory)\.cont-\d+\.json$")
_TRAJECTORY = Path("agent") / "trajectory.json"


def sniff(head: str) -> str | None:
    keys = jsonhead.top_level(head)
    version = keys.get("schema_version")
    if isinstance(version, str) and version.upper().startswith("ATIF"):
        return f"JSON object with schema_version {version} (Harbor ATIF trajectory)"
    if {"session_id", "agent", "steps"} <= keys.keys():
        return "JSON object with session_id, agent and steps (Harbor ATIF trajectory)"
    return None


def sniff_result(head: str) -> str | None:
    keys = jsonhead.top_level(head)
    trial_keys = {"agent_info", "verifier_result", "exception_info", "trial_uri"}
    if {"task_name", "trial_name"} <= keys.keys() and trial_keys & keys.keys():
        return "JSON object with task_name, trial_name and agent/verifier info (Harbor trial)"
    return None


# --- the trial --------------------------------------------------------------------------------


def _load(path: Path) -> dict[str, Any] | None:
    try:
        doc = jsonwalk.loads(files.read_text(path))
    except (OSError, ValueError, RecursionError, files.TooLarge):
        return None
    return doc if isinstance(doc, dict) else None


def _apply_result(ep: Episode, result: dict[str, Any]) -> None:
    """Task, trial, reward and how the trial ended, from the trial's result.json."""
    if isinstance(result.get("task_name"), str):
        ep.task_id = result["task_name"]
    rewards = as_dict(as_dict(result.get("verifier_result")).get("rewards"))
    reward = rewards.get("reward", next(iter(rewards.values()), None))
    if isinstance(reward, int | float) and not isinstance(reward, bool):
        ep.reward = as_float(reward)
    exception = as_dict(result.get("exception_info"))
    if isinstance(exception.get("exception_type"), str):
        ep.termination_reason = exception["exception_type"]
        message = error_text(exception.get("exception_message"))
        ep.error = (
            f"{exception['exception_type']}: {message}" if message else exception["exception_type"]
        )
    model = as_dict(as_dict(result.get("agent_info")).get("model_info"))
    if isinstance(model.get("name"), str) and ep.run.agent_model is None:
        provider = model.get("provider")
        ep.run.agent_model = (
            f"{provider}/{model['name']}" if isinstance(provider, str) else model["name"]
        )


def _trial_dir(trajectory: Path) -> Path | None:
    """<trial>/agent/trajectory.json -> <trial>, when the trial's result.json is there."""
    if trajectory.parent.name == "agent" and (trajectory.parent.parent / "result.json").is_file():
        return trajectory.parent.parent
    return None


def _run_id(trial: Path | None, fallback: str) -> str:
    # <job>/<trial>/result.json: the job is the run.
    if trial is not None and trial.parent.name:
        return trial.parent.name
    return fallback


# --- steps -> turns ---------------------------------------------------------------------------


def _walk(path: Path, collector: Collector) -> tuple[dict[str, Any], jsonwalk.LineCounter] | None:
    read = jsonrecords.document(
        collector,
        str(path),
        files.read_text(path),
        FORMAT,
        "not a whole ATIF trajectory",
        lambda text, pos: jsonwalk.obj(text, pos, {"steps": walkers.positioned()}),
    )
    if read is None:
        return None
    doc, line_of = read.value, read.line_of
    if walkers.items(doc, "steps") is None:
        excerpt = json_text(doc["steps"]) or ""
        collector.reject(str(path), 1, "steps is not an array", excerpt, FORMAT, "$.steps")
        doc["steps"] = []
    return doc, line_of


def _add_steps(
    ep: Episode,
    collector: Collector,
    path: Path,
    doc: dict[str, Any],
    line_of: jsonwalk.LineCounter,
    continuation: bool,
) -> tuple[int, int, int]:
    """The steps of one file as turns; (copied-context steps skipped, references skipped,
    steps merged into the turn of the model call before them)."""
    name = str(path)
    agent = as_dict(doc.get("agent"))
    default_model = agent.get("model_name") if isinstance(agent.get("model_name"), str) else None
    default_model = default_model or ep.run.agent_model
    tools = agent.get("tool_definitions")
    copied = refs = merged = 0
    call: list[_Step] = []  # the agent steps of the model call read last, not yet added

    def flush() -> None:
        nonlocal refs
        if call:
            refs += _add_call(ep, name, call, tools)
            call.clear()

    for i, (pos, step) in enumerate(walkers.items(doc, "steps") or []):
        where = f"$.steps[{i}]"
        line = line_of(pos)
        if unreadable(collector, name, line, step, FORMAT, where):
            continue
        if not isinstance(step, dict):
            collector.reject(
                name, line, "step is not a JSON object", json_text(step) or "", FORMAT, where
            )
            continue
        if continuation and step.get("is_copied_context"):
            copied += 1
            continue
        source = step.get("source") if isinstance(step.get("source"), str) else None
        if source == "agent":
            current = _Step(line, where, step, default_model)
            if call and _same_call(call, current):
                merged += 1
            else:
                flush()
            call.append(current)
            continue
        flush()
        ep.add(
            line,
            {"role": _ROLES.get(source or ""), "content": text_of(step.get("message"))},
            actor=_ACTORS.get(source or "", "unknown"),
            source_path=name,
        )
        ep.json_paths[len(ep.messages) - 1] = where
        refs += _add_results(ep, name, line, where, step)
    flush()
    return copied, refs, merged


# Keys of a step's `extra` under which writers keep the id of the model call (the message id of
# Anthropic, the response id of OpenAI, Codex's api_call_id, OpenHands' llm_response_id).
_CALL_IDS = ("message_id", "response_id", "api_call_id", "llm_response_id", "request_id")


@dataclass
class _Step:
    line: int
    where: str
    step: dict[str, Any]
    default_model: str | None

    @property
    def extra(self) -> Mapping[str, Any]:
        return as_dict(self.step.get("extra"))

    @property
    def metrics(self) -> Mapping[str, Any]:
        return as_dict(self.step.get("metrics"))

    def call_id(self) -> tuple[str, str] | None:
        extra = self.extra
        for key in (*_CALL_IDS, "requestId"):
            if isinstance(extra.get(key), str) and extra[key]:
                return key, extra[key]
        return None

    def usage(self) -> tuple[Any, ...] | None:
        """What identifies the prompt the call was made with: prompt and cached tokens (and
        the cache split, when the writer kept it)."""
        metrics = self.metrics
        prompt = as_int(metrics.get("prompt_tokens"))
        if prompt is None or prompt <= 0:
            return None
        extra = as_dict(metrics.get("extra"))
        return (
            prompt,
            as_int(metrics.get("cached_tokens")),
            as_int(extra.get("cache_creation_input_tokens")),
            as_int(extra.get("cache_read_input_tokens")),
        )

    def calls_only(self) -> bool:
        """A step that holds tool calls and nothing the model wrote besides them."""
        reasoning = self.step.get("reasoning_content")
        return (
            bool(_tool_calls(self.step.get("tool_calls")))
            and not (text_of(self.step.get("message")) or "").strip()
            and not (isinstance(reasoning, str) and reasoning.strip())
        )


def _same_call(call: list[_Step], step: _Step) -> bool:
    """Whether an agent step continues the model call whose steps are `call` (see the module
    docstring)."""
    first, last = call[0], call[-1]
    ours, theirs = first.call_id(), step.call_id()
    if ours is not None and theirs is not None and ours[0] == theirs[0]:
        return ours[1] == theirs[1]
    if step.step.get("llm_call_count") is not None or first.step.get("llm_call_count") is not None:
        return False  # a writer that counts calls wrote one step per call
    # A result that came back before the step was in its prompt: only calls written side by
    # side (each step of a parallel call carries its own result) are one response across it.
    answered = bool(as_dict(last.step.get("observation")).get("results"))
    if answered and not (last.calls_only() and step.calls_only()):
        return False
    usage = next((u for s in call if (u := s.usage()) is not None), None)
    if usage is None:
        return False
    if (mine := step.usage()) is not None:
        return mine == usage
    # Usage on the first block only (harbor 2026-03 to 2026-05): a later block without it, one
    # that is not reasoning (which opens a response), continues the call.
    reasoning = step.step.get("reasoning_content")
    return not step.metrics and not (isinstance(reasoning, str) and reasoning.strip())


def _add_call(ep: Episode, name: str, call: list[_Step], tools: Any) -> int:
    """The agent steps of one model call as one assistant turn, their tool results after it;
    returns the sub-agent references skipped."""
    first = call[0]
    texts = [t for s in call if (t := text_of(s.step.get("message")))]
    thoughts = [r for s in call if isinstance(r := s.step.get("reasoning_content"), str) and r]
    finishes = [
        f
        for s in call
        if isinstance(f := s.extra.get("finish_reason", s.extra.get("stop_reason")), str)
    ]
    models = [m for s in call if isinstance(m := s.step.get("model_name"), str)]
    inputs = [v for s in call if (v := as_int(s.metrics.get("prompt_tokens"))) is not None]
    outputs = [v for s in call if (v := as_int(s.metrics.get("completion_tokens"))) is not None]
    costs = [
        as_float(c)
        for s in call
        if isinstance(c := s.metrics.get("cost_usd"), int | float) and not isinstance(c, bool)
    ]
    fields: dict[str, Any] = {
        "actor": "agent",
        "source_path": name,
        "reasoning": "\n\n".join(thoughts) if thoughts else None,
        "input_tokens": inputs[0] if inputs else None,
        # Blocks of one response repeat its usage (a stream updates the output count): the
        # largest is the response's.
        "output_tokens": max(outputs) if outputs else None,
        "cost_usd": max(costs) if costs else None,
        "model": models[0] if models else first.default_model,
        "finish_reason_raw": finishes[-1] if finishes else None,
        "tool_calls": [c for s in call for c in _tool_calls(s.step.get("tool_calls"))],
    }
    if isinstance(tools, list):
        fields |= {"tools_attached": bool(tools), "tool_count": len(tools)}
    content = "\n\n".join(texts) if texts else text_of(first.step.get("message"))
    ep.add(first.line, {"role": "assistant", "content": content}, **fields)
    ep.json_paths[len(ep.messages) - 1] = first.where
    return sum(_add_results(ep, name, s.line, s.where, s.step) for s in call)


def _add_results(ep: Episode, name: str, line: int, where: str, step: dict[str, Any]) -> int:
    """Each observation result with content as a tool turn; returns the references skipped."""
    refs = 0
    results = as_dict(step.get("observation")).get("results")
    for j, result in enumerate(results if isinstance(results, list) else []):
        result = as_dict(result)
        if result.get("content") is None:
            refs += 1  # a reference to a sub-agent's own trajectory file
            continue
        ep.add(
            line,
            {"role": "tool", "content": text_of(result["content"])},
            actor="env",
            source_path=name,
        )
        ep.json_paths[len(ep.messages) - 1] = f"{where}.observation.results[{j}]"
    return refs


def _tool_calls(calls: Any) -> list[dict[str, Any]]:
    out = []
    for call in calls if isinstance(calls, list) else []:
        call = as_dict(call)
        name = call.get("function_name")
        call_id = call.get("tool_call_id")
        out.append(
            {
                "id": call_id if isinstance(call_id, str) else None,
                "name": name if isinstance(name, str) else None,
                "arguments": json_text(call.get("arguments")),
            }
        )
    return out


def _main_of(path: Path) -> Path | None:
    match = _CONT.match(path.name)
    if match is None:
        return None
    main = path.with_name(f"{match['main']}.json")
    return main if main.is_file() else None


def ingest(path: Path, collector: Collector) -> int:
    name = str(path)
    main = _main_of(path)
    if main is not None:
        collector.note(name, f"continuation of {main.name}: read with it")
        collector.metadata_files.add(name)
        return 0
    walked = _walk(path, collector)
    if walked is None:
        return 0
    doc, line_of = walked
    trial = _trial_dir(path)
    session = doc.get("session_id") if isinstance(doc.get("session_id"), str) else path.stem
    run = Run(run_id=_run_id(trial, path.parent.name or "harbor"))
    agent = as_dict(doc.get("agent"))
    if isinstance(agent.get("model_name"), str):
        run.agent_model = agent["model_name"]
    for key in ("name", "version"):
        if isinstance(agent.get(key), str):
            run.labels[f"agent.{key}"] = agent[key]
    if isinstance(doc.get("schema_version"), str):
        run.labels["schema_version"] = doc["schema_version"]
    task = trial.name.split("__")[0] if trial is not None else session
    ep = Episode(
        run=run, source_path=name, source_line=1, source_format=FORMAT, task_id=task, json_path="$"
    )
    if trial is not None:
        result = _load(trial / "result.json")
        if result is not None:
            _apply_result(ep, result)
    copied, refs, merged = _add_steps(ep, collector, path, doc, line_of, continuation=False)
    notes = []
    seen = {path.resolve()}
    ref = doc.get("continued_trajectory_ref")
    while isinstance(ref, str) and ref:
        cont = path.parent / ref
        if cont.resolve() in seen or not cont.is_file():
            notes.append(f"continuation {ref} not found")
            break
        seen.add(cont.resolve())
        walked = _walk(cont, collector)
        if walked is None:
            break
        cont_doc, cont_lines = walked
        more = _add_steps(ep, collector, cont, cont_doc, cont_lines, continuation=True)
        copied, refs, merged = copied + more[0], refs + more[1], merged + more[2]
        ref = cont_doc.get("continued_trajectory_ref")
    if copied:
        notes.append(
            f"{copied} step(s) of continuation files repeat earlier context "
            "(is_copied_context), not turns"
        )
    if refs:
        notes.append(f"{refs} sub-agent trajectory reference(s) not followed")
    if merged:
        notes.append(
            f"{merged} step(s) continue the model call of the step before them (blocks of one "
            "response): one turn each call"
        )
    ep.note = "; ".join(notes) or None
    # A trial whose result.json holds no exception ended as Harbor expects, however its last
    # step reads; without one, a trajectory that stops on tool results was cut (issue 21).
    judged = trial is not None and (trial / "result.json").is_file()
    if not judged and (last := _ending.ends_on_tool_result(ep)) is not None:
        _ending.cut_off(ep, _ending.ATIF_UNFINISHED, last)
    _name_run(run)
    collector.add_episode(ep)
    return 1


def _name_run(run: Run) -> None:
    # A job runs every agent/model pair of its config: each pair is a run of its own.
    if run.agent_model:
        run.run_id = f"{run.run_id}:{run.agent_model}"


def ingest_result(path: Path, collector: Collector) -> int:
    """A trial result: metadata of the trajectory beside it, else an episode of its own."""
    name = str(path)
    read = jsonrecords.document(
        collector, name, files.read_text(path), FORMAT_RESULT, "not a whole trial result"
    )
    if read is None:
        return 0
    result = read.value
    if (path.parent / _TRAJECTORY).is_file():
        collector.note(name, f"trial result, applied to {_TRAJECTORY}")
        collector.metadata_files.add(name)
        return 0
    run = Run(run_id=_run_id(path.parent, "harbor"))
    ep = Episode(
        run=run,
        source_path=name,
        source_line=1,
        source_format=FORMAT_RESULT,
        task_id=path.parent.name.split("__")[0] or None,
        json_path="$",
    )
    _apply_result(ep, result)
    ep.note = "no agent/trajectory.json in the trial directory: the trial left no turns"
    _name_run(run)
    collector.add_episode(ep)
    return 1


_TRIAL = "tests/data/agents/harbor/2026-01-05__12-00-00"

SPECS = (
    FormatSpec(
        name=FORMAT,
        description="Harbor / Terminal-Bench ATIF trajectory",
        detection='a JSON object with schema_version "ATIF…", or with session_id, agent and steps',
        sniff=sniff,
        ingest=ingest,
        priority=300,
        # ATIF keeps no finish reason nor output cap; metrics give usage and cost, the agent
        # block the tools it was offered.
        columns=frozenset(
            {"content", "reasoning", "tool_calls", "input_tokens", "output_tokens", "cost_usd"}
            | {"model", "tools_attached", "tool_count"}
        ),
        extra_columns=frozenset({"finish_reason", "finish_reason_raw"}),
        benchmark=False,
        artifact="trials",
        rerun=None,
        seeds={"harbor_atif": f"{_TRIAL}/hello-world__Xy7Lm2Q/agent/trajectory.json"},
    ),
    FormatSpec(
        name=FORMAT_RESULT,
        description="Harbor trial result.json (reward, exception)",
        detection="a JSON object with task_name, trial_name and agent_info, verifier_result, "
        "exception_info or trial_uri",
        sniff=sniff_result,
        ingest=ingest_result,
        priority=310,
        # The trial's reward and how it ended: the trajectory's, never a turn's.
        columns=frozenset(),
        benchmark=False,
        artifact="trials",
        rerun=None,
        seeds={"harbor_trial_result": f"{_TRIAL}/fix-git__Tq9Rs1U/result.json"},
    ),
)
