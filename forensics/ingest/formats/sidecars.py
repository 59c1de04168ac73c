"""Run-metadata sidecars: small JSON files a harness writes next to its results.

A wrapper that runs a benchmark often records how the run went beside the checkpoint, e.g.
`results/frustrated/variant_summary.json` = `{"variant": "frustrated", "status": "completed",
"exit_reason": "all_tasks_failed"}`. Such a file has no trajectories of its own; its fields
become labels of the trajectories of that run.

Detection: a JSON object that ends within the sniffed head (small), whose values are scalars or
shallow containers, with at least one of `status`, `exit_reason`, `variant`, and none of the
keys of a conversation or an API record.

Matching rule: a sidecar labels every trajectory read from a file in the sidecar's directory or
below it. Keys become labels named `<sidecar file stem>.<key>` (nested keys joined with dots,
lists as JSON), e.g. `variant_summary.exit_reason`; where several sidecars apply, the one
nearest to the trajectory's file wins. A sidecar's `variant` also fills the trajectory's variant
when the source did not name one. A sidecar that matches no trajectory is reported as a note.
"""

from __future__ import annotations

import json
import os
import weakref
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa

from forensics import schema
from forensics.ingest.parse import files, jsonwalk
from forensics.ingest.records import Collector
from forensics.ingest.registry import FormatSpec

FORMAT = "run_metadata"

_STATUS_KEYS = frozenset({"status", "exit_reason", "variant"})
# Keys of records that other formats own: a sidecar never carries a conversation or an API body.
_FOREIGN_KEYS = frozenset(
    {
        "messages",
        "traj",
        "simulations",
        "candidates",
        "choices",
        "request",
        "response",
        "content",
        "role",
        "model_parameters",
        "log",
    }
)
MAX_DEPTH = 2


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def _parse(head: str) -> dict[str, Any] | None:
    text = head.strip().lstrip("\ufeff")
    if not text.startswith("{"):
        return None
    try:
        obj = jsonwalk.loads(text)
    except json.JSONDecodeError:  # larger than the head, or not JSON: not a sidecar
        return None
    return obj if isinstance(obj, dict) else None


def sniff(head: str) -> str | None:
    obj = _parse(head)
    if obj is None or not (obj.keys() & _STATUS_KEYS) or obj.keys() & _FOREIGN_KEYS:
        return None
    if any(_depth(v) >= MAX_DEPTH for v in obj.values()):
        return None
    found = ", ".join(sorted(obj.keys() & _STATUS_KEYS))
    return f"small JSON object with run status fields ({found}): run-metadata sidecar"


def labels_of(obj: dict[str, Any], prefix: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in obj.items():
        name = f"{prefix}.{key}"
        if isinstance(value, dict):
            out.update(labels_of(value, name))
        elif isinstance(value, str):
            out[name] = value
        elif value is not None:
            out[name] = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return out


def ingest(path: Path, collector: Collector) -> int:
    obj = _parse(files.read_text(path))
    if obj is None:
        collector.reject(str(path), 1, "run-metadata sidecar is not a JSON object", "", FORMAT)
        return 0
    labels = labels_of(obj, path.stem)
    if isinstance(obj.get("variant"), str):
        labels["variant"] = obj["variant"]
    directory = os.path.normpath(path.parent.resolve())
    collector.run_metadata.setdefault(directory, {}).update(labels)
    collector.note(str(path), "run metadata")  # replaced by describe() once all files are read
    collector.metadata_files.add(str(path))
    return 0


def apply(trajectories: pa.Table, run_metadata: dict[str, dict[str, str]]) -> pa.Table:
    """The trajectories with the labels (and variant) of the sidecars above their files.

    Cost: one dictionary lookup per ancestor directory of each distinct source file.
    """
    if not run_metadata or trajectories.num_rows == 0:
        return trajectories
    per_file: dict[str, dict[str, str]] = {}
    for source in set(trajectories.column("source_path").to_pylist()):
        merged: dict[str, str] = {}
        directory = Path(os.path.normpath(Path(source).resolve().parent))
        for folder in (directory, *directory.parents):
            for key, value in run_metadata.get(str(folder), {}).items():
                merged.setdefault(key, value)  # nearer directories came first
        per_file[source] = merged
    labels = trajectories.column("labels").to_pylist()
    variants = trajectories.column("variant").to_pylist()
    for i, source in enumerate(trajectories.column("source_path").to_pylist()):
        extra = per_file[source]
        if not extra:
            continue
        own = {item["key"] for item in labels[i] or []}
        added = [
            {"key": k, "value": v} for k, v in extra.items() if k != "variant" and k not in own
        ]
        labels[i] = sorted([*(labels[i] or []), *added], key=lambda item: item["key"])
        if variants[i] is None and "variant" in extra:
            variants[i] = extra["variant"]
    index = trajectories.schema.get_field_index
    trajectories = trajectories.set_column(
        index("labels"),
        schema.TRAJECTORIES.field("labels"),
        pa.array(labels, schema.TRAJECTORIES.field("labels").type),
    )
    return trajectories.set_column(
        index("variant"), schema.TRAJECTORIES.field("variant"), pa.array(variants, pa.string())
    )


# (trajectories, trajectories per directory) of the last describe: a scan of many runs has a
# sidecar per run, and resolving every source path once per sidecar is quadratic. A weak
# reference: the cache does not keep a scan's table alive.
_below: tuple[weakref.ref[pa.Table] | None, Counter[str]] = (None, Counter())


def _per_directory(trajectories: pa.Table) -> Counter[str]:
    """Trajectories read from each directory or below it (its resolved path), root aside."""
    global _below
    if _below[0] is not None and _below[0]() is trajectories:
        return _below[1]
    below: Counter[str] = Counter()
    for source, n in Counter(trajectories.column("source_path").to_pylist()).items():
        folder = os.path.dirname(os.path.normpath(Path(source).resolve()))
        while os.path.dirname(folder) != folder:  # every ancestor but the root
            below[folder] += n
            folder = os.path.dirname(folder)
    _below = (weakref.ref(trajectories), below)
    return below


def describe(path: Path, trajectories: pa.Table) -> str:
    """The sidecar's note: which trajectories it labelled (none is worth saying too)."""
    count = _per_directory(trajectories)[os.path.normpath(path.parent.resolve())]
    if count == 0:
        return (
            f"run metadata, but no trajectory was read from {path.parent}/ or below: "
            "its labels apply to nothing (scan the results next to it)"
        )
    return f"run metadata: labels {count} trajectories read from {path.parent}/ and below"


SPECS = (
    FormatSpec(
        name=FORMAT,
        description="run-metadata sidecar (labels its run)",
        detection="a small JSON object with run status fields (status, exit_reason, …)",
        sniff=sniff,
        ingest=ingest,
        # After every format of records: a lone API body or a record's first object could look
        # like a small status object.
        priority=900,
        columns=frozenset(),  # labels the run's episodes; fills no turn
        benchmark=False,
        artifact="run",
        rerun=None,
        seeds={"run_metadata": "tests/data/sidecars/variant_summary.json"},
    ),
)
