"""tau2-bench results: the monolithic `{timestamp, info, tasks, simulations}` file and the
directory layout (`results.json` without simulations + `simulations/<id>.json`, one per run).

One simulation is one trajectory; its messages keep their `turn_idx` order and their line. The
run's `info` names the models (agent_info.llm, user_info.llm) and the agent implementation
(every `llm_agent*` implementation attaches the domain tools to its requests). Per message:
usage (prompt_tokens -> input_tokens, completion_tokens -> output_tokens), cost, the finish
reason from `raw_data.finish_reason` (v0.x, the litellm Choice) or
`raw_data.choices[0].finish_reason` (>=1.0, the whole ModelResponse), tool calls with their
requestor (a user tool call is the user simulator's: actor user_sim; every tool result is
env), `error: true` tool results and `errors` lists as the turn's error.

v0.x rewrites the file in place after every simulation, so a killed run leaves a cut file:
every complete simulation is kept and the cut one is rejected with its line. A run that
stopped before its first simulation leaves `simulations: []`: no trajectories, and a note.
"""

from __future__ import annotations

import json
import weakref
from pathlib import Path
from typing import Any

from forensics import linear
from forensics.ingest import jsonrecords
from forensics.ingest.parse import files, jsonhead, jsonwalk
from forensics.ingest.parse.apicommon import as_float, count_of
from forensics.ingest.records import (
    Collector,
    Episode,
    Run,
    excerpt,
    isolated,
    reject_trailing,
    unreadable,
)
from forensics.ingest.registry import FormatSpec

FORMAT = "tau2_results"
FORMAT_SIMULATION = "tau2_simulation"

# A leaderboard submission's wrapper names its simulations' list after keys of its own.
_SIMULATIONS = linear.compile(r'"simulations"\s*:\s*\[\s*\{')
_ACTORS = {"assistant": "agent", "user": "user_sim", "tool": "env", "system": "system"}
_SIM_KEYS = frozenset({"messages", "ticks", "termination_reason"})

# The dir layout's simulation files read their run from ../results.json; parse it once per scan.
_RUNS: weakref.WeakKeyDictionary[Collector, dict[Path, Run]] = weakref.WeakKeyDictionary()
# Per results file, each task's expected actions (evaluation_criteria.actions), by task id.
_TASKS: weakref.WeakKeyDictionary[Collector, dict[Path, dict[str, list[dict[str, Any]]]]] = (
    weakref.WeakKeyDictionary()
)


def _is_simulation(keys: Any) -> bool:
    return {"id", "task_id"} <= set(keys) and bool(set(keys) & _SIM_KEYS)


def sniff_results(head: str) -> str | None:
    text = head.lstrip("\ufeff \t\r\n")
    if text.startswith("["):
        # Leaderboard submissions also hold the bare list of SimulationRun objects.
        if _is_simulation(jsonhead.top_level(text)):
            return "JSON array of simulations with id, task_id and messages (tau2-bench results)"
        return None
    if not text.startswith("{"):
        return None
    keys = jsonwalk.top_level_keys(text)
    if "info" in keys and ('"agent_info"' in text or '"user_info"' in text):
        if "simulations" in keys:
            return "JSON object with info, tasks and simulations (tau2-bench results)"
        return "JSON object with info and agent_info/user_info (tau2-bench results)"
    first = _SIMULATIONS.search(text)
    if (
        "simulations" in keys
        and first
        and _is_simulation(jsonhead.top_level(text[first.end() - 1 :]))
    ):
        return "JSON object with simulations of id, task_id and messages (tau2-bench submission)"
    return None


def sniff_simulation(head: str) -> str | None:
    text = head.lstrip("\ufeff \t\r\n")
    if not text.startswith("{"):
        return None
    keys = set(jsonwalk.top_level_keys(text))
    if {"id", "task_id"} <= keys and keys & _SIM_KEYS:
        return "JSON object with id, task_id and termination_reason/messages (tau2 simulation)"
    return None


# --- run metadata ---------------------------------------------------------------------------


