"""Every command, query and Python snippet of README.md and docs/*.md runs on the sample data.

The documents follow these conventions, which this module enforces:

- Every fenced block names its language: `sh`, `text`, `sql`, `python`, `toml` or `yaml`, so
  nothing escapes the checks below.
- `sh` blocks hold commands, one per line (`\\` continues a line, a `#` starts a comment; in a
  block that also shows output, `$ ` marks the commands). They run in order, one workspace per
  document (a temporary directory holding a copy of `sample_logs/`, `results/` with the sample
  log, results files and capture, `rerun/` with the checkpoint cut after two tasks, `docs/`,
  `tests/data/`, and the empty `rules/` and `tests/rule_fixtures/` of a checkout), so a file one
  command writes is there for the next. A plain `forensics …` runs in this process through the
  entry point; a command with a pipe or a redirection runs in bash with `forensics` on PATH.
- `<!-- exit: CODES -->` before an `sh` block gives the exit code of its commands: one code for
  all, or one per command. Without it every command must exit 0.
- `<!-- output of: COMMAND -->` before a `text` block: the block is that command's output (its
  stdout, then its stderr), line for line. A line holding only `…` stands for lines left out;
  between two of them the lines shown follow each other in the output as they do in the block,
  and a block that neither starts nor ends with `…` is the whole output. Before comparing, the
  workspace's path and timings (`1.2 s`) are normalised on both sides.
- Every `text` block is the output of a command, or says why not (`not run`: a diagram, the
  output of a benchmark that runs for minutes).
- In a `python` block, a line that is an expression followed by a comment that looks like its
  repr (`result  # Scan(files=1, …)`) must give that repr.
- `sql` blocks run on the tables of a scan of `sample_logs/`; `python` blocks run in order, in
  one namespace per document, from its workspace; `toml` and `yaml` blocks must parse.
- `<!-- not run: REASON -->` before a block: it is not run; each one is reported as a skipped
  test with its reason. A runnable `sh` block may hold only `forensics` commands.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

import forensics
from forensics import cli

from conftest import ROOT, SAMPLES

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LANGUAGES = {"sh", "text", "sql", "python", "toml", "yaml"}
# Top-level folders whose paths the documents name in backticks: each must exist.
TOP_LEVEL = ("forensics", "tests", "rules", "benchmarks", "sample_logs", "docs", "reports", ".ci")

REPO_PATH = re.compile(r"`((?:" + "|".join(map(re.escape, TOP_LEVEL)) + r")/[\w./-]*)`")
FENCE = re.compile(r"^(`{3,}|~{3,})(.*)$")
DIRECTIVE = re.compile(r"^<!--\s*(not run|exit|output of):\s*(.*?)\s*-->$")


@dataclass
class Block:
    doc: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    directives: dict[str, str] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def blocks(doc: Path) -> list[Block]:
    """The fenced blocks of a document, each with the directives in the comments just above."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(1), m.group(2).strip()
        end = next(
            (j for j in range(i + 1, len(lines)) if lines[j].strip() == fence),
            len(lines),
        )
        directives: dict[str, str] = {}
        k = i - 1
        while k >= 0 and (d := DIRECTIVE.match(lines[k].strip())):
            directives[d.group(1)] = d.group(2)
            k -= 1
        out.append(Block(doc, i + 1, lang, "\n".join(lines[i + 1 : end]), directives))
        i = end + 1
    return out


ALL_BLOCKS = [b for doc in DOCUMENTS for b in blocks(doc)]
NOT_RUN = [b for b in ALL_BLOCKS if "not run" in b.directives]


def commands(block: Block) -> list[str]:
    """The commands of an `sh` block: continuation lines joined, comments and output dropped."""
    joined: list[str] = []
    pending = ""
    for raw in block.text.splitlines():
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        joined.append(pending + raw)
        pending = ""
    if pending:
        joined.append(pending)
    prompted = any(line.startswith("$ ") for line in joined)
    if prompted:
        return [line[2:].strip() for line in joined if line.startswith("$ ")]
    return [line.strip() for line in joined if line.strip() and not line.lstrip().startswith("#")]


