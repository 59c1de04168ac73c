"""Compare two scans: new, fixed and persistent causes and findings; reward per task.

Each side is a JSON result (`forensics scan --json`) or scan input (files, directory, glob).
Findings are matched by what they say about the benchmark, not by fingerprint: rule, task,
trial and turn. A fingerprint contains the run's id (the file name), so it would call every
finding of a rerun new; (rule, task, trial, turn) matches the same symptom in a rerun of the
same task, and is the fingerprint's equivalent when the same run is scanned twice.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from forensics import report
from forensics.config import Settings


class DiffError(Exception):
    """A side that is neither a JSON result nor readable scan input (exit code 2)."""


def load_side(spec: str, rules_dirs: list[Path], settings: Settings) -> dict[str, Any]:
    """The report model of one side: a --json result as written, else a fresh scan."""
    path = Path(spec)
    if path.is_file() and path.suffix == ".json":
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            doc = None
        if isinstance(doc, dict) and {"summary", "findings", "causes"} <= set(doc):
            version = doc.get("schema_version", 1)
            if version != report.SCHEMA_VERSION:
                raise DiffError(
                    f"{spec}: a --json result of report schema {version}; this forensics reads "
                    f"schema {report.SCHEMA_VERSION}: scan its inputs again (or pass them instead)"
                )
            return doc
    from forensics.pipeline import scan

    result = scan([spec], rules_dirs=rules_dirs, settings=settings)
    if result.trajectories.is_empty() and not any(getattr(f, "note", None) for f in result.files):
        reasons = "; ".join(
            f"{r['source_path']}: {r['reason']}" for r in result.rejects.head(3).to_dicts()
        )
        raise DiffError(f"{spec}: no readable input ({reasons})")
    return report.build(result)


def _key(f: dict[str, Any]) -> tuple[str, str, int, int]:
    task = f["task_id"] if f.get("task_id") is not None else f["trajectory_id"]
    trial = f["trial"] if f.get("trial") is not None else -1
    turn = f["turn_index"] if f.get("turn_index") is not None else -1
    return (f["rule"], str(task), trial, turn)


def _short(f: dict[str, Any]) -> dict[str, Any]:
    return {
        "rule": f["rule"],
        "severity": f["severity"],
        "task_id": f["task_id"],
        "trial": f["trial"],
        "turn_index": f["turn_index"],
        "trajectory_id": f["trajectory_id"],
        "source": f["source"],
        "message": f["message"],
        "id": f["id"],
    }


def _task_sort(task: str) -> tuple[int, int | str]:
    return (0, int(task)) if task.isdigit() else (1, task)


def compare(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The differences from a (before) to b (after), in a stable order."""
    sides: dict[str, dict[tuple, list[dict[str, Any]]]] = {
        "a": defaultdict(list),
        "b": defaultdict(list),
    }
    for name, model in (("a", a), ("b", b)):
        for f in model["findings"]:
            sides[name][_key(f)].append(f)
    new, fixed, persistent = [], [], []
    for key in sorted(set(sides["a"]) | set(sides["b"])):
        before, after = sides["a"].get(key, []), sides["b"].get(key, [])
        shared = min(len(before), len(after))
        persistent += [_short(f) for f in after[:shared]]
        new += [_short(f) for f in after[shared:]]
        fixed += [_short(f) for f in before[shared:]]

    causes_a = {c["id"]: c for c in a["causes"]}
    causes_b = {c["id"]: c for c in b["causes"]}
    causes = []
    for cid in sorted(set(causes_a) | set(causes_b)):
        ca, cb = causes_a.get(cid), causes_b.get(cid)
        state = "persistent" if ca and cb else "new" if cb else "fixed"
        causes.append(
            {
                "id": cid,
                "title": (cb or ca or {})["title"],
                "state": state,
                "trajectories": [ca["trajectories"] if ca else 0, cb["trajectories"] if cb else 0],
                "findings": [ca["findings"] if ca else 0, cb["findings"] if cb else 0],
                "rank": [ca["rank"] if ca else None, cb["rank"] if cb else None],
            }
        )

    rewards: dict[str, dict[str, list[float]]] = defaultdict(lambda: {"a": [], "b": []})
    for name, model in (("a", a), ("b", b)):
        for t in model.get("trajectories", []):
            task = t["task_id"] if t["task_id"] is not None else t["trajectory_id"]
            entry = rewards[str(task)]
            if t["reward"] is not None:
                entry[name].append(t["reward"])
    by_task = []
    for task in sorted(rewards, key=_task_sort):
        ra, rb = rewards[task]["a"], rewards[task]["b"]
        mean_a = round(sum(ra) / len(ra), 4) if ra else None
        mean_b = round(sum(rb) / len(rb), 4) if rb else None
        delta = round(mean_b - mean_a, 4) if mean_a is not None and mean_b is not None else None
        by_task.append(
            {"task_id": task, "a": mean_a, "b": mean_b, "delta": delta, "n": [len(ra), len(rb)]}
        )
    return {
        "a": {"trajectories": a["summary"]["trajectories"], "findings": len(a["findings"])},
        "b": {"trajectories": b["summary"]["trajectories"], "findings": len(b["findings"])},
        "has_rewards": "trajectories" in a and "trajectories" in b,
        "causes": causes,
        "findings": {"new": new, "fixed": fixed, "persistent": persistent},
        "reward_by_task": by_task,
    }


def _reward(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def render_text(d: dict[str, Any], a_name: str, b_name: str, limit: int = 20) -> str:
    f = d["findings"]
    lines = [
        f"forensics diff: A = {a_name} ({d['a']['trajectories']} trajectories, "
        f"{d['a']['findings']} findings) -> B = {b_name} ({d['b']['trajectories']} trajectories, "
        f"{d['b']['findings']} findings)",
        f"findings: {len(f['new'])} new, {len(f['fixed'])} fixed, "
        f"{len(f['persistent'])} persistent (matched by rule, task, trial, turn)",
    ]
    if d["causes"]:
        lines += ["", "causes:"]
        for c in d["causes"]:
            ta, tb = c["trajectories"]
            lines.append(f"  {c['state']:<10}  {c['id']}: {c['title']} ({ta} -> {tb} trajectories)")
    for state in ("new", "fixed"):
        if not f[state]:
            continue
        lines += ["", f"{state} findings:"]
        for x in f[state][:limit]:
            src = x["source"]
            lines.append(
                f"  {x['rule']} task {x['task_id']} trial {x['trial']} turn {x['turn_index']}  "
                f"{src['path']}:{src['line']}  {x['message']}"
            )
        if len(f[state]) > limit:
            lines.append(f"  … and {len(f[state]) - limit} more (--json for all)")
    if not d["has_rewards"]:
        lines += ["", "reward by task: not available (a JSON result from an older forensics)"]
    elif d["reward_by_task"]:
        lines += ["", "reward by task (mean over trials):", "  task        A      B   delta"]
        for r in d["reward_by_task"]:
            delta = "" if r["delta"] is None else f"{r['delta']:+.2f}"
            lines.append(
                f"  {r['task_id']:<8} {_reward(r['a']):>5}  {_reward(r['b']):>5}  {delta:>6}"
            )
    return "\n".join(lines) + "\n"
