"""Compare two scans: new, fixed and persistent causes and findings; reward per task.

Each side is a JSON result (`forensics scan --json`) or scan input (files, directory, glob).
Findings are matched by what they say about the benchmark: rule, task, trial and turn, the
key the fingerprint hashes (check/fingerprint.py), so the same symptom in a rerun of the same
task matches whatever the rerun's file is called. Several findings of one key on a side are
matched as counts.

An episode (task, trial) of A that B does not hold was not rerun: its findings and causes are
"not rerun", never "fixed" — a rerun of a subset of the tasks says nothing about the others.
`only_common` restricts the whole comparison (causes, findings, rewards) to the episodes both
sides hold.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from forensics import gate
from forensics.check import fingerprint
from forensics.config import Settings
from forensics.report import model as report
from forensics.report.render import jsonout

# One side's report model: report.build's, or a --json result as read (older ones lack keys).
Model = Mapping[str, Any]


class DiffError(Exception):
    """A side that is neither a JSON result nor readable scan input (exit code 2)."""


def load_side(spec: str, rules_dirs: list[Path], settings: Settings) -> Model:
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
    if result.trajectories.is_empty():  # no episode: nothing to compare (as scan's gate says)
        cover = gate.coverage(result)
        why = [f"{path}: {reason}" for path, reason in cover.unreadable[:3]]
        why = why or [f"{f.path}: {f.note or 'no episode'}" for f in result.files[:3]]
        raise DiffError(f"{spec}: no readable input ({'; '.join(why)})")
    return report.build(result)


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


Episode = fingerprint.Episode
_episode = fingerprint.episode
_key = fingerprint.key


def _episodes(model: Model) -> dict[str, Episode] | None:
    """trajectory id -> episode of one side; None for a JSON result without its trajectories."""
    if "trajectories" not in model:
        return None
    return {t["trajectory_id"]: _episode(t) for t in model["trajectories"]}


def _label(episodes: set[Episode], limit: int = 10) -> list[str]:
    tasks = sorted({task for task, _ in episodes}, key=_task_sort)
    return tasks[:limit] + ([f"… {len(tasks) - limit} more"] if len(tasks) > limit else [])


def compare(a: Model, b: Model, only_common: bool = False) -> dict[str, Any]:
    """The differences from a (before) to b (after), in a stable order.

    An episode of a that b does not hold was not rerun: its findings and causes are "not
    rerun", never "fixed". only_common: compare only the episodes both hold.
    """
    of_a, of_b = _episodes(a), _episodes(b)
    known = of_a is not None and of_b is not None
    if only_common and not known:
        raise DiffError(
            "--only-common needs the episodes of both sides: a --json result of this forensics "
            "or scan input"
        )
    in_a = set((of_a or {}).values()) | {_episode(f) for f in a["findings"]}
    in_b = set((of_b or {}).values()) | {_episode(f) for f in b["findings"]}
    common = in_a & in_b

    def compared(episode: Episode) -> bool:
        return not only_common or episode in common

    sides: dict[str, dict[fingerprint.Key, list[dict[str, Any]]]] = {
        "a": defaultdict(list),
        "b": defaultdict(list),
    }
    for name, model in (("a", a), ("b", b)):
        for f in model["findings"]:
            if compared(_episode(f)):
                sides[name][_key(f)].append(f)
    new, fixed, persistent, not_rerun = [], [], [], []
    for key in sorted(set(sides["a"]) | set(sides["b"])):
        before, after = sides["a"].get(key, []), sides["b"].get(key, [])
        if known and (key[1], key[2]) not in in_b:
            not_rerun += [_short(f) for f in before]  # B never ran this episode
            continue
        shared = min(len(before), len(after))
        persistent += [_short(f) for f in after[:shared]]
        new += [_short(f) for f in after[shared:]]
        fixed += [_short(f) for f in before[shared:]]

    def counts(
        cause: dict[str, Any] | None, model: Model, of: dict[str, Episode] | None
    ) -> list[int]:
        """(trajectories, findings) of a cause on the episodes compared."""
        if cause is None:
            return [0, 0]
        if not only_common or of is None:
            return [cause["trajectories"], cause["findings"]]
        ids = {t for t in cause["trajectory_ids"] if of.get(t) in common}
        rules = set(cause["rules"])
        found = [f for f in model["findings"] if f["trajectory_id"] in ids and f["rule"] in rules]
        return [len(ids), len(found)]

    causes_a = {c["id"]: c for c in a["causes"]}
    causes_b = {c["id"]: c for c in b["causes"]}
    causes = []
    for cid in sorted(set(causes_a) | set(causes_b)):
        ca, cb = causes_a.get(cid), causes_b.get(cid)
        ta, fa = counts(ca, a, of_a)
        tb, fb = counts(cb, b, of_b)
        if not ta and not tb:
            continue  # on none of the episodes compared
        if ta and tb:
            state = "persistent"
        elif tb:
            state = "new"
        elif (
            of_a is not None  # as `known` says
            and known
            and ca
            and not any(of_a.get(t) in in_b for t in ca["trajectory_ids"])
        ):
            state = "not rerun"  # every episode it touched is missing from B
        else:
            state = "fixed"
        causes.append(
            {
                "id": cid,
                "title": (cb or ca or {})["title"],
                "state": state,
                "trajectories": [ta, tb],
                "findings": [fa, fb],
                "rank": [ca["rank"] if ca else None, cb["rank"] if cb else None],
            }
        )

    rewards: dict[str, dict[str, list[float]]] = defaultdict(lambda: {"a": [], "b": []})
    for name, model in (("a", a), ("b", b)):
        for t in model.get("trajectories", []):
            if not compared(_episode(t)):
                continue
            entry = rewards[_episode(t)[0]]
            if t["reward"] is not None:
                entry[name].append(t["reward"])
    tasks_b = {task for task, _ in in_b}
    by_task = []
    for task in sorted(rewards, key=_task_sort):
        ra, rb = rewards[task]["a"], rewards[task]["b"]
        mean_a = round(sum(ra) / len(ra), 4) if ra else None
        mean_b = round(sum(rb) / len(rb), 4) if rb else None
        delta = round(mean_b - mean_a, 4) if mean_a is not None and mean_b is not None else None
        row = {"task_id": task, "a": mean_a, "b": mean_b, "delta": delta, "n": [len(ra), len(rb)]}
        if known and task not in tasks_b:
            row["not_rerun"] = True  # B holds no episode of this task: its "—" is not a 0
        by_task.append(row)
    return {
        "a": _side(a),
        "b": _side(b),
        "has_rewards": "trajectories" in a and "trajectories" in b,
        "only_common": only_common,
        # None when a side is a JSON result without its trajectories (episodes unknown)
        "episodes": (
            {
                "common": len(common),
                "not_rerun": len(in_a - in_b),
                "only_in_b": len(in_b - in_a),
                "not_rerun_tasks": _label(in_a - in_b),
                "only_in_b_tasks": _label(in_b - in_a),
            }
            if known
            else None
        ),
        "causes": causes,
        "findings": {
            "new": new,
            "fixed": fixed,
            "persistent": persistent,
            "not_rerun": not_rerun,
        },
        "reward_by_task": by_task,
    }


def _side(model: Model) -> dict[str, Any]:
    """A side's totals, its rejected records with them: what a side could not read is in
    neither comparison, and a diff that hid it would read as a clean rerun."""
    rejects = model.get("rejects") or []
    return {
        "trajectories": model["summary"]["trajectories"],
        "findings": len(model["findings"]),
        "rejects": len(rejects),
        "rejected_files": sorted({r["path"] for r in rejects}),
    }


def render_json(d: dict[str, Any]) -> str:
    """The comparison as `diff --json` writes it (indented; non-finite rewards as NaN)."""
    return jsonout.dumps(d, allow_nan=True) + "\n"


def _reward(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def render_text(d: dict[str, Any], a_name: str, b_name: str, limit: int = 20) -> str:
    f = d["findings"]
    lines = [
        f"forensics diff: A = {a_name} ({d['a']['trajectories']} trajectories, "
        f"{d['a']['findings']} findings) -> B = {b_name} ({d['b']['trajectories']} trajectories, "
        f"{d['b']['findings']} findings)",
    ]
    if d["a"]["rejects"] or d["b"]["rejects"]:
        said = []
        for k in ("a", "b"):
            n, files = d[k]["rejects"], d[k]["rejected_files"]
            where = f" ({', '.join(files[:3])}{' …' if len(files) > 3 else ''})" if n else ""
            said.append(f"{n} in {k.upper()}{where}")
        lines.append(
            f"rejected records: {', '.join(said)}: what they hold is compared on neither side "
            "(forensics scan lists each with its reason)"
        )
    e = d["episodes"]
    if e is None:
        lines.append(
            "episodes: unknown (a JSON result from an older forensics): episodes of A missing "
            "from B count as fixed"
        )
    else:
        line = f"episodes (task, trial): {e['common']} in both"
        if e["not_rerun"]:
            tasks = ", ".join(e["not_rerun_tasks"])
            line += f", {e['not_rerun']} of A not rerun in B (tasks {tasks})"
        if e["only_in_b"]:
            line += f", {e['only_in_b']} only in B (tasks {', '.join(e['only_in_b_tasks'])})"
        if d["only_common"]:
            line += "; --only-common: only the episodes in both are compared"
        lines.append(line)
    counted = f"{len(f['new'])} new, {len(f['fixed'])} fixed, {len(f['persistent'])} persistent"
    if f["not_rerun"]:
        counted += f", {len(f['not_rerun'])} not rerun"
    lines.append(f"findings: {counted} (matched by rule, task, trial, turn)")
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
            if r.get("not_rerun"):
                delta = "not rerun"
            lines.append(
                f"  {r['task_id']:<8} {_reward(r['a']):>5}  {_reward(r['b']):>5}  {delta:>6}"
            )
    return "\n".join(lines) + "\n"