def expected_codes(block: Block, n: int) -> list[int]:
    spec = block.directives.get("exit", "0").split()
    assert len(spec) in (1, n), f"{block.where}: exit gives {len(spec)} codes for {n} commands"
    return [int(c) for c in spec] * n if len(spec) == 1 else [int(c) for c in spec]


def needs_shell(command: str) -> bool:
    """A pipe, a redirection or a list: shell syntax outside quotes."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.commenters = "#"
    return any(tok and set(tok) <= set("|&;<>()") for tok in lexer)


# --- the workspace and the runner ---------------------------------------------------------


def make_workspace(root: Path) -> Path:
    shutil.copytree(SAMPLES, root / "sample_logs")
    shutil.copytree(ROOT / "docs", root / "docs")
    (root / "results").mkdir()
    for name in (
        "output2.txt",
        "tau_bench_results_control.json",
        "tau_bench_results_frustrated.json",
        "vllm_capture_frustrated.jsonl",
    ):
        shutil.copy(SAMPLES / name, root / "results" / name)
    (root / "rerun").mkdir()
    shutil.copy(SAMPLES / "tau_bench_results_truncated.json", root / "rerun")
    (root / "rules").mkdir()
    (root / "tests" / "rule_fixtures").mkdir(parents=True)
    # The test data the documents name (read only, so not copied).
    (root / "tests" / "data").symlink_to(ROOT / "tests" / "data")
    # `forensics` for commands that run in bash: this interpreter, this checkout.
    bin_dir = root.parent / f"{root.name}-bin"
    bin_dir.mkdir()
    shim = bin_dir / "forensics"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m forensics "$@"\n')
    shim.chmod(0o755)
    return root


@dataclass
class Ran:
    code: int
    out: str
    err: str


class Runner:
    def __init__(self, workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.workspace = workspace
        self.capsys = capsys
        self.done: dict[str, Ran] = {}

    def __call__(self, command: str) -> Ran:
        if re.match(r"forensics\s+view\b", command) and "--print-url" not in command:
            pytest.fail(f"{command!r} would open a browser: add --print-url or mark it not run")
        ran = self._shell(command) if needs_shell(command) else self._in_process(command)
        self.done[command] = ran
        return ran

    def _in_process(self, command: str) -> Ran:
        argv = shlex.split(command, comments=True)
        assert argv[0] == "forensics", f"not a forensics command: {command!r}"
        self.capsys.readouterr()
        saved = sys.argv
        sys.argv = argv
        try:
            cli.main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        finally:
            sys.argv = saved
        captured = self.capsys.readouterr()
        return Ran(code, captured.out, captured.err)

    def _shell(self, command: str) -> Ran:
        bin_dir = self.workspace.parent / f"{self.workspace.name}-bin"
        path = os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")])
        pythonpath = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=self.workspace,
            env={**os.environ, "PATH": path, "PYTHONPATH": pythonpath},
            capture_output=True,
            text=True,
            check=False,
        )
        return Ran(done.returncode, done.stdout, done.stderr)


@pytest.fixture(scope="module")
def sample_scan():
    return forensics.scan([str(SAMPLES)])


def _run_sh(block: Block, run: Runner) -> list[str]:
    cmds = commands(block)
    if not cmds:
        return [f"{block.where}: an sh block without a command"]
    problems = []
    for command, want in zip(cmds, expected_codes(block, len(cmds)), strict=True):
        first = shlex.split(command, comments=True)
        if "forensics" not in first[:1] and not re.search(r"\|\s*forensics\b", command):
            problems.append(
                f"{block.where}: {command!r} is not a forensics command; mark the block "
                "<!-- not run: reason -->"
            )
            continue
        ran = run(command)
        if ran.code != want or "internal error" in ran.err or "Traceback" in ran.err:
            problems.append(
                f"{block.where}: {command!r} exited {ran.code}, expected {want}\n"
                f"{ran.out[-2000:]}{ran.err[-2000:]}"
            )
    return problems


TIMING = re.compile(r"\b\d+(?:\.\d+)? ?(?:ms|s)\b")


def normalised(text: str, workspace: Path) -> list[str]:
    """Lines as compared: trailing blanks dropped, the workspace's path and timings replaced."""
    text = text.replace(f"{workspace}{os.sep}", "").replace(str(workspace), ".")
    return [TIMING.sub("<time>", line.rstrip()) for line in text.splitlines()]