def _flat(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, dict):
        for key, inner in value.items():
            _flat(f"{prefix}.{key}", inner, out)
    elif value is not None:
        out[prefix] = value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def run_from_info(run_id: str, info: Any) -> Run:
    """The Run of a tau2 `info` block: models, implementations, llm_args, as labels."""
    run = Run(run_id=run_id)
    if not isinstance(info, dict):
        return run
    agent = got if isinstance(got := info.get("agent_info"), dict) else {}
    user = got if isinstance(got := info.get("user_info"), dict) else {}
    env = got if isinstance(got := info.get("environment_info"), dict) else {}
    run.agent_model = agent.get("llm") if isinstance(agent.get("llm"), str) else None
    run.user_model = user.get("llm") if isinstance(user.get("llm"), str) else None
    labels: dict[str, str] = {}
    for key, value in (
        ("domain", env.get("domain_name")),
        ("agent_implementation", agent.get("implementation")),
        ("user_implementation", user.get("implementation")),
        ("git_commit", info.get("git_commit")),
        ("num_trials", info.get("num_trials")),
        ("max_steps", info.get("max_steps")),
        ("max_errors", info.get("max_errors")),
        ("seed", info.get("seed")),
    ):
        if value is not None:
            labels[key] = str(value)
    _flat("agent.llm_args", agent.get("llm_args"), labels)
    _flat("user.llm_args", user.get("llm_args"), labels)
    run.labels.update(labels)
    for side, args in (("agent", agent.get("llm_args")), ("user", user.get("llm_args"))):
        if isinstance(args, dict):
            base = args.get("api_base") or args.get("base_url")
            if isinstance(base, str):
                setattr(run, f"{side}_endpoint", base)
    return run


def _cap(labels: dict[str, str], side: str) -> int | None:
    for key in ("max_completion_tokens", "max_tokens"):
        value = labels.get(f"{side}.llm_args.{key}")
        if value is not None and (count := count_of(value)) is not None:
            return count
    return None


# --- messages -> turns ----------------------------------------------------------------------


def _finish_reason(raw_data: Any) -> Any:
    if not isinstance(raw_data, dict):
        return None
    if raw_data.get("finish_reason") is not None:
        return raw_data["finish_reason"]
    choices = raw_data.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0].get("finish_reason")
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _turn_fields(msg: dict[str, Any], run: Run, agent_tools: bool | None) -> dict[str, Any]:
    role = msg.get("role")
    actor = _ACTORS.get(role, "unknown") if isinstance(role, str) else "unknown"
    fields: dict[str, Any] = {"actor": actor}
    if actor == "env":
        if msg.get("error") is True:
            fields["error"] = str(msg.get("content") or "tool call failed (error: true)")
        return fields
    raw_data = msg.get("raw_data")
    usage = got if isinstance(got := msg.get("usage"), dict) else {}
    full_usage = raw_data.get("usage") if isinstance(raw_data, dict) else None
    details = (
        (full_usage or {}).get("completion_tokens_details")
        if isinstance(full_usage, dict)
        else None
    )
    raw_reason = _finish_reason(raw_data)
    fields.update(
        finish_reason_raw=str(raw_reason) if raw_reason is not None else None,
        input_tokens=_int(usage.get("prompt_tokens")),
        output_tokens=_int(usage.get("completion_tokens")),
        reasoning_tokens=_int(details.get("reasoning_tokens"))
        if isinstance(details, dict)
        else None,
        cost_usd=as_float(msg["cost"]) if isinstance(msg.get("cost"), int | float) else None,
    )
    errors = msg.get("errors")
    if isinstance(errors, list) and errors:
        fields["error"] = "; ".join(str(e) for e in errors)
    if not msg.get("reasoning") and isinstance(raw_data, dict):
        inner = raw_data.get("message")
        if inner is None and isinstance(raw_data.get("choices"), list) and raw_data["choices"]:
            inner = (
                raw_data["choices"][0].get("message")
                if isinstance(raw_data["choices"][0], dict)
                else None
            )
        if isinstance(inner, dict) and isinstance(inner.get("reasoning_content"), str):
            fields["reasoning"] = inner["reasoning_content"]
    # The greeting tau2 hard-codes has `raw_data: null`: no model call produced it. Trimmed
    # leaderboard files drop the key altogether and keep their calls' request side.
    called = not ("raw_data" in msg and raw_data is None and not usage)
    if actor == "agent" and not called:
        fields.update(model=None, tools_attached=None)
    elif actor == "agent":
        fields.update(
            model=run.agent_model,
            endpoint=run.agent_endpoint,
            tools_attached=agent_tools,
            max_output_tokens=_cap(run.labels, "agent"),
        )
    elif actor == "user_sim":
        fields.update(
            model=run.user_model,
            endpoint=run.user_endpoint,
            tools_attached=None,
            max_output_tokens=_cap(run.labels, "user"),
        )
    return fields


