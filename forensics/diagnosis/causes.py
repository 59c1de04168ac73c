"""Root causes as data: rules/causes.toml, merged with the causes.toml of each --rules directory.

A cause groups the findings of the rules that point at it, names the downstream rules it
explains, and holds fix templates whose {parameters} diagnosis/facts.py fills from the data.
Files are read strictly (an unknown key names file and key). A later directory's cause with
the same id replaces the earlier one; new ids add. A rule whose cause no file defines gets a
cause of its own built from the rule (title, docs.fix), so a new rule needs no causes.toml
entry to be diagnosed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forensics.check.engine import CAUSES_FILE, Rule, RuleError, check_keys, read_toml

CAUSE_KEYS = ("id", "title", "order", "explains", "validate", "followup", "rules_to_zero", "fix")
CAUSE_KEYS += ("class",)
# Whose failure a cause is: "infra" (plumbing: configuration, parsers, providers, the harness,
# the user simulator) or "model" (what the model did with a working setup). A cause no file
# classes is "unclassified", and the score split says so instead of guessing.
SCORE_CLASSES = ("infra", "model")
UNCLASSIFIED = "unclassified"
FIX_KEYS = ("action", "detail", "when")
# Causes no file orders come after every declared one.
FALLBACK_ORDER = 99


@dataclass
class CauseSpec:
    id: str
    title: str
    order: int
    explains: list[str]
    validate: str
    rules_to_zero: list[str]
    fixes: list[dict[str, str]]
    # A last validation step for this cause (what to check by hand after the rerun), if any.
    followup: str = ""
    # Built from a rule because no causes.toml defines it (see fallback()).
    fallback: bool = field(default=False, compare=False)
    score_class: str = UNCLASSIFIED


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _cause(raw: Any, where: str) -> CauseSpec:
    if not isinstance(raw, dict):
        raise RuleError(f"{where}: every [[cause]] must be a table")
    check_keys(raw, CAUSE_KEYS, where, "cause.")
    for key in ("id", "title"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise RuleError(f"{where}: cause.{key} must be a non-empty string")
    name = f"{where}: cause {raw['id']}"
    if type(raw.get("order")) is not int:
        raise RuleError(f"{name}: order must be an integer")
    for key in ("explains", "rules_to_zero"):
        if not _strings(raw.get(key, [])):
            raise RuleError(f"{name}: {key} must be a list of rule ids")
    for key in ("validate", "followup"):
        if not isinstance(raw.get(key, ""), str):
            raise RuleError(f"{name}: {key} must be a string")
    if raw.get("class", UNCLASSIFIED) not in (*SCORE_CLASSES, UNCLASSIFIED):
        raise RuleError(f"{name}: class must be one of {', '.join(SCORE_CLASSES)}")
    fixes = raw.get("fix", [])
    if not isinstance(fixes, list):
        raise RuleError(f"{name}: fix must be [[cause.fix]] tables")
    for fix in fixes:
        if not isinstance(fix, dict):
            raise RuleError(f"{name}: every [[cause.fix]] must be a table")
        check_keys(fix, FIX_KEYS, where, "cause.fix.")
        if not all(isinstance(fix.get(k), str) for k in ("action", "detail")):
            raise RuleError(f"{name}: a fix needs action and detail text")
        if not isinstance(fix.get("when", ""), str):
            raise RuleError(f"{name}: fix.when must name a fact")
    return CauseSpec(
        id=raw["id"],
        title=raw["title"],
        order=raw["order"],
        explains=list(raw.get("explains", [])),
        validate=raw.get("validate", ""),
        rules_to_zero=list(raw.get("rules_to_zero", [])),
        fixes=[dict(f) for f in fixes],
        followup=raw.get("followup", ""),
        score_class=raw.get("class", UNCLASSIFIED),
    )


def read_causes(path: Path) -> dict[str, CauseSpec]:
    """The causes of one file, strictly checked."""
    data = read_toml(path)
    check_keys(data, ("cause",), str(path))
    causes = data.get("cause", [])
    if not isinstance(causes, list):
        raise RuleError(f"{path}: cause must be [[cause]] tables")
    out: dict[str, CauseSpec] = {}
    for raw in causes:
        spec = _cause(raw, str(path))
        if spec.id in out:
            raise RuleError(f"{path}: cause {spec.id} is defined twice")
        out[spec.id] = spec
    return out


def load_causes(rules_dirs: Path | Sequence[Path | str]) -> dict[str, CauseSpec]:
    """The causes.toml of each directory, in order: the same id replaces, a new id adds.
    A directory without a causes.toml contributes nothing."""
    dirs = [rules_dirs] if isinstance(rules_dirs, Path | str) else rules_dirs
    merged: dict[str, CauseSpec] = {}
    for directory in dirs:
        path = Path(directory) / CAUSES_FILE
        if path.is_file():
            merged.update(read_causes(path))
    return merged


def _literal(text: str) -> str:
    """Text for a fix template that has no parameters: braces stay braces."""
    return text.replace("{", "{{").replace("}", "}}")


def fallback(cause_id: str, rules: Iterable[Rule]) -> CauseSpec:
    """A cause for rules whose cause no causes.toml defines: the first rule's title, its
    documented fix as the one fix, and those rules to bring to zero."""
    own = sorted((r for r in rules if r.cause == cause_id), key=lambda r: r.id)
    first = own[0] if own else None
    fixes = []
    if first:
        documented = " ".join(first.docs.get("fix", "").split())
        fixes.append(
            {
                "action": _literal(f"Follow the fix documented for {first.id}"),
                "detail": _literal(documented or f"See `forensics rules explain {first.id}`."),
            }
        )
    return CauseSpec(
        id=cause_id,
        title=first.title if first else cause_id,
        order=FALLBACK_ORDER,
        explains=[],
        validate=f"no {', '.join(r.id for r in own)} finding remains" if own else "",
        rules_to_zero=[r.id for r in own],
        fixes=fixes,
        fallback=True,
    )


def cause_specs(
    rules: Sequence[Rule], rules_dirs: Sequence[Path | str] = ()
) -> dict[str, CauseSpec]:
    """Every cause the rules point at, plus every declared one: the default pack's causes.toml,
    then those of the directories the rules were loaded from, then the given ones; a fallback
    for each cause no file defines."""
    dirs: list[str] = []
    for d in [*(d for r in rules for d in r.pack_dirs), *map(str, rules_dirs)]:
        if d not in dirs:
            dirs.append(d)
    specs = load_causes(dirs)
    for cause_id in sorted({r.cause for r in rules} - set(specs)):
        specs[cause_id] = fallback(cause_id, rules)
    return specs
