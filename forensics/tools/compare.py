"""Many runs side by side: a runs × causes matrix with rates, intervals, reward and changes.

Each run is what a side of `forensics diff` is (a `--json` result or scan input: file, folder,
glob), loaded by diff.load_side, so a run reads the same in both commands. A cause's rate in a
run is the share of that run's episodes it touches (its `trajectories` over the run's), with a
95% Wilson score interval: the interval stays inside [0, 1] and keeps its coverage at the
handful of episodes agent benchmarks often have, where the normal approximation does not.

The first run is the reference. Each other run's causes are compared with it: appeared,
disappeared, rose or fell (the two intervals do not overlap: a conservative test), unchanged
(they overlap), or not rerun (every episode the cause touched in the reference is missing from
the run: absence there proves nothing). A cause's fixes changed when both runs have it and
their fix actions differ (a fix's `when` fact changed).

by_run splits one scan into its runs (a results folder of several models or settings): each
run's episodes, its share of every cause's episodes, its findings. The fixes are the scan's,
proposed once for all its runs, so they never differ between the runs of one scan.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from forensics.check import fingerprint
from forensics.report.render import jsonout, markdown
from forensics.tools import diff

Model = diff.Model
CompareError = diff.DiffError
load_run = diff.load_side

# The two-sided 95% normal quantile (scipy.stats.norm.ppf(0.975)).
Z95 = 1.959963984540054
# Changes that make a run worse than the reference: the exit code's 1.
WORSE = ("appeared", "rose")


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of k successes in n trials; None for n = 0.

    >>> wilson(0, 1)
    (0.0, 0.7935)
    >>> wilson(3, 3)
    (0.4385, 1.0)
    """
    if n <= 0:
        return None
    p = k / n
    z2 = z * z
    centre = p + z2 / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    low, high = (centre - spread) / (1 + z2 / n), (centre + spread) / (1 + z2 / n)
    # Rounded outward: a shown bound never claims more than the interval does.
    return (
        max(0.0, math.floor(low * 10_000) / 10_000),
        min(1.0, math.ceil(high * 10_000) / 10_000),
    )


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _run(index: int, spec: str, model: Model) -> dict[str, Any]:
    rewards = [
        t["reward"]
        for t in model.get("trajectories", [])
        if isinstance(t.get("reward"), int | float) and math.isfinite(t["reward"])
    ]
    runs = model["summary"].get("runs", [])
    side = diff._side(model)
    return {
        "label": f"R{index}",
        "input": spec,
        "run_ids": [r["run_id"] for r in runs],
        "trajectories": model["summary"]["trajectories"],
        "scored": len(rewards),
        "mean_reward": _mean(rewards),
        "findings": side["findings"],
        "rejects": side["rejects"],
        "rejected_files": side["rejected_files"],
        "agent_models": sorted({r["agent_model"] for r in runs if r.get("agent_model")}),
        "variants": sorted({r["variant"] for r in runs if r.get("variant")}),
    }


def by_run(model: Model) -> list[Model]:
    """One scan's report model split into one per run (summary.runs, in the scan's order);
    the model itself when it holds one run, or when its episodes are unknown."""
    runs = model["summary"].get("runs") or []
    if "trajectories" not in model or len(runs) < 2:
        return [model]
    out: list[Model] = []
    for run in runs:
        episodes = [t for t in model["trajectories"] if t["run_id"] == run["run_id"]]
        ids = {t["trajectory_id"] for t in episodes}
        causes = []
        for cause in model["causes"]:
            mine = [t for t in cause["trajectory_ids"] if t in ids]
            if mine:
                causes.append({**cause, "trajectories": len(mine), "trajectory_ids": mine})
        sources = set(run.get("sources") or [])
        out.append(
            {
                "summary": {**model["summary"], "trajectories": len(episodes), "runs": [run]},
                "findings": [f for f in model["findings"] if f["trajectory_id"] in ids],
                "trajectories": episodes,
                "causes": causes,
                # the rejects of the files the run was read from (a file of two runs: both)
                "rejects": [r for r in model.get("rejects") or [] if r["path"] in sources],
            }
        )
    return out