def _termination(value: Any) -> str | None:
    """`user_stop`, also from the `TerminationReason.USER_STOP` an f-string of the enum prints."""
    if not isinstance(value, str) or not value:
        return None
    return value.rsplit(".", 1)[-1].lower() if value.startswith("TerminationReason.") else value


def _action(raw: Any, matched: Any = None) -> dict[str, Any] | None:
    """An expected action (schema.EXPECTED_ACTION) of a tau2 Action object."""
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        return None
    requestor = raw.get("requestor")
    return {
        "name": raw["name"],
        "requestor": requestor if isinstance(requestor, str) else "assistant",
        "matched": matched if isinstance(matched, bool) else None,
    }


def task_actions(tasks: Any) -> dict[str, list[dict[str, Any]]]:
    """Each task's expected actions (evaluation_criteria.actions), by task id; a task without
    evaluation criteria is left out (unknown), one with `actions: []` expects none."""
    out: dict[str, list[dict[str, Any]]] = {}
    for task in tasks if isinstance(tasks, list) else []:
        if not isinstance(task, dict) or task.get("id") is None:
            continue
        criteria = task.get("evaluation_criteria")
        actions = criteria.get("actions") if isinstance(criteria, dict) else None
        if criteria is not None and (actions is None or isinstance(actions, list)):
            found = [_action(a) for a in actions or []]
            out[str(task["id"])] = [a for a in found if a is not None]
    return out


def _scoring(episode: Episode, reward_info: Any, expected: list[dict[str, Any]] | None) -> None:
    """How the simulation was scored: the reward's components, the database check and the
    actions the task expected (action_checks say which a call matched)."""
    info = reward_info if isinstance(reward_info, dict) else {}
    breakdown = info.get("reward_breakdown")
    if isinstance(breakdown, dict):
        episode.reward_breakdown = [
            {"key": str(k), "value": float(v)}
            for k, v in breakdown.items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        ]
    db = info.get("db_check")
    if isinstance(db, dict) and isinstance(db.get("db_match"), bool):
        episode.db_match = db["db_match"]
    checks = info.get("action_checks")
    if isinstance(checks, list):
        found = [
            _action(c.get("action"), c.get("action_match")) for c in checks if isinstance(c, dict)
        ]
        episode.expected_actions = [a for a in found if a is not None]
    else:
        episode.expected_actions = expected


