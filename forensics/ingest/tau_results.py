"""tau-bench results / checkpoint files: a JSON array of {task_id, reward, info, traj, trial}.

run.py rewrites the file in place after every task, so a killed run can leave a truncated
array. Every complete record is kept; the cut record is rejected with its line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from forensics.ingest import files, jsonwalk
from forensics.ingest.records import (
    Collector,
    Episode,
    Run,
    infer_strategy,
    isolated,
    tau_error,
    tau_reward,
    tau_termination,
)

FORMAT = "tau_bench_results"

# {agent_strategy}-{model}-{temperature}_range_{start}-{end}_user-{user_model}-{user_strategy}_{ts}
_FILENAME = re.compile(
    r"^(?P<strategy>tool-calling|act|react|few-shot)-(?P<model>.+?)-(?P<temp>[\d.]+)_range_"
)


def looks_like(head: str) -> bool:
    stripped = head.lstrip()
    return stripped.startswith("[") and '"task_id"' in head[:4096] and '"traj"' in head


def _run_for(path: Path) -> Run:
    run = Run(run_id=path.stem)
    if m := _FILENAME.match(path.name):
        run.agent_strategy = m.group("strategy")
        run.agent_model = m.group("model")
        run.labels["agent_strategy"] = run.agent_strategy
    return run


def ingest(path: Path, collector: Collector) -> int:
    text = files.read_text(path)
    line_of = jsonwalk.LineCounter(text)
    run = _run_for(path)
    records = 0
    record_walker = lambda t, p: jsonwalk.obj(t, p, {"traj": jsonwalk.positioned_array})  # noqa: E731
    start = jsonwalk.skip_ws(text, 0)
    try:
        for index, (offset, record, _end) in enumerate(jsonwalk.arrays(text, start, record_walker)):
            start = offset
            if not isinstance(record, dict) or "traj" not in record:
                collector.reject(
                    str(path),
                    line_of(offset),
                    "array element is not a tau-bench result record",
                    text[offset : offset + 200],
                    FORMAT,
                    f"$[{index}]",
                )
            else:
                with isolated(collector, str(path), line_of(offset), FORMAT, f"$[{index}]"):
                    add_record(collector, run, path, line_of, offset, record, index)
                    records += 1
            start = _end
    except jsonwalk.WalkError as exc:
        # A file cut mid-write does not end with the array's closing bracket.
        cut = exc.msg != jsonwalk.TRAILING and not text.rstrip().endswith("]")
        where = jsonwalk.skip_ws(text, start)
        if where < len(text) and text[where] in ",]":
            where = jsonwalk.skip_ws(text, where + 1)
        where = min(where, exc.pos)
        error_line = line_of(exc.pos)
        reason = (
            f"truncated file: it ends inside record {records + 1} "
            f"(line {line_of(len(text))}); {records} complete records kept"
            if cut
            else f"invalid JSON at line {error_line}: {exc.msg}; "
            f"the rest of the file ({len(text) - where} chars) was not read"
        )
        collector.reject(str(path), line_of(where), reason, text[where : where + 200], FORMAT)
    return records


def add_record(
    collector: Collector,
    run: Run,
    path: Path,
    line_of: jsonwalk.LineCounter,
    offset: int,
    record: dict[str, Any],
    index: int = 0,
) -> None:
    info = record.get("info")
    record_line = line_of(offset)
    positioned = record.get("traj") or []
    if run.agent_strategy is None:
        run.agent_strategy = infer_strategy([m for _, m in positioned])
    if not isinstance(positioned, list):
        raise ValueError(f"traj is a JSON {type(positioned).__name__}, not an array")
    kept = [(k, o, m) for k, (o, m) in enumerate(positioned) if isinstance(m, dict)]
    messages = [(line_of(o), m) for _, o, m in kept]
    traj = [m for _, m in messages]
    trial = record.get("trial")
    reward = record.get("reward")
    collector.add_episode(
        Episode(
            run=run,
            source_path=str(path),
            source_line=record_line,
            source_format=FORMAT,
            task_id=str(record.get("task_id")),
            trial=trial if isinstance(trial, int) else None,
            reward=tau_reward(info, float(reward) if isinstance(reward, int | float) else None),
            termination_reason=tau_termination(info, traj),
            error=tau_error(info),
            messages=messages,
            json_path=f"$[{index}]",
            json_paths={i: f"$[{index}].traj[{k}]" for i, (k, _, _) in enumerate(kept)},
        )
    )
