"""Large tau-bench inputs for the memory and speed figures, grown from the samples with varied text.

    python benchmarks/make_tau.py results OUT.json --mb 200 [--seed 0]
    python benchmarks/make_tau.py console OUT.log --mb 200 [--seed 0]

`results`: a tau-bench results array made of copies of the records of
sample_logs/tau_bench_results_frustrated.json and _control.json, numbered with new task ids.
`console`: copies of sample_logs/output2.txt (the console log of a tau-bench run: a control run
and a frustrated run of a small thinking model). Each copy keeps the sample's structure, line
for line and message for message, so a scan reads the same formats and finds the same kinds of
failure in the same proportions (reasoning leaks, unclosed <think>, think loops, failures
without an action). Its text is varied, so that no per-text cache sees a repeat across copies:
- every word of a message, tool call or result record that no rule or marker reads is replaced
  by a word drawn from the samples' vocabulary (case kept), the same replacement for the same
  word throughout one copy, so a conversation stays coherent and a looping model still loops;
- numbers of 4+ digits (user, order and item ids, zip codes) get new digits and long random ids
  (tool-call ids, hashes) new characters of the same classes, consistently within a copy;
- task ids are redrawn per copy (console) or numbered 0, 1, 2, … (results).
Object keys, roles, tool names and the log's own lines are kept. The words kept are those of the
samples that a rule's SQL, its parameters, `forensics/markers.py` or `forensics/check/` spell
out (frozen below, so that a rule rewritten later does not change the bytes). Streamed to disk
one copy at a time: memory does not grow with the output. Same arguments, same bytes.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import re
from collections.abc import Iterator
from itertools import chain
from pathlib import Path
from typing import Any

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
CONSOLE = "output2.txt"
RESULTS = ("tau_bench_results_frustrated.json", "tau_bench_results_control.json")

# The samples' words that a rule's SQL string literals and parameters, or a string constant of
# forensics/markers.py or forensics/check/*.py, contain (lower-cased; taken at 77d7e72). They
# stay as they are: replacing them could remove a finding, and drawing them as replacements
# could add one.
_KEEP_WORDS = """
a about action actions address again against agent agents all allowed also am an and another
answer answers any anything api apiconnectionerror are arguments as asked asks assist
assistant at attempt authentication available b back based be because before bench bit block
both but by c ca calculate call called calling calls can cancel cancelled cannot cb chat
check code com come completion completions confirm connection contains content conversation
cost could count current cut d data default defaults detail details did do does doing domain
done e each either enable end ending endpoint ends env error everything exact exactly
example exchange exit f fa failed false few file find first follow for found free from
function functions g gave get give given go goes going got gpt handle hard has have here
hermes high hold host how http https human i id ids if in index info instead into is it item
its itself json just k keep keeping keeps key kind know knowledge knows kwargs l last later
len length less let like list litellm ll llm loading locate log long longer look low m make
matter max maybe me means medium memory message messages mini model models modify moment
more most must my n name need never new no none not nothing now null num of off ok on once
one only openai or order ordered other our out output over own p pair parser path per please
post proceed process prompt provide provider py quickly qwen range re read reason reasoning
repeat repeated repeating reply request requested requests respond results return returned
returns reward right role runner runs s said same say says see seed select sent sentence
serve server set share should size so some source specific specify split start status stay
step steps still stop stopped stream summary sure system t take task tau tell th thank
thanks that the their them then there these they thing think thinking this those three time
timeout times to tokens told too tool tools traj transfer trial true try turn twice two type
types u understood until up update use used user using utils v verify vllm w wait was way
well what when where whether which why will with within working would wrote yet you your
"""
KEEP = frozenset(_KEEP_WORDS.split())
# Values that name things rather than say them: tool and function names, roles, kinds.
KEEP_VALUES_OF = frozenset({"role", "name", "type", "source"})

_TOKEN = re.compile(r"[A-Za-z0-9]+")
# Characters that join a token to its neighbour: a word next to one is part of an identifier
# (mei_kovacs) or a contraction (don't), not a word to draw as a replacement.
_JOINERS = "_'’"
# A slot as it reads once serialised: \x01 escaped by json.dumps (\u0001) or repr (\x01),
# once or twice (a JSON string inside a message), around the slot's number.
_SLOT = re.compile(r"\\+(?:u0001|x01)(\d+)\\+(?:u0001|x01)")
_MARK = "\x01"
_DIGITS = "0123456789"
_HEX = "0123456789abcdef"
_LOWER = "abcdefghijklmnopqrstuvwxyz"
_UPPER = _LOWER.upper()
_TASK_COUNT = 115  # tau-bench retail's test split: task ids 0-114
_RESULT_LINE = re.compile(r"^(✅|❌) task_id=(\d+) (\{.*)$")
_RUNNING_TASKS = re.compile(r"^(Running tasks \[)([\d, ]+)(\].*)$")
_RUNNING_TASK = re.compile(r"^(Running task )(\d+)$")


class Template:
    """A text cut into literal pieces and slots; a slot names the token to vary there."""

    def __init__(self) -> None:
        self.keys: list[tuple[str, str]] = []  # ("w"|"n"|"x"|"t"|"i", original)
        self._index: dict[tuple[str, str], int] = {}
        self.literals: list[str] = []
        self.slots: list[int] = []  # key index of each slot, between literals
        self.words: set[str] = set()  # the varied words that stand alone (see vocabulary)

    def slot(self, kind: str, original: str) -> str:
        """The marker standing for one varied token (kept in the text until `cut`)."""
        key = (kind, original)
        if key not in self._index:
            self._index[key] = len(self.keys)
            self.keys.append(key)
        return f"{_MARK}{self._index[key]}{_MARK}"

    def raw_slot(self, kind: str, original: str) -> str:
        """A slot written straight into serialised text (outside any JSON or repr string)."""
        return self.slot(kind, original).replace(_MARK, "\\u0001")

    def cut(self, text: str) -> None:
        parts = _SLOT.split(text)
        self.literals = parts[0::2]
        self.slots = [int(p) for p in parts[1::2]]

    def render(self, values: list[str]) -> str:
        """The text with every slot filled by `values[key index]`."""
        filled = [values[i] for i in self.slots]
        pairs = zip(self.literals[:-1], filled, strict=True)
        return "".join(chain.from_iterable(pairs)) + self.literals[-1]


def _classify(token: str) -> str | None:
    """The slot kind of a token, None to keep it."""
    if token.isdigit():
        return "n" if len(token) >= 4 else None
    if not token.isalpha():
        return "x" if len(token) >= 6 else None
    if len(token) >= 12 and not (token.islower() or token.istitle() or token.isupper()):
        return "x"  # a random id (a tool-call id's letters)
    return None if token.lower() in KEEP else "w"


def _mark_text(template: Template, text: str) -> str:
    def one(m: re.Match[str]) -> str:
        kind = _classify(m.group())
        before, after = text[m.start() - 1 : m.start()], text[m.end() : m.end() + 1]
        if kind == "w" and len(m.group()) >= 3 and not set(before + after) & set(_JOINERS):
            template.words.add(m.group().lower())
        return template.slot(kind, m.group()) if kind else m.group()

    return _TOKEN.sub(one, text)


def _mark_json_string(template: Template, text: str) -> str:
    """A string value: JSON inside it (a tool result, tool-call arguments) is marked value by
    value and written back as it was, anything else word by word."""
    if text[:1] in "{[":
        try:
            inner = json.loads(text)
        except ValueError:
            inner = None
        if inner is not None:
            for separators in ((", ", ": "), (",", ":")):
                if json.dumps(inner, separators=separators) == text:
                    return json.dumps(_mark(template, inner), separators=separators)
    return _mark_text(template, text)


def _mark(template: Template, value: Any, key: str | None = None) -> Any:
    if isinstance(value, dict):
        return {k: _mark(template, v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_mark(template, v, key) for v in value]
    if isinstance(value, str) and key not in KEEP_VALUES_OF:
        return _mark_json_string(template, value)
    return value


def console_template() -> Template:
    template = Template()
    out = []
    for line in (SAMPLES / CONSOLE).read_text().split("\n"):
        if line.startswith("{"):
            value = json.loads(line)
            if json.dumps(value) == line:  # the sample's messages all are; else keep it whole
                line = json.dumps(_mark(template, value))
        elif m := _RESULT_LINE.match(line):
            info = ast.literal_eval(m.group(3))
            line = f"{m.group(1)} task_id={template.raw_slot('t', m.group(2))} "
            line += repr(_mark(template, info))
        elif m := _RUNNING_TASKS.match(line):
            ids = ", ".join(template.raw_slot("t", t) for t in m.group(2).split(", "))
            line = m.group(1) + ids + m.group(3)
        elif m := _RUNNING_TASK.match(line):
            line = m.group(1) + template.raw_slot("t", m.group(2))
        out.append(line)
    template.cut("\n".join(out))
    return template


def results_templates() -> list[Template]:
    """One template per record, its `task_id` a slot ("i", "") numbered by the writer."""
    templates = []
    for name in RESULTS:
        for record in json.loads((SAMPLES / name).read_text()):
            template = Template()
            head = json.dumps({"task_id": 0}, indent=2)[: -len("0\n}")]
            rest = json.dumps(_mark(template, {**record, "task_id": 0}), indent=2)
            assert rest.startswith(head), "task_id is the records' first key"
            template.cut(head + template.raw_slot("i", "") + rest[len(head) + 1 :])
            templates.append(template)
    return templates


def vocabulary(templates: list[Template]) -> list[str]:
    """The words that may replace a word, sorted: the samples' own words of 3+ letters that no
    rule reads (`KEEP`), and not the stem of a contraction (the "don" of "don't")."""
    return sorted(set().union(*(t.words for t in templates)))


def _like(rng: random.Random, original: str) -> str:
    """New characters of the same classes: digits only in a short id (#W5490111 keeps its W),
    every character in a long one (a hash stays hexadecimal)."""
    if len(original) < 12:
        return "".join(rng.choice(_DIGITS) if c.isdigit() else c for c in original)
    if all(c in _HEX for c in original):
        return "".join(rng.choice(_HEX) for _ in original)
    return "".join(
        rng.choice(_DIGITS if c.isdigit() else _UPPER if c.isupper() else _LOWER) for c in original
    )


def _word(rng: random.Random, words: list[str], original: str) -> str:
    new = rng.choice(words)
    if original.isupper() and len(original) > 1:
        return new.upper()
    if original[:1].isupper():
        return new.capitalize()
    return new


def draw(rng: random.Random, keys: list[tuple[str, str]], words: list[str]) -> list[str]:
    """One copy's replacement for every key, drawn in key order (so the same seed gives the
    same copy). Task ids of one copy stay distinct; `i` slots are filled by the caller."""
    tasks = iter(rng.sample(range(_TASK_COUNT), sum(kind == "t" for kind, _ in keys)))
    values = []
    for kind, original in keys:
        if kind == "w":
            values.append(_word(rng, words, original))
        elif kind == "n":
            # a leading zero would read as another kind of number
            values.append(str(rng.randrange(1, 10)) + _like(rng, "0" * (len(original) - 1)))
        elif kind == "x":
            values.append(_like(rng, original))
        elif kind == "t":
            values.append(str(next(tasks)))
        else:
            values.append("")
    return values


def console_copies(seed: int) -> Iterator[str]:
    template = console_template()
    words = vocabulary([template, *results_templates()])
    copy = 0
    while True:
        yield template.render(draw(random.Random(f"{seed}:console:{copy}"), template.keys, words))
        copy += 1


def results_records(seed: int) -> Iterator[str]:
    templates = results_templates()
    words = vocabulary([console_template(), *templates])
    number = 0
    copy = 0
    while True:
        # one generator per copy of the samples' four records, drawn from record after record
        rng = random.Random(f"{seed}:results:{copy}")
        for template in templates:
            values = draw(rng, template.keys, words)
            values[template.keys.index(("i", ""))] = str(number)
            yield template.render(values)
            number += 1
        copy += 1


def write(kind: str, out: Path, mb: float, seed: int = 0) -> int:
    """Writes about `mb` MB (whole copies or records, at least one) to `out`; returns bytes."""
    target = int(mb * 1e6)
    written = 0
    with out.open("wb") as f:
        if kind == "console":
            for text in console_copies(seed):
                data = text.encode()
                f.write(data)
                written += len(data)
                if written >= target:
                    break
        else:
            f.write(b"[\n")
            written = 2
            for i, text in enumerate(results_records(seed)):
                data = ((",\n" if i else "") + text).encode()
                f.write(data)
                written += len(data)
                if written >= target:
                    break
            f.write(b"\n]\n")
            written += 3
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("kind", choices=["results", "console"])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=float, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    write(args.kind, args.out, args.mb, args.seed)


if __name__ == "__main__":
    main()