def add_simulation(
    collector: Collector,
    run: Run,
    path: Path,
    line_of: jsonwalk.LineCounter,
    offset: int,
    sim: dict[str, Any],
    source_format: str,
    expected: dict[str, list[dict[str, Any]]] | None = None,
) -> None:
    sim_line = line_of(offset)  # first: LineCounter is linear only for increasing offsets
    implementation = run.labels.get("agent_implementation")
    agent_tools = implementation.startswith("llm_agent") if implementation else None
    positioned = sim.get("messages")
    messages = []
    for msg_offset, msg in positioned if isinstance(positioned, list) else []:
        if isinstance(msg, dict):
            messages.append((msg_offset, msg))
        else:
            shown = excerpt(json.dumps(msg))
            reason = "message is not a JSON object"
            collector.reject(str(path), line_of(msg_offset), reason, shown, source_format)
    messages.sort(key=lambda om: got if isinstance(got := om[1].get("turn_idx"), int) else 0)
    termination = _termination(sim.get("termination_reason"))
    reward_info = sim.get("reward_info")
    reward = reward_info.get("reward") if isinstance(reward_info, dict) else None
    info = got if isinstance(got := sim.get("info"), dict) else {}
    error = str(info["error"]) if info.get("error") is not None else None
    if error is None and termination in ("agent_error", "user_error") and messages:
        last_errors = messages[-1][1].get("errors")
        if isinstance(last_errors, list) and last_errors:
            error = "; ".join(str(e) for e in last_errors)
    note = None
    if not messages:
        ticks = sim.get("ticks")
        if isinstance(ticks, list) and ticks:
            note = (
                f"{sim.get('mode') or 'voice'} simulation logged as {len(ticks)} audio ticks "
                "without text messages: no turns to read"
            )
        else:
            note = "simulation has no messages" + (f" ({termination})" if termination else "")
    trial = sim.get("trial")
    episode = Episode(
        run=run,
        source_path=str(path),
        source_line=sim_line,
        source_format=source_format,
        task_id=str(sim["task_id"]) if sim.get("task_id") is not None else None,
        trial=trial if isinstance(trial, int) and not isinstance(trial, bool) else None,
        reward=as_float(reward) if isinstance(reward, int | float) else None,
        termination_reason=termination,
        error=error,
        note=note,
    )
    _scoring(episode, reward_info, (expected or {}).get(episode.task_id or ""))
    if note:
        where = f"task {episode.task_id}, trial {episode.trial}"
        collector.note(str(path), f"{where}: {note}")
    for msg_offset, msg in messages:
        episode.add(line_of(msg_offset), msg, **_turn_fields(msg, run, agent_tools))
    collector.add_episode(episode)


# --- files ----------------------------------------------------------------------------------


def _messages_walker(text: str, pos: int) -> tuple[Any, int]:
    if text.startswith("null", pos):  # >=1.0 full-duplex simulations may carry messages: null
        return None, pos + 4
    return jsonwalk.positioned_array(text, pos)


def _sim_walker(text: str, pos: int) -> tuple[Any, int]:
    return jsonwalk.obj(text, pos, {"messages": _messages_walker})