def segments(lines: list[str]) -> list[list[str]]:
    """The runs of lines between `…` lines (the lines left out)."""
    out: list[list[str]] = [[]]
    for line in lines:
        if line.strip() == "…":
            out.append([])
        else:
            out[-1].append(line)
    return out


def _find(actual: list[str], run: list[str], start: int) -> int:
    """Where `run` first sits in actual at or after start, line after line; -1 if nowhere."""
    for at in range(start, len(actual) - len(run) + 1):
        if actual[at : at + len(run)] == run:
            return at
    return -1


def output_drift(shown: list[str], actual: list[str]) -> str | None:
    """None when the block is the output (with `…` for lines left out), else what differs."""
    parts = segments(shown)
    # Blank lines at a `…` are layout; inside a run they must be in the output too.
    parts = [_trimmed(p) for p in parts]
    at = 0
    for i, part in enumerate(parts):
        if not part:
            continue
        first, last = i == 0, i == len(parts) - 1
        found = _find(actual, part, at)
        if found < 0 or (first and found != 0):
            near = _find(actual, part[:1], at)
            where = f"from its line {near + 1}" if near >= 0 else "nowhere"
            return (
                "these lines do not follow each other in the output as shown "
                f"({'the block starts the output; ' if first else ''}first line found {where}):\n"
                + "\n".join(part)
            )
        at = found + len(part)
        if last and at != len(actual):
            return "the output goes on after the last line shown (end the block with …):\n"
            f"{actual[at]}"
    return None


def _trimmed(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def _check_output(block: Block, run: Runner) -> list[str]:
    command = block.directives["output of"]
    ran = run.done.get(command) or run(command)
    if ran.code not in (0, 1):
        return [f"{block.where}: {command!r} exited {ran.code}\n{ran.err[-2000:]}"]
    actual = normalised(ran.out + ran.err, run.workspace)
    drift = output_drift(normalised(block.text, run.workspace), actual)
    if drift is None:
        return []
    return [
        f"{block.where}: the output of {command!r} drifted from the block: {drift}\n"
        f"--- the output:\n" + "\n".join(actual)
    ]


# `EXPR  # Repr(…)`: an expression whose comment shows what it gives.
SHOWN_REPR = re.compile(r"^(?P<expr>[A-Za-z_][\w.]*)\s+#\s+(?P<repr>[A-Z]\w*\(.*\))\s*$")


def checked_python(text: str) -> str:
    """The block with each `EXPR  # Repr(...)` line made an assertion that it gives that repr."""
    return "\n".join(
        f"assert repr({m['expr']}) == {m['repr']!r}, repr({m['expr']})"
        if (m := SHOWN_REPR.match(line))
        else line
        for line in text.splitlines()
    )


@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda d: str(d.relative_to(ROOT)))
def test_document_runs(doc, tmp_path, monkeypatch, capsys, sample_scan):
    workspace = make_workspace(tmp_path / "work")
    monkeypatch.chdir(workspace)
    monkeypatch.delenv("NO_COLOR", raising=False)
    run = Runner(workspace, capsys)
    scope: dict = {}
    problems: list[str] = []
    for block in blocks(doc):
        if "not run" in block.directives:
            continue
        if block.lang == "sh":
            problems += _run_sh(block, run)
        elif block.lang == "text" and "output of" in block.directives:
            problems += _check_output(block, run)
        elif block.lang == "sql":
            try:
                sample_scan.sql(block.text).fetchall()
            except Exception as exc:
                problems.append(f"{block.where}: the query fails: {exc}")
        elif block.lang == "python":
            try:
                exec(compile(checked_python(block.text), block.where, "exec"), scope)
            except Exception as exc:
                problems.append(f"{block.where}: {type(exc).__name__}: {exc}")
        elif block.lang == "toml":
            try:
                tomllib.loads(block.text)
            except tomllib.TOMLDecodeError as exc:
                problems.append(f"{block.where}: not TOML: {exc}")
        elif block.lang == "yaml":
            try:
                yaml.safe_load(block.text)
            except yaml.YAMLError as exc:
                problems.append(f"{block.where}: not YAML: {exc}")
    assert not problems, "\n\n".join(problems)