def _cell(cause: dict[str, Any] | None, model: Model, n: int) -> dict[str, Any]:
    """One cause in one run: affected episodes, rate and interval, reward, fixes."""
    ids = set(cause["trajectory_ids"]) if cause else set()
    affected: list[float] = []
    unaffected: list[float] = []
    for t in model.get("trajectories", []):
        reward = t.get("reward")
        if isinstance(reward, int | float) and math.isfinite(reward):
            (affected if t["trajectory_id"] in ids else unaffected).append(float(reward))
    k = cause["trajectories"] if cause else 0
    interval = wilson(k, n)
    return {
        "affected": k,
        "episodes": n,
        "rate": round(k / n, 4) if n else None,
        "ci95": list(interval) if interval else None,
        "rank": cause["rank"] if cause else None,
        # What the affected scored episodes fell short of full reward: sum of 1 - reward, the
        # figure scan ranks causes by. None when no affected episode was scored.
        "reward_lost": round(sum(1.0 - r for r in affected), 4) if affected else None,
        "scored_affected": len(affected),
        "mean_reward_affected": _mean(affected),
        "mean_reward_unaffected": _mean(unaffected),
        "fixes": [f["action"] for f in cause["fixes"]] if cause else [],
    }


def _disjoint(a: list[float] | None, b: list[float] | None) -> bool:
    return a is not None and b is not None and (a[1] < b[0] or b[1] < a[0])


def _episodes(model: Model) -> dict[str, fingerprint.Episode] | None:
    if "trajectories" not in model:
        return None
    return {t["trajectory_id"]: fingerprint.episode(t) for t in model["trajectories"]}


def compare(runs: Sequence[tuple[str, Model]]) -> dict[str, Any]:
    """The matrix of runs (in the order given; the first the reference) × causes."""
    if len(runs) < 2:
        raise CompareError(
            f"compare needs two runs or more, not {len(runs)} (forensics scan shows one; "
            "--by-run splits each input into the runs it holds)"
        )
    models = [m for _, m in runs]
    heads = [_run(i + 1, spec, m) for i, (spec, m) in enumerate(runs)]
    episodes = [_episodes(m) for m in models]
    by_id = [{c["id"]: c for c in m["causes"]} for m in models]
    ids = {cid for causes in by_id for cid in causes}

    def order(cid: str) -> tuple[int, int, str]:
        # The cause ranked highest anywhere first; ties by the first run that has it.
        ranks = [(c[cid]["rank"], i) for i, c in enumerate(by_id) if cid in c]
        best = min(ranks)
        return (best[0], best[1], cid)

    causes, changes = [], []
    for cid in sorted(ids, key=order):
        cells = [
            _cell(by_id[i].get(cid), m, heads[i]["trajectories"]) for i, m in enumerate(models)
        ]
        ref, ref_cause = cells[0], by_id[0].get(cid)
        ref.update(change=None, beyond_ci=False, fixes_changed=False)
        for i in range(1, len(models)):
            cell = cells[i]
            beyond = _disjoint(ref["ci95"], cell["ci95"])
            if ref["affected"] == 0 and cell["affected"] == 0:
                cell.update(change="absent", beyond_ci=False, fixes_changed=False)
                continue
            if ref["affected"] == 0:
                state = "appeared"
            elif cell["affected"] == 0:
                state = "disappeared"
                seen, mine = episodes[0], episodes[i]
                if ref_cause and seen is not None and mine is not None:
                    kept = set(mine.values())
                    if not any(seen.get(t) in kept for t in ref_cause["trajectory_ids"]):
                        state = "not rerun"
            elif beyond:
                state = "rose" if cell["rate"] > ref["rate"] else "fell"
            else:
                state = "unchanged"
            fixes_changed = bool(ref["affected"] and cell["affected"]) and (
                ref["fixes"] != cell["fixes"]
            )
            cell["change"] = state
            cell["beyond_ci"] = beyond
            cell["fixes_changed"] = fixes_changed
            if state != "unchanged" or fixes_changed:
                changes.append(
                    {
                        "cause": cid,
                        "run": heads[i]["label"],
                        "change": state,
                        "beyond_ci": beyond,
                        "rate": [ref["rate"], cell["rate"]],
                        "affected": [ref["affected"], cell["affected"]],
                        "fixes_added": [f for f in cell["fixes"] if f not in ref["fixes"]],
                        "fixes_removed": [f for f in ref["fixes"] if f not in cell["fixes"]],
                    }
                )
        title = next(c[cid]["title"] for c in by_id if cid in c)
        causes.append({"id": cid, "title": title, "cells": cells})
    changes.sort(key=lambda c: (int(c["run"][1:]), [x["id"] for x in causes].index(c["cause"])))
    known = [set(e.values()) for e in episodes if e is not None]
    return {
        "runs": heads,
        "reference": heads[0]["label"],
        "interval": {"method": "wilson", "level": 0.95},
        "has_rewards": all("trajectories" in m for m in models),
        # None when a run is a JSON result without its trajectories
        "episodes_in_every_run": (
            len(set.intersection(*known)) if len(known) == len(models) else None
        ),
        "causes": causes,
        "changes": changes,
        "worse": any(c["change"] in WORSE for c in changes),
    }


