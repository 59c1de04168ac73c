"""`forensics rules new ID`: a rule with everything it needs, ready to edit (like ruff's scaffold).

It writes the rule (`status = "preview"`, every section, one example parameter), its fixtures
(one positive and one negative case), the snapshot of what the positive case finds, and the
rule's cause (`causes/ID.toml`: a fix that quotes a number from the findings, declared as a
query) unless a cause of that id exists already, which the rule then points at, and, for a rule
of the built-in pack, the catalogue (docs/rules.md). Everything works as written: the example
reports long assistant turns that carry its own marker, so it fires on its fixtures and on no
real log, and the whole suite passes before the first edit and keeps passing edit by edit. No
file is ever overwritten. Without --dir the rule goes into the checkout the working directory is
in, else into the one forensics runs from, else (an installed forensics, run in a project of
one's own) into rules/ of the working directory, with its fixtures in rules/fixtures/; the
folders are made. `forensics rules test DIR` then runs the fixtures of a directory of one's own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from forensics import atomic, content
from forensics.check import engine
from forensics.diagnosis import causes
from forensics.tools import rule_catalogue as catalogue

ID = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
# The example's threshold (its default in RULE_TEMPLATE), and the text its positive case says:
# a marker no real log has.
MAX_CHARS = 40
POSITIVE = "TODO: a turn that shows the problem (an example of {id}), long enough to fire."
NEGATIVE = "TODO: short."

RULE_TEMPLATE = '''id = "{id}"
title = "TODO: what goes wrong, in one line"
severity = "medium"       # info, low, medium, high or critical
confidence = "heuristic"  # hard: provable from the record alone; heuristic: can be wrong
# The cause diagnosis groups the findings under (causes/{id}.toml, or rules/causes.toml).
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
TODO: what to change, in the rule's words (`forensics rules explain {id}`); diagnosis gives the
fixes of its cause."""
false_positives = """
TODO: when it fires although nothing is wrong."""