@pytest.mark.parametrize("block", NOT_RUN, ids=lambda b: b.where)
def test_blocks_not_run_say_why(block):
    reason = block.directives["not run"]
    assert len(reason.split()) >= 3, f"{block.where}: say why the block is not run"
    pytest.skip(f"not run: {reason}")


# --- the conventions hold ------------------------------------------------------------------


def test_every_block_names_a_known_language():
    bad = [f"{b.where}: {b.lang or '(none)'}" for b in ALL_BLOCKS if b.lang not in LANGUAGES]
    assert not bad, (
        "fenced blocks need one of " + ", ".join(sorted(LANGUAGES)) + ":\n" + ("\n".join(bad))
    )


def test_every_text_block_is_checked_output_or_says_why_not():
    unchecked = [
        b.where
        for b in ALL_BLOCKS
        if b.lang == "text" and not ({"output of", "not run"} & set(b.directives))
    ]
    assert not unchecked, (
        "a text block shows a command's output (<!-- output of: COMMAND -->, checked) or says "
        "why it is not run:\n" + "\n".join(unchecked)
    )


def test_output_blocks_are_compared_line_by_line():
    out = ["head", "a", "b", "", "c", "tail"]
    assert output_drift(["head", "…", "b", "", "c", "…"], out) is None
    assert output_drift(["…", "tail"], out) is None
    assert output_drift(out, out) is None
    assert "do not follow" in output_drift(["head", "…", "a", "c", "…"], out)  # b left out
    assert "starts the output" in output_drift(["a", "…"], out)
    assert "goes on" in output_drift(["head", "…", "c"], out)
    assert normalised("took 1.25 s in /w/x/y", Path("/w/x")) == ["took <time> in y"]
    assert checked_python("r  # Scan(files=1)\nx = 1") == (
        "assert repr(r) == 'Scan(files=1)', repr(r)\nx = 1"
    )


def test_commands_are_not_hidden_in_text_blocks():
    hidden = [
        f"{b.where}: {line}"
        for b in ALL_BLOCKS
        if b.lang == "text"
        for line in b.text.splitlines()
        if re.match(r"(\$ )?forensics ", line)
    ]
    assert not hidden, "commands belong in sh blocks, where they run:\n" + "\n".join(hidden)


def test_directives_sit_on_the_blocks_they_describe():
    for b in ALL_BLOCKS:
        if "exit" in b.directives:
            assert b.lang == "sh", f"{b.where}: exit codes are for sh blocks"
        if "output of" in b.directives:
            assert b.lang == "text", f"{b.where}: output of is for text blocks"
    # A directive followed by a blank line or prose describes nothing.
    for doc in DOCUMENTS:
        lines = doc.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if DIRECTIVE.match(line.strip()):
                after = next((x for x in lines[i + 1 :] if not DIRECTIVE.match(x.strip())), "")
                assert FENCE.match(after) and lines[i + 1].strip(), (
                    f"{doc.relative_to(ROOT)}:{i + 1}: a directive goes right above its block"
                )