def render_json(d: dict[str, Any]) -> str:
    """The comparison as `compare --json` writes it (indented, keys in a fixed order)."""
    return jsonout.dumps(d) + "\n"


# --- text ------------------------------------------------------------------------------------


def _pct(x: float) -> str:
    return f"{x * 100:.0f}"


def _rate(cell: dict[str, Any]) -> str:
    if cell["ci95"] is None:
        return "—"
    # The bounds in whole percent, outward as in the JSON: never narrower than the interval.
    low = math.floor(round(cell["ci95"][0] * 100, 6))
    high = math.ceil(round(cell["ci95"][1] * 100, 6))
    return f"{cell['affected']}/{cell['episodes']} {_pct(cell['rate'])}% [{low}–{high}]"


def _reward(cell: dict[str, Any]) -> str:
    if cell["reward_lost"] is None:
        return "—"
    return f"{cell['reward_lost']:.2f}"


def _means(cell: dict[str, Any]) -> str:
    def m(x: float | None) -> str:
        return "—" if x is None else f"{x:.2f}"

    if cell["mean_reward_affected"] is None and cell["mean_reward_unaffected"] is None:
        return "—"
    return f"{m(cell['mean_reward_affected'])} vs {m(cell['mean_reward_unaffected'])}"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return [
        "  " + "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
        for r in [head, *rows]
    ]


def _run_facts(r: dict[str, Any], shared: bool) -> str:
    """A run's totals; shared: its input is another column's too (--by-run), so its run id
    tells them apart."""
    n = r["trajectories"]
    parts = [f"{n} episode{'' if n == 1 else 's'}"]
    if r["mean_reward"] is not None:
        parts.append(f"mean reward {r['mean_reward']:.2f} ({r['scored']} scored)")
    parts.append(f"{r['findings']} finding{'' if r['findings'] == 1 else 's'}")
    if shared and r["run_ids"]:
        parts.insert(0, f"run {', '.join(r['run_ids'])}")
    parts += r["variants"] + r["agent_models"]
    if r["rejects"]:
        parts.append(f"{r['rejects']} rejected record{'' if r['rejects'] == 1 else 's'}")
    return ", ".join(parts)


def _shared(runs: list[dict[str, Any]], run: dict[str, Any]) -> bool:
    return sum(r["input"] == run["input"] for r in runs) > 1


def _change_words(c: dict[str, Any]) -> str:
    a, b = c["affected"]
    ra, rb = (_pct(x) + "%" if x is not None else "—" for x in c["rate"])
    said = f"{c['change']} ({a} -> {b} episodes, {ra} -> {rb}"
    if c["change"] in ("appeared", "disappeared"):
        said += ", beyond the intervals" if c["beyond_ci"] else ", within the intervals' overlap"
    return said + ")"