def ingest(path: Path, collector: Collector) -> int:
    """A results file: monolithic (with simulations) or the dir layout's results.json."""
    text = files.read_text(path)
    line_of = jsonwalk.LineCounter(text)
    sims: list[tuple[int, Any]] = []
    # Where the next simulation would start (the cut one, when the file ends early), and the
    # run info, kept even when a later part of the file is cut.
    state: dict[str, Any] = {"next": 0, "in_simulations": False, "info": None}

    def info(t: str, pos: int) -> tuple[Any, int]:
        state["info"], end = jsonwalk.walked(t, pos)
        if unreadable(collector, str(path), line_of(pos), state["info"], FORMAT, "$.info"):
            state["info"] = None  # the run's settings are lost, its simulations are not
        return state["info"], end

    def simulations(t: str, pos: int) -> tuple[Any, int]:
        state["in_simulations"] = True
        state["next"] = pos + 1
        end = pos
        for start, sim, end in jsonwalk.elements(t, pos, _sim_walker):
            sims.append((start, sim))
            state["next"] = end
        state["in_simulations"] = False
        return sims, t.index("]", end) + 1

    start = jsonwalk.skip_ws(text, 1 if text.startswith("\ufeff") else 0)
    top: dict[str, Any] = {}
    cut: str | None = None
    try:
        if text.startswith("[", start):  # a bare list of simulations
            top["simulations"], end = simulations(text, start)
        else:
            top, end = jsonwalk.obj(text, start, {"info": info, "simulations": simulations})
        reject_trailing(collector, str(path), text, end, line_of, FORMAT)
    except jsonwalk.WalkError as exc:
        truncated = not text.rstrip().endswith("}")
        where = jsonwalk.skip_ws(text, state["next"]) if state["in_simulations"] else exc.pos
        if where < len(text) and text[where] == ",":
            where = jsonwalk.skip_ws(text, where + 1)
        if state["in_simulations"] and truncated:
            cut = (
                f"truncated file: it ends inside simulation {len(sims) + 1} "
                f"(line {line_of(len(text))}); {len(sims)} complete simulations kept"
            )
        elif state["in_simulations"]:
            cut = (
                f"invalid JSON at line {line_of(exc.pos)} in simulation {len(sims) + 1}: "
                f"{exc.msg}; {len(sims)} complete simulations kept, the rest was not read"
            )
        else:
            kind = "truncated file" if truncated else "invalid JSON"
            cut = f"{kind} at line {line_of(exc.pos)}, before any simulation: {exc.msg}"
            where = start
        collector.reject(str(path), line_of(where), cut, excerpt(text, where), FORMAT)
    run_id = _run_id(path, has_simulations="simulations" in top or bool(sims))
    run = run_from_info(run_id, state["info"])
    if state["info"] is None:
        _submission_run(run, top)
    if isinstance(top.get("timestamp"), str):
        run.labels["started"] = top["timestamp"]
    _RUNS.setdefault(collector, {})[path.resolve()] = run
    expected = _TASKS.setdefault(collector, {})[path.resolve()] = task_actions(top.get("tasks"))
    for index, (offset, sim) in enumerate(sims):
        json_path = f"$.simulations[{index}]"
        if unreadable(collector, str(path), line_of(offset), sim, FORMAT, json_path, text, offset):
            continue
        if not isinstance(sim, dict):
            collector.reject(str(path), line_of(offset), "simulation is not an object", "", FORMAT)
            continue
        with isolated(collector, str(path), line_of(offset), FORMAT):
            add_simulation(collector, run, path, line_of, offset, sim, FORMAT, expected)
    if cut is None and "simulations" not in top:
        _dir_layout_metadata(path, top, text, collector)
    elif cut is None and not sims:
        tasks = top.get("tasks")
        planned = f" ({len(tasks)} tasks planned)" if isinstance(tasks, list) else ""
        collector.note(
            str(path),
            f"empty checkpoint: simulations is []{planned}; the run stopped before its first "
            "simulation finished, so there is nothing to analyse",
        )
    return len(sims)


def _submission_run(run: Run, top: dict[str, Any]) -> None:
    """What a leaderboard submission's wrapper says of its run, where tau2's info would be:
    `model` (the agent's), `agent`, `domain`."""
    model = top.get("model")
    if isinstance(model, str) and model:
        run.agent_model = model
    for key, label in (("agent", "agent"), ("domain", "domain")):
        if isinstance(top.get(key), str) and top[key]:
            run.labels[label] = top[key]


def _run_id(path: Path, has_simulations: bool) -> str:
    """The file's stem, or for the dir layout's results.json its run directory's name."""
    if not has_simulations and path.name == "results.json":
        return path.resolve().parent.name
    return path.stem


def _dir_layout_metadata(path: Path, top: dict[str, Any], text: str, collector: Collector) -> None:
    sim_dir = path.parent / "simulations"
    index = top.get("simulation_index")
    if not sim_dir.is_dir():
        collector.reject(
            str(path),
            1,
            "tau2 results without simulations and no simulations/ directory next to it",
            excerpt(text),
            FORMAT,
        )
        return
    count = sum(1 for p in sim_dir.glob("*.json"))
    collector.metadata_files.add(str(path))
    collector.note(
        str(path),
        f"tau2 directory layout: the run info of {sim_dir.name}/ ({count} simulation files, "
        "each read as its own file when scanned)",
    )
    for entry in index if isinstance(index, list) else []:
        sim_id = entry.get("id") if isinstance(entry, dict) else None
        if isinstance(sim_id, str) and not (sim_dir / f"{sim_id}.json").is_file():
            collector.reject(
                str(path),
                _line_of_text(text, sim_id),
                f"simulation_index lists simulation {sim_id} (task {entry.get('task_id')}), "
                f"but {sim_dir.name}/{sim_id}.json is missing",
                excerpt(json.dumps(entry)),
                FORMAT,
            )