def test_the_conventions_see_every_kind_of_block():
    # If the parser stopped seeing blocks, every test above would pass vacuously.
    langs = {b.lang for b in ALL_BLOCKS if "not run" not in b.directives}
    assert langs >= {"sh", "text", "sql", "python", "toml", "yaml"}
    assert sum(1 for b in ALL_BLOCKS if b.lang == "sh" and "not run" not in b.directives) >= 20
    assert any("output of" in b.directives for b in ALL_BLOCKS)
    assert commands(Block(ROOT, 1, "sh", "forensics a \\\n  b  # c\n# d\n\nforensics e")) == [
        "forensics a    b  # c",
        "forensics e",
    ]
    assert commands(Block(ROOT, 1, "sh", "$ forensics x\noutput\n$ forensics y")) == [
        "forensics x",
        "forensics y",
    ]
    assert needs_shell("forensics scan - < f.json") and needs_shell("zcat x | forensics scan -")
    assert not needs_shell('forensics query --db x "select 1 where 2 > 1"  # a > b')


# --- links and paths resolve ---------------------------------------------------------------


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(doc: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", doc.read_text(encoding="utf-8"), flags=re.S | re.M)
    return {_anchor(m) for m in re.findall(r"^#+ (.*)$", text, flags=re.M)}


LINKED = [*DOCUMENTS, ROOT / "CHANGELOG.md", ROOT / "docs" / "reference" / "README.md"]


@pytest.mark.parametrize("doc", LINKED, ids=lambda d: str(d.relative_to(ROOT)))
def test_links_and_paths_resolve(doc):
    text = doc.read_text(encoding="utf-8")
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", prose):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        resolved = (doc.parent / path).resolve() if path else doc
        missing_anchor = anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved)
        if not resolved.exists() or missing_anchor:
            broken.append(target)
    if doc.name != "CHANGELOG.md":  # history names files as they were then
        for path in REPO_PATH.findall(prose):
            placeholder = any(part.split(".")[0].isupper() for part in path.split("/"))
            if not (ROOT / path).exists() and not placeholder:
                broken.append(path)
    assert not broken, f"{doc.relative_to(ROOT)}: these do not resolve: {broken}"


# --- summaries quote the full tables ---------------------------------------------------------


def test_readme_accuracy_summary_adds_up_the_table():
    table = (ROOT / "docs" / "accuracy.md").read_text(encoding="utf-8")
    rows = re.findall(
        r"^\| `[\w-]+` \| (?:hard|heuristic) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|", table, re.M
    )
    labelled, tp, fp, fn = (sum(int(r[i]) for r in rows) for i in range(4))
    summary = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert (
        f"Over the {len(rows)} measured rules: {labelled} labelled findings, {tp} found, "
        f"{fp} false positives, {fn} miss" in summary
    )


def test_pytest_q_still_prints_the_summary_line():
    """README's `pytest` takes its options from pyproject: a -q there makes `pytest -q` -qq,
    which prints no summary line (and CI reads the closing line)."""
    import shlex

    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    addopts = shlex.split(options["tool"]["pytest"]["ini_options"]["addopts"])
    assert not [o for o in addopts if re.fullmatch(r"-q+|--quiet", o)], addopts


def test_set_up_says_what_chromium_is_for():
    setup = (ROOT / "README.md").read_text(encoding="utf-8").split("## Set up")[1]
    setup = " ".join(setup.split("\n## ")[0].split())
    assert "headless Chromium" in setup and "apt-get install chromium" in setup
    assert "skip, each saying what to install" in setup


def test_rule_counts_in_prose_match_the_pack():
    """The count counts every stable rule; a preview rule under way (`forensics rules new`)
    may be counted already or not yet, so adding one needs no edit of the prose."""
    from forensics.check import engine

    rules = engine.load_rules()
    stable = sum(not r.preview for r in rules)
    for doc, words in (
        ("README.md", "rules, one TOML file each"),
        ("docs/rules.md", "rules, one file each"),
    ):
        counted = re.search(rf"(\d+) {words}", (ROOT / doc).read_text(encoding="utf-8"))
        assert counted, f"{doc}: no '<n> {words}'"
        assert stable <= int(counted[1]) <= len(rules), (doc, stable, len(rules))
