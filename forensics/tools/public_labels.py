"""Public failure datasets' annotations as LABELS.jsonl for `forensics eval` (docs/eval.md).

    python -m forensics.tools.public_labels DATASET SOURCE [-o LABELS.jsonl]

DATASET and SOURCE (a local copy of the dataset's repository; nothing is downloaded):

- `agentrx-tau`, `agentrx-magentic`: a checkout of github:microsoft/AgentRx. The ground truth
  (data/ground_truth/tau_ground_truth.json, magentic_one_ground_truth.json) names each
  trajectory's failures with a 1-based `step_number`, a `failure_category` and the
  `failed_agent`, and its `root_cause`. Written: one label per failure (`step` 0-based), and
  one trajectory line per trajectory with its root cause's attribution.
- `whowhen`: a checkout of github:ag2ai/Agents_Failure_Attribution: each
  Who&When/*/N.json is a failed run with its `mistake_agent` and 0-based `mistake_step`.
- `trail`: a checkout of github:patronus-ai/trail-benchmark or its copy in
  github:JuneHou/CausalError: benchmarking/processed_annotations_{gaia,swe_bench}/X.json name
  errors by `category` and span id (`location`) of the trace benchmarking/data/{GAIA,SWE
  Bench}/X.json. A trace without errors gets a control line (attribution none).
- `tau2`: one or more tau2-bench results files (a bare SimulationRun array, an object with
  `simulations`, or one SimulationRun of a directory run), SOURCE a file or a directory:
  each simulation's `termination_reason` is its label; a normal end with reward 1 also gets a
  control line. A file of a directory that can not be read is skipped and named.

The attributions come from the dataset's crosswalk (forensics/data/crosswalks/), the one file
where each choice has its reason. Paths in the labels are relative to SOURCE (to a tau2 file's
directory for `tau2`): run `forensics eval` with `--root SOURCE`, or write the labels into it.
Output is sorted and stable: the same copy gives the same bytes.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from forensics.tools import evaluate as ev

DATASETS = ("agentrx-tau", "agentrx-magentic", "whowhen", "trail", "tau2")
CROSSWALK = {
    "agentrx-tau": "agentrx",
    "agentrx-magentic": "agentrx",
    "whowhen": "whowhen",
    "trail": "trail",
    "tau2": "tau2-termination",
}


class SourceError(Exception):
    """A dataset copy that is not where or what the converter expects."""


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SourceError(f"{path}: {exc}") from None


def _attribution(crosswalk: ev.Crosswalk, category: str) -> str | None:
    cat = crosswalk.category(category)
    return cat.attribution if cat else None


def agentrx(root: Path, crosswalk: ev.Crosswalk, domain: str) -> Iterator[dict[str, Any]]:
    truth_name, trajectories = {
        "tau": ("tau_ground_truth.json", lambda t: "data/tau_retail/tau_dataset_failed.json"),
        "magentic": (
            "magentic_one_ground_truth.json",
            lambda t: f"data/magentic_dataset/{t}.json",
        ),
    }[domain]
    truth = _read_json(root / "data" / "ground_truth" / truth_name)
    simulators = set(crosswalk.dataset.get("simulator_agents", []))

    def attribution(failure: dict[str, Any]) -> str | None:
        if failure.get("failed_agent") in simulators:
            return "infra"
        return _attribution(crosswalk, failure["failure_category"])

    for traj in sorted(truth, key=lambda t: str(t["trajectory_id"])):
        tid = str(traj["trajectory_id"])
        file = trajectories(tid)
        # the tau file holds every failed trajectory; a Magentic-One file is one run
        name = tid if domain == "tau" else None
        by_id = {}
        for failure in traj.get("failures", []):
            by_id[failure["failure_id"]] = failure
            step = failure.get("step_number")
            yield {
                "id": f"agentrx-{domain}/{tid}/{failure['failure_id']}",
                "file": file,
                "trajectory": name,
                "location": {"step": int(step) - 1} if isinstance(step, int) and step > 0 else None,
                "category": failure["failure_category"],
                "attribution": attribution(failure),
                "note": f"{failure.get('failed_agent')}: {failure.get('step_reason', '')}"[:300],
            }
        root_cause = by_id.get((traj.get("root_cause") or {}).get("failure_id"))
        if root_cause is not None and (a := attribution(root_cause)) is not None:
            yield {
                "id": f"agentrx-{domain}/{tid}",
                "file": file,
                "trajectory": name,
                "category": None,
                "attribution": a,
                "note": f"root cause: failure {root_cause['failure_id']} "
                f"({root_cause['failure_category']})",
            }


def whowhen(root: Path, crosswalk: ev.Crosswalk) -> Iterator[dict[str, Any]]:
    base = root / "Who&When"
    if not base.is_dir():
        raise SourceError(
            f"{root}: no Who&When directory (a checkout of Agents_Failure_Attribution)"
        )
    files = sorted(
        base.glob("*/*.json"),
        key=lambda p: (p.parent.name, int(p.stem) if p.stem.isdigit() else 1 << 30, p.stem),
    )
    for path in files:
        rec = _read_json(path)
        step = rec.get("mistake_step")
        rel = path.relative_to(root).as_posix()
        yield {
            "id": f"whowhen/{path.parent.name}/{path.stem}",
            "file": rel,
            "trajectory": None,
            "location": {"step": int(step)} if str(step).strip().isdigit() else None,
            "category": "Mistake",
            "attribution": _attribution(crosswalk, "Mistake"),
            "note": f"{rec.get('mistake_agent')}: {rec.get('mistake_reason', '')}"[:300],
        }


def trail(root: Path, crosswalk: ev.Crosswalk) -> Iterator[dict[str, Any]]:
    bench = root / "benchmarking"
    splits = [("gaia", "GAIA"), ("swe_bench", "SWE Bench")]
    if not any((bench / f"processed_annotations_{s}").is_dir() for s, _ in splits):
        raise SourceError(f"{root}: no benchmarking/processed_annotations_* (a TRAIL copy)")
    for split, data in splits:
        for path in sorted((bench / f"processed_annotations_{split}").glob("*.json")):
            rec = _read_json(path)
            file = f"benchmarking/data/{data}/{path.name}"
            errors = rec.get("errors") or []
            for n, error in enumerate(errors):
                category = " ".join(str(error.get("category", "")).split())
                loc = error.get("location")
                yield {
                    "id": f"trail/{split}/{path.stem}/{n}",
                    "file": file,
                    "trajectory": None,
                    "location": {"span": loc} if isinstance(loc, str) and loc else None,
                    "category": category,
                    "attribution": _attribution(crosswalk, category),
                    "note": f"impact {error.get('impact')}",
                }
            if not errors:
                yield {
                    "id": f"trail/{split}/{path.stem}",
                    "file": file,
                    "trajectory": None,
                    "category": None,
                    "attribution": "none",
                    "note": "no error annotated",
                }


def tau2(
    root: Path, crosswalk: ev.Crosswalk, skipped: list[str] | None = None
) -> Iterator[dict[str, Any]]:
    files = sorted(root.rglob("*.json")) if root.is_dir() else [root]
    base = root if root.is_dir() else root.parent
    normal = {"user_stop", "agent_stop"}
    for path in files:
        try:
            doc = _read_json(path)
        except SourceError as exc:
            if not root.is_dir():
                raise
            # a directory of runs may hold a file cut short or of another kind: it has no
            # labels, and the caller is told (the scan rejects it the same way)
            if skipped is not None:
                skipped.append(str(exc))
            continue
        sims = doc.get("simulations") if isinstance(doc, dict) else doc
        if isinstance(doc, dict) and "termination_reason" in doc:
            sims = [doc]  # one simulation a file (tau2's directory runs: simulations/ID.json)
        if not isinstance(sims, list):
            continue
        rel = path.relative_to(base).as_posix()
        for sim in sims:
            if not isinstance(sim, dict) or "termination_reason" not in sim:
                continue
            reason = str(sim["termination_reason"])
            task, trial = str(sim.get("task_id")), sim.get("trial")
            reward = (sim.get("reward_info") or {}).get("reward")
            ident = f"tau2/{rel}/{task}/{trial}"
            common = {"file": rel, "trajectory": task, "trial": trial}
            yield {
                "id": ident,
                **common,
                "category": reason,
                "attribution": _attribution(crosswalk, reason),
                "note": f"reward {reward}",
            }
            if reason in normal and reward == 1:
                yield {
                    "id": f"{ident}/control",
                    **common,
                    "category": None,
                    "attribution": "none",
                    "note": f"{reason} with reward 1",
                }


def convert(
    dataset: str,
    source: Path,
    crosswalk: ev.Crosswalk | None = None,
    skipped: list[str] | None = None,
) -> list[dict[str, Any]]:
    """The labels of one dataset copy, in a stable order (the converter's own); `skipped`
    collects the files of a directory that could not be read (tau2)."""
    if crosswalk is None:
        crosswalk = ev.load_crosswalk(ev.crosswalk_path(CROSSWALK[dataset]))
    if not source.exists():
        raise SourceError(f"{source}: no such file or directory")
    gen = {
        "agentrx-tau": lambda: agentrx(source, crosswalk, "tau"),
        "agentrx-magentic": lambda: agentrx(source, crosswalk, "magentic"),
        "whowhen": lambda: whowhen(source, crosswalk),
        "trail": lambda: trail(source, crosswalk),
        "tau2": lambda: tau2(source, crosswalk, skipped),
    }[dataset]
    out = []
    for label in gen():
        # null fields are left out: a line says what it knows
        out.append({k: v for k, v in label.items() if v is not None or k == "category"})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m forensics.tools.public_labels",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("dataset", choices=DATASETS)
    parser.add_argument("source", type=Path, help="local copy of the dataset")
    parser.add_argument("-o", "--output", type=Path, help="write here (default: stdout)")
    parser.add_argument("--crosswalk", help="crosswalk file (default: the dataset's shipped one)")
    args = parser.parse_args(argv)
    try:
        walk = ev.load_crosswalk(ev.crosswalk_path(args.crosswalk or CROSSWALK[args.dataset]))
        skipped: list[str] = []
        labels = convert(args.dataset, args.source, walk, skipped)
    except (SourceError, ev.EvalError) as exc:
        print(exc, file=sys.stderr)
        return 2
    for reason in skipped:
        print(f"skipped (no labels): {reason}", file=sys.stderr)
    text = "".join(json.dumps(lab, ensure_ascii=False) + "\n" for lab in labels)
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