def render_text(d: dict[str, Any]) -> str:
    """The terminal view. Its lines hold paths and titles: the command escapes each line."""
    runs, causes = d["runs"], d["causes"]
    labels = [r["label"] for r in runs]
    lines = [
        f"forensics: {len(runs)} runs compared, {d['reference']} the reference; rates are "
        "affected episodes with 95% Wilson intervals",
        *(f"  {r['label']}  {r['input']}: {_run_facts(r, _shared(runs, r))}" for r in runs),
    ]
    if d["episodes_in_every_run"] is not None:
        lines.append(f"episodes (task, trial) in every run: {d['episodes_in_every_run']}")
    if not causes:
        lines += ["", "causes: none in any run"]
        return "\n".join(lines) + "\n"
    lines += ["", "causes (affected episodes, rate [95% CI]):"]
    lines += _table(["cause", *labels], [[c["id"], *map(_rate, c["cells"])] for c in causes])
    if d["has_rewards"]:
        lines += ["", "reward lost (sum of 1 - reward over the affected scored episodes):"]
        lines += _table(["cause", *labels], [[c["id"], *map(_reward, c["cells"])] for c in causes])
        lines += ["", "mean reward, affected vs unaffected episodes:"]
        lines += _table(["cause", *labels], [[c["id"], *map(_means, c["cells"])] for c in causes])
    else:
        lines += ["", "reward: not available (a JSON result without its trajectories)"]
    lines += ["", f"changes from {d['reference']}:"]
    if not d["changes"]:
        lines.append("  none beyond the intervals' overlap")
    for c in d["changes"]:
        lines.append(f"  {c['run']}  {c['cause']}: {_change_words(c)}")
        lines += [f"        fix proposed: {f}" for f in c["fixes_added"]]
        lines += [f"        fix no longer proposed: {f}" for f in c["fixes_removed"]]
    lines += ["", "causes:"]
    for c in causes:
        where = [labels[i] for i, cell in enumerate(c["cells"]) if cell["affected"]]
        lines.append(f"  {c['id']}: {c['title']} (in {', '.join(where)})")
    return "\n".join(lines) + "\n"


# --- markdown --------------------------------------------------------------------------------


def render_md(d: dict[str, Any]) -> str:
    """The comparison as Markdown: untrusted text (paths, titles, fixes) escaped as the scan's
    Markdown escapes it; the tables hold only labels, numbers and cause ids."""
    runs, causes = d["runs"], d["causes"]
    labels = [r["label"] for r in runs]
    out = [
        f"# forensics compare: {len(runs)} runs",
        "",
        f"{d['reference']} is the reference. A rate is the share of a run's episodes a cause "
        "touches, with its 95% Wilson interval.",
        "",
        *(
            f"- **{r['label']}** {markdown.inline(r['input'])}: "
            f"{markdown.inline(_run_facts(r, _shared(runs, r)))}"
            for r in runs
        ),
    ]
    if not causes:
        return "\n".join([*out, "", "No cause in any run."]) + "\n"

    def table(cells: list[list[str]]) -> list[str]:
        return [
            "| cause | " + " | ".join(labels) + " |",
            "|---|" + "---|" * len(labels),
            *(f"| {markdown.inline(c[0])} | " + " | ".join(c[1:]) + " |" for c in cells),
        ]

    out += ["", "## Affected episodes (rate [95% CI])", ""]
    out += table([[c["id"], *map(_rate, c["cells"])] for c in causes])
    if d["has_rewards"]:
        out += ["", "## Reward lost (sum of 1 − reward over the affected scored episodes)", ""]
        out += table([[c["id"], *map(_reward, c["cells"])] for c in causes])
        out += ["", "## Mean reward, affected vs unaffected episodes", ""]
        out += table([[c["id"], *map(_means, c["cells"])] for c in causes])
    out += ["", f"## Changes from {d['reference']}", ""]
    if not d["changes"]:
        out.append("None beyond the intervals' overlap.")
    for c in d["changes"]:
        out.append(f"- **{c['run']}** {markdown.inline(c['cause'])}: {_change_words(c)}")
        out += [f"  - fix proposed: {markdown.inline(f)}" for f in c["fixes_added"]]
        out += [f"  - fix no longer proposed: {markdown.inline(f)}" for f in c["fixes_removed"]]
    out += ["", "## Causes", ""]
    for c in causes:
        where = [labels[i] for i, cell in enumerate(c["cells"]) if cell["affected"]]
        out.append(
            f"- {markdown.inline(c['id'])}: {markdown.inline(c['title'])} (in {', '.join(where)})"
        )
    return "\n".join(out) + "\n"
