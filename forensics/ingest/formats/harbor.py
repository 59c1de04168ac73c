"""Harbor / Terminal-Bench trials: ATIF `trajectory.json` (+ continuation files) and the
trial's `result.json`.

ATIF (harbor `rfcs/0001-trajectory-format.md`, v1.x) is `{schema_version, session_id, agent,
steps, final_metrics, continued_trajectory_ref}`. Each step (`source` system, user or agent)
is a turn: `message` as content (a string or content parts), `reasoning_content`,
`tool_calls[{tool_call_id, function_name, arguments}]`, `metrics{prompt_tokens,
completion_tokens, cost_usd}`, the step's `model_name`; every `observation.results[]` entry
with content is a tool turn (env) after it. ATIF keeps no finish reason nor output cap (a
`finish_reason` or `stop_reason` in a step's `extra` is read when an agent puts one there).

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
from pathlib import Path
from typing import Any

from forensics.ingest import jsonrecords
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
) -> tuple[int, int]:
    """The steps of one file as turns; (copied-context steps skipped, references skipped)."""
    name = str(path)
    agent = as_dict(doc.get("agent"))
    default_model = agent.get("model_name") if isinstance(agent.get("model_name"), str) else None
    default_model = default_model or ep.run.agent_model
    tools = agent.get("tool_definitions")
    copied = refs = 0
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
        fields: dict[str, Any] = {
            "actor": _ACTORS.get(source or "", "unknown"),
            "source_path": name,
        }
        if source == "agent":
            metrics = as_dict(step.get("metrics"))
            cost = metrics.get("cost_usd")
            extra = as_dict(step.get("extra"))
            finish = extra.get("finish_reason", extra.get("stop_reason"))
            model = (
                step.get("model_name") if isinstance(step.get("model_name"), str) else default_model
            )
            reasoning = step.get("reasoning_content")
            fields |= {
                "reasoning": reasoning if isinstance(reasoning, str) else None,
                "input_tokens": as_int(metrics.get("prompt_tokens")),
                "output_tokens": as_int(metrics.get("completion_tokens")),
                "cost_usd": as_float(cost)
                if isinstance(cost, int | float) and not isinstance(cost, bool)
                else None,
                "model": model,
                "finish_reason_raw": finish if isinstance(finish, str) else None,
                "tool_calls": _tool_calls(step.get("tool_calls")),
            }
            if isinstance(tools, list):
                fields |= {"tools_attached": bool(tools), "tool_count": len(tools)}
        ep.add(
            line,
            {"role": _ROLES.get(source or ""), "content": text_of(step.get("message"))},
            **fields,
        )
        ep.json_paths[len(ep.messages) - 1] = where
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
    return copied, refs


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
    copied, refs = _add_steps(ep, collector, path, doc, line_of, continuation=False)
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
        copied, refs = copied + more[0], refs + more[1]
        ref = cont_doc.get("continued_trajectory_ref")
    if copied:
        notes.append(
            f"{copied} step(s) of continuation files repeat earlier context "
            "(is_copied_context), not turns"
        )
    if refs:
        notes.append(f"{refs} sub-agent trajectory reference(s) not followed")
    ep.note = "; ".join(notes) or None
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
