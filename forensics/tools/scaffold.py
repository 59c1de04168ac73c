"""`forensics rules new ID`: a rule file and its fixtures, ready to edit (like ruff's scaffold).

The rule starts as `status = "preview"` with every section and one example parameter, and the
fixture file with one positive and one negative case. Both work as written (the example rule
reports long assistant turns), so the fixture tests pass before the first edit and keep
passing edit by edit. Nothing is ever overwritten.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ID = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")

RULE_TEMPLATE = '''id = "{id}"
title = "TODO: what goes wrong, in one line"
severity = "medium"       # info, low, medium, high or critical
confidence = "heuristic"  # hard: provable from the record alone; heuristic: can be wrong
# A cause of rules/causes.toml (its fixes are filled from the data), or a new id: diagnosis then
# builds the cause from this rule's title and docs.fix.
cause = "{id}"
summary = "TODO: what the rule reports, in one sentence (forensics rules, SARIF)."
# preview: runs and reports like any rule, but is not yet measured on the accuracy corpus
# (tests/data/accuracy). Delete this line once labelled corpus cases cover the rule.
status = "preview"
# The rule catalogue's one-liner (docs/rules.md), when it should differ from the summary.
# brief = "TODO"
# Each inner list is a set of columns that, all present, make the rule checkable.
requires = [["content"]]

# Thresholds the query names as {{name}}: integer, float or boolean. Overridable per project
# ([tool.forensics] params = {{ {id} = {{ max_chars = 80 }} }}) and per fixture case
# ("params": {{"max_chars": 80}}). An example: rename it or delete it with its use below.
[params.max_chars]
default = 40
doc = "Visible characters above which an assistant turn is reported."

[docs]
detects = """
TODO: exactly what the query matches."""
why = """
TODO: what it costs a benchmark run."""
example = """
TODO: the record that shows it."""
fix = """
TODO: what to change. Diagnosis shows this text as the fix while causes.toml has no cause for
the rule."""
false_positives = """
TODO: when it fires although nothing is wrong."""

[query]
# Returns trajectory_id, turn_index (NULL: the whole episode), message and evidence, and
# optionally data: a struct of values diagnosis reads (diagnosis/facts.py) instead of parsing
# the message. Tables and columns: `forensics schema`.
sql = """
select
  trajectory_id,
  turn_index,
  'assistant turn with ' || visible_chars || ' visible chars (more than {{max_chars}})' as message,
  left(visible_text, 200) as evidence,
  {{'visible_chars': visible_chars}} as data
from turns
where role = 'assistant' and visible_chars > {{max_chars}}
"""
'''

# One trajectory per line (tests/test_rule_fixtures.py documents the keys): the rule must fire
# on exactly the `ruleid` turns and on none of the `ok` turns.
FIXTURES_TEMPLATE = (
    '{{"case": "fires-TODO", "expect": {{"ruleid": [1], "ok": [0]}}, "turns": ['
    '{{"role": "user", "content": "TODO: the turn before"}}, '
    '{{"role": "assistant", '
    '"content": "TODO: a turn that shows the problem, long enough to fire."}}'
    "]}}\n"
    '{{"case": "near-miss-TODO", "expect": {{"ruleid": [], "ok": [0, 1]}}, "turns": ['
    '{{"role": "user", "content": "TODO: a near miss"}}, '
    '{{"role": "assistant", "content": "TODO: short."}}'
    "]}}\n"
)


class ScaffoldError(Exception):
    """An id or a target that can not be scaffolded (exists already, no such directory)."""


@dataclass(frozen=True)
class Scaffold:
    rule: Path
    fixtures: Path


def new_rule(rule_id: str, rules_dir: Path, fixtures_dir: Path) -> Scaffold:
    """Write rules_dir/ID.toml and fixtures_dir/ID.jsonl; refuse to overwrite either."""
    if not ID.fullmatch(rule_id):
        raise ScaffoldError(f"{rule_id!r}: a rule id is lower-case words joined by '-'")
    for directory, flag in ((rules_dir, "--dir"), (fixtures_dir, "--fixtures-dir")):
        if not directory.is_dir():
            raise ScaffoldError(f"{directory}: no such directory (pass {flag})")
    target = Scaffold(rules_dir / f"{rule_id}.toml", fixtures_dir / f"{rule_id}.jsonl")
    for path in (target.rule, target.fixtures):
        if path.exists():
            raise ScaffoldError(f"{path} exists already: not overwritten")
    written: list[Path] = []
    try:
        for path, template in (
            (target.rule, RULE_TEMPLATE),
            (target.fixtures, FIXTURES_TEMPLATE),
        ):
            # "x": a file that appeared since the check above is still not overwritten.
            with path.open("x", encoding="utf-8") as f:
                f.write(template.format(id=rule_id))
            written.append(path)
    except OSError as exc:
        for path in written:  # all or nothing: no rule without its fixtures
            path.unlink(missing_ok=True)
        raise ScaffoldError(f"{exc.filename}: {exc.strerror or exc}") from None
    return target