[query]
# Returns trajectory_id, turn_index (NULL: the whole episode), message and evidence, and
# optionally data: a struct of values the cause's fix parameters read (`data` in their
# queries) instead of parsing the message. Tables and columns: `forensics schema`.
# The example reports long assistant turns that say "example of {id}", so it fires on its
# fixtures and on no real log; replace it (and the marker in the fixtures) with the real query.
sql = """
select
  trajectory_id,
  turn_index,
  'assistant turn with ' || visible_chars || ' visible chars (more than {{max_chars}})' as message,
  left(visible_text, 200) as evidence,
  {{'visible_chars': visible_chars}} as data
from turns
where role = 'assistant' and visible_chars > {{max_chars}}
  and contains(visible_text, 'example of {id}')
"""
'''

CAUSE_TEMPLATE = """\
# The cause of {id}'s findings: what diagnosis tells the user to change, with the
# numbers it quotes from the data. The keys are those of rules/causes.toml (its header says
# what each means). Delete this file and diagnosis builds a cause from the rule's title and
# docs.fix; or point the rule's `cause` at an existing cause instead.

[[cause]]
id = "{id}"
title = "TODO: the root cause, in one line"
# infra: plumbing (configuration, parsers, providers, the harness, the user simulator); model:
# what the model did with a working setup. It says whose share of the lost reward this is.
class = "model"
# Among causes of equal impact the lower order ranks first; an upstream cause claims the
# findings of the rules it explains in the same trajectories as its symptoms.
order = 5
explains = []
validate = "no {id} finding remains"
rules_to_zero = ["{id}"]

[[cause.fix]]
action = "TODO: the first thing to change"
detail = \"\"\"
{{reported_turns}} turns in {{trajectories}} trajectories, up to {{max_visible_chars}} visible \\
characters. TODO: why this fix, and how.\"\"\"

# What the fixes name: a DuckDB query each over the cause's findings (`data` is the rule's data
# struct as JSON), the turns they point at and their trajectories. {{trajectories}},
# {{actors_text}} and {{model}} come with every cause (rules/causes.toml, [params]).
[cause.params]
reported_turns = "select count(*) from findings"
max_visible_chars = "select max((data->'visible_chars')::bigint) from findings"
"""


class ScaffoldError(Exception):
    """An id or a target that can not be scaffolded (exists already, no such directory)."""


@dataclass(frozen=True)
class Scaffold:
    rule: Path
    fixtures: Path
    snapshot: Path
    # The cause file written, or None when the rule points at an existing cause.
    cause: Path | None
    # The document whose rule catalogue was regenerated, if the pack has one.
    catalogue: Path | None
    # Whether the rule went into the built-in pack (whose fixtures pytest runs) or a directory
    # of one's own (`forensics rules test DIR` runs those).
    builtin: bool = False


def checkout_dirs(start: Path | None = None) -> tuple[Path, Path] | None:
    """rules/ and tests/rule_fixtures/ of the checkout the working directory (`start`) is in,
    else of the source checkout forensics runs from; None when there is neither (an installed
    wheel, whose rule pack is not there to be edited, run outside any checkout)."""
    here = (start or Path.cwd()).resolve()
    for root in (here, *here.parents, content.CHECKOUT):
        rules, fixtures = root / "rules", root / "tests" / "rule_fixtures"
        if rules.is_dir() and fixtures.is_dir():
            return rules, fixtures
    return None


# Where `rules new` puts a rule outside any checkout: a rule directory of the project's own.
OWN_RULES = Path("rules")


def targets(rules_dir: Path | None, fixtures_dir: Path | None) -> tuple[Path, Path]:
    """Where the files go: the given directories; without --dir the rule pack and fixtures of
    the checkout (checkout_dirs), else rules/ of the working directory; with a rule directory
    of one's own, DIR/fixtures unless --fixtures-dir names another. Folders are made as the
    files are written."""
    if rules_dir is None:
        found = checkout_dirs()
        rules_dir = found[0] if found is not None else OWN_RULES
    if rules_dir.exists() and not rules_dir.is_dir():
        raise ScaffoldError(f"{rules_dir}: not a directory")
    return rules_dir, fixtures_dir or fixtures_for(rules_dir)


def fixtures_for(rules_dir: Path) -> Path:
    """The fixtures of a rule directory: a checkout's tests/rule_fixtures/ for its rules/, else
    DIR/fixtures."""
    found = checkout_dirs(rules_dir) if rules_dir.is_dir() else None
    in_pack = found is not None and found[0] == rules_dir.resolve()
    return found[1] if found and in_pack else rules_dir / "fixtures"


def fixtures(rule_id: str) -> str:
    """One trajectory per line (tests/check/test_rule_fixtures.py documents the keys): the rule must
    fire on exactly the `ruleid` turns and on none of the `ok` turns."""
    cases = [
        ("fires-TODO", [1], [0], "TODO: the turn before", POSITIVE),
        ("near-miss-TODO", [], [0, 1], "TODO: a near miss", NEGATIVE),
    ]
    lines = []
    for name, ruleid, ok, before, text in cases:
        turns = [
            {"role": "user", "content": before},
            {"role": "assistant", "content": text.format(id=rule_id)},
        ]
        case = {"case": name, "expect": {"ruleid": ruleid, "ok": ok}, "turns": turns}
        lines.append(json.dumps(case, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def snapshot(rule_id: str) -> str:
    """What the example finds on its fixtures, as tests/check/test_rule_fixtures.py pins it."""
    text = POSITIVE.format(id=rule_id)
    found = {
        "turn_index": 1,
        "message": f"assistant turn with {len(text)} visible chars (more than {MAX_CHARS})",
        "evidence": text[:200],
        "details": {"visible_chars": len(text)},
    }
    return json.dumps({"fires-TODO": [found]}, indent=2, ensure_ascii=False) + "\n"


def _existing_cause(rule_id: str, rules_dir: Path) -> bool:
    """A cause of this id is declared already (by the pack or this directory)."""
    try:
        return rule_id in causes.load_causes([engine.default_rules_dir(), rules_dir])
    except engine.RuleError as exc:
        raise ScaffoldError(str(exc)) from None


def new_rule(
    rule_id: str, rules_dir: Path | None = None, fixtures_dir: Path | None = None
) -> Scaffold:
    """Write the rule, its fixtures, their snapshot and its cause; regenerate the catalogue.
    Refuses to overwrite any of them, and leaves nothing behind when a write fails."""
    if not ID.fullmatch(rule_id):
        raise ScaffoldError(f"{rule_id!r}: a rule id is lower-case words joined by '-'")
    rules_dir, fixtures_dir = targets(rules_dir, fixtures_dir)
    own_cause = not (rules_dir.is_dir() and _existing_cause(rule_id, rules_dir))
    cause_file = rules_dir / causes.CAUSES_DIR / f"{rule_id}.toml"
    files: dict[Path, str] = {
        rules_dir / f"{rule_id}.toml": RULE_TEMPLATE.format(id=rule_id),
        fixtures_dir / f"{rule_id}.jsonl": fixtures(rule_id),
        fixtures_dir / f"{rule_id}.snap.json": snapshot(rule_id),
    }
    if own_cause:
        files[cause_file] = CAUSE_TEMPLATE.format(id=rule_id)
    for path in files:
        if path.exists():
            raise ScaffoldError(f"{path} exists already: not overwritten")
    undo: list[Callable[[], object]] = []
    try:
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            # "x": a file that appeared since the check above is still not overwritten.
            with path.open("x", encoding="utf-8") as f:
                undo.append(partial(path.unlink, missing_ok=True))
                f.write(text)
        document = _catalogue(rules_dir, undo)
    except OSError as exc:
        for step in reversed(undo):  # all or nothing: no rule without its fixtures
            step()
        raise ScaffoldError(f"{exc.filename or rules_dir}: {exc.strerror or exc}") from None
    except (engine.RuleError, catalogue.CatalogueError) as exc:
        for step in reversed(undo):
            step()
        raise ScaffoldError(str(exc)) from None
    paths = list(files)
    builtin = rules_dir.resolve() == engine.default_rules_dir().resolve()
    cause = cause_file if own_cause else None
    return Scaffold(paths[0], paths[1], paths[2], cause, document, builtin)


def _catalogue(rules_dir: Path, undo: list[Callable[[], object]]) -> Path | None:
    """Regenerate the rule table of the catalogue (docs/rules.md) when the rule went into the
    pack it documents; a --rules directory of one's own has no catalogue."""
    pack = engine.default_rules_dir()
    if rules_dir.resolve() != pack.resolve() or (document := catalogue.document(pack)) is None:
        return None
    text = document.read_text(encoding="utf-8")
    table = catalogue.markdown_table(engine.load_rules())
    if catalogue.current(text) != table:
        atomic.write_text(document, catalogue.replaced(text, table))
        undo.append(partial(atomic.write_text, document, text))
    return document