def _line_of_text(text: str, needle: str) -> int:
    at = text.find(f'"{needle}"')
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def _run_for_simulation(path: Path, collector: Collector) -> Run:
    run_dir = path.resolve().parent.parent
    results = run_dir / "results.json"
    runs = _RUNS.setdefault(collector, {})
    if results in runs:
        return runs[results]
    info = tasks = None
    if results.is_file():
        try:
            top = jsonwalk.loads(files.read_text(results))
            info, tasks = top.get("info"), top.get("tasks")
        except (json.JSONDecodeError, AttributeError, OSError):
            info = None  # results.json reports its own problem when it is scanned
    runs[results] = run_from_info(run_dir.name, info)
    _TASKS.setdefault(collector, {})[results] = task_actions(tasks)
    return runs[results]


def ingest_simulation(path: Path, collector: Collector) -> int:
    """One `simulations/<id>.json` of the dir layout: one trajectory, run info from
    ../results.json."""
    text = files.read_text(path)

    def not_whole(exc: jsonwalk.WalkError, line: int) -> str:
        kind = "truncated file" if not text.rstrip().endswith("}") else "invalid JSON"
        return f"{kind} at line {line}: {exc.msg}; the simulation was not read"

    read = jsonrecords.document(
        collector,
        str(path),
        text,
        FORMAT_SIMULATION,
        not_whole,
        _sim_walker,
        skip_bom=True,
        excerpt_from_start=True,
    )
    if read is None:
        return 0
    run = _run_for_simulation(path, collector)
    add_simulation(
        collector,
        run,
        path,
        read.line_of,
        read.start,
        read.value,
        FORMAT_SIMULATION,
        _TASKS.get(collector, {}).get(path.resolve().parent.parent / "results.json"),
    )
    return 1


# Messages with their usage, cost, finish reason and errors, and the run's request side.
_COLUMNS = frozenset(
    {"content", "reasoning", "tool_calls", "tool_call_id", "finish_reason", "finish_reason_raw"}
    | {"input_tokens", "output_tokens", "reasoning_tokens", "max_output_tokens", "tools_attached"}
    | {"model", "endpoint", "error", "cost_usd"}
)
_RERUN = "tau2 run: --task-ids {tasks}"

SPECS = (
    FormatSpec(
        name=FORMAT,
        description="tau2-bench results (monolithic or dir layout, leaderboard submissions)",
        detection="a JSON object with info (agent_info/user_info), tasks and simulations; a "
        "submission's wrapper object or bare array of simulations (id, task_id, messages)",
        sniff=sniff_results,
        ingest=ingest,
        priority=210,
        columns=_COLUMNS,
        benchmark=True,
        artifact="results",
        rerun=_RERUN,
        seeds={
            "tau2_results": "tests/data/tau2/"
            "leaderboard-trimmed_toolorchestra_airline.subset2.json",
            "tau2_submission_wrapper": "tests/data/tau2/"
            "leaderboard-wrapper_adaptive-agent_airline.subset2.json",
            "tau2_submission_array": "tests/data/tau2/"
            "leaderboard-array_adaptive-agent_airline.subset2.json",
        },
    ),
    FormatSpec(
        name=FORMAT_SIMULATION,
        description="tau2-bench simulation file (dir layout)",
        detection="a JSON object with id, task_id and messages/ticks/termination_reason",
        sniff=sniff_simulation,
        ingest=ingest_simulation,
        priority=220,
        columns=_COLUMNS,
        benchmark=True,
        artifact="results",
        rerun=_RERUN,
        seeds={
            "tau2_simulation": "tests/data/tau2/dir_text_run/simulations/"
            "0f6c1e55-0000-4000-8000-000000000002.json"
        },
    ),
)
