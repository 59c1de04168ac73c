"""The issue-23 figures in one run: scan cost, anchors, peak RSS and the size curve, per input kind.

    python benchmarks/reference.py [--sizes 0.2,1,2,5] [--kinds capture,console,results]
                                   [--rounds 3] [--dir /tmp/forensics-reference] [--seed 0]
                                   [--keep-json DIR] [--tree [LABEL=]PATH ...]
                                   [--forensics [LABEL=]CMD ...]

Sizes are in GB (0.2 is 200 MB). Three kinds of input, each written once into --dir, streamed
(no generator holds its output in memory), and reused by later runs:
- `capture`: issue 14's reference workload, `gen_capture.py OUT MB` (agent loops, every request
  repeating the growing history and 8 tool schemas). That generator is not part of this
  repository: it is looked for in the folder FORENSICS_BENCH names, else in `../shared/bench/`
  next to the checkout (where the project's machines keep it). Without it the capture rows use
  the project's own generator, `benchmarks/make_capture.py OUT --mb MB` (agent loops of the same
  kind, 14 tool schemas), and the table names the generator: figures from the two are not
  comparable.
- `console`: a tau-bench console log, `benchmarks/make_tau.py console` (the sample log's
  structure and failures, text varied per copy: no per-text cache sees a repeat);
- `results`: a tau-bench results file (one JSON array), `benchmarks/make_tau.py results`.

Each round runs, one after the other, as separate processes measured from outside by
/usr/bin/time (wall, user+sys CPU, peak RSS; start-up and imports included):
  - `forensics scan FILE --no-report --json OUT -q`, end to end, once per tree compared;
  - DuckDB's bare read, `CREATE TABLE t AS SELECT * FROM read_json(FILE, …)` in memory with 2
    threads (every column materialised): newline-delimited for captures; for console logs
    newline-delimited with ignore_errors (the log's text and Python-repr lines become null rows,
    its JSON message lines are parsed); format='array' for results files;
  - an orjson anchor (the standard library's json without orjson; the table says which): a line
    loop for captures, the same loop over the lines that open with `{` for console logs (the
    messages; result lines are Python reprs), and for results files `loads` of the array in
    16 MB pieces cut between records (one `loads` of a 5 GB file would need about 18 GB).
Rounds interleave the programs, so a busy machine slows all of them alike; medians over the
rounds are printed as one Markdown table per kind, with the scan's CPU over DuckDB's and
orjson's, MB/s end to end (input MB / scan wall s) and the size of the `--json` written.

Two trees side by side: `--tree main=/work/main --tree new=/work/wt-x` runs
`python -m forensics` with PYTHONPATH set to each tree (this interpreter, so the same
libraries); `--forensics LABEL=CMD` runs an installed command instead (`--forensics
old=/opt/venv/bin/forensics`). Without either, the checkout this script is in is measured.
Trees are byte-compiled first, as a pip install leaves them (a sandbox that sets
PYTHONDONTWRITEBYTECODE would otherwise recompile them in every process). `--keep-json DIR`
keeps every scan's `--json` as DIR/[LABEL-]KIND-SIZEmb.json, to compare findings between trees.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# The reference workload's generator, outside the repository (see the docstring).
GEN_CAPTURE = Path(os.environ.get("FORENSICS_BENCH", ROOT.parent / "shared" / "bench")) / (
    "gen_capture.py"
)
KINDS = ("capture", "console", "results")
TITLES = {
    "capture": "Captures",
    "console": "tau-bench console logs",
    "results": "tau-bench results files",
}

DUCKDB = """
import sys, duckdb
con = duckdb.connect()
con.execute("SET threads = 2")
con.execute("CREATE TABLE t AS SELECT * FROM read_json(?, " + sys.argv[2] + ")", [sys.argv[1]])
"""
# read_json's options per kind (see the docstring)
DUCKDB_OPTIONS = {
    "capture": "format = 'newline_delimited'",
    "console": "format = 'newline_delimited', ignore_errors = true",
    "results": "format = 'array'",
}

ORJSON = """
import sys
try:
    from orjson import loads
except ImportError:
    from json import loads
kind = sys.argv[2]
with open(sys.argv[1], "rb") as f:
    if kind == "results":
        # the array in pieces of whole records: make_tau.py writes each record at column 0, so
        # a top-level record, and only one, ends with a line that opens with "}"
        assert f.read(2) == b"[\\n"
        rest = b""
        while block := f.read(1 << 24):
            rest += block
            cut = rest.rfind(b"\\n},\\n")
            if cut >= 0:
                loads(b"[" + rest[: cut + 2] + b"]")
                rest = rest[cut + 4 :]
        loads(b"[" + rest)
    elif kind == "console":
        for line in f:
            if line.startswith(b"{"):
                loads(line)
    else:
        for line in f:
            loads(line)
"""


@dataclass
class Scanner:
    """One forensics to measure: a label, the command that starts it, its environment."""

    label: str
    argv: list[str]
    env: dict[str, str | None] = field(default_factory=dict)  # None: unset
    tree: Path | None = None


@dataclass
class Runs:
    """(wall s, CPU s, peak RSS MB) of every round of one program on one input, and why a
    round failed if one did (its figures are then not printed)."""

    runs: list[tuple[float, float, float]] = field(default_factory=list)
    failed: str | None = None

    def add(self, argv: list[str], env: dict[str, str | None] | None = None) -> None:
        if self.failed is None:  # a program that failed once (out of memory) is not rerun
            result = _timed(argv, env)
            if isinstance(result, str):
                self.failed = result
            else:
                self.runs.append(result)

    def median(self, i: int) -> float:
        return statistics.median(r[i] for r in self.runs)


def _have_orjson() -> bool:
    try:
        import orjson  # noqa: F401
    except ImportError:
        return False
    return True


def _timed(
    argv: list[str], env: dict[str, str | None] | None = None
) -> tuple[float, float, float] | str:
    """(wall s, CPU s, peak RSS MB) of one process, measured by /usr/bin/time; or why it failed
    (the rest of the run goes on: a 5 GB input may not fit an older tree's memory)."""
    environ = {**os.environ, **(env or {})}
    with tempfile.NamedTemporaryFile("r", suffix=".time") as times:
        done = subprocess.run(
            ["/usr/bin/time", "-o", times.name, "-f", "%e %U %S %M", *argv],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            env={k: v for k, v in environ.items() if v is not None},
        )
        lines = times.read().strip().splitlines()
    # scan exits 1 when it finds something; anything else is a failure of the benchmark
    if done.returncode not in (0, 1):
        signal = next((line for line in lines if "signal" in line), "")
        why = signal.replace("Command terminated by ", "") or f"exit {done.returncode}"
        print(f"{shlex.join(argv[:6])} failed ({why}):\n{done.stderr[-2000:]}", file=sys.stderr)
        rss = lines[-1].split()[-1] if lines else ""
        return f"failed ({why}" + (f", {int(rss) / 1024:,.0f} MB)" if rss.isdigit() else ")")
    wall, user, system, rss_kb = lines[-1].split()
    return float(wall), float(user) + float(system), int(rss_kb) / 1024


def _tree(spec: str) -> Scanner:
    label, _, path = spec.rpartition("=")
    tree = Path(path).resolve()
    if not (tree / "forensics" / "__init__.py").is_file():
        raise SystemExit(f"--tree {spec}: no forensics package in {tree}")
    # the tree first; the rest of the caller's PYTHONPATH after it, without the tree again
    rest = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    pythonpath = os.pathsep.join([str(tree), *(p for p in rest if p and Path(p).resolve() != tree)])
    return Scanner(
        label or tree.name,
        [sys.executable, "-m", "forensics"],
        {"PYTHONPATH": pythonpath},
        tree,
    )


def _command(spec: str) -> Scanner:
    label, sep, command = spec.partition("=")
    if not sep or " " in label or "/" in label:  # no label given: the whole spec is the command
        label, command = "", spec
    argv = shlex.split(command)
    # as installed: a PYTHONPATH set for another tree would have it import that tree instead
    return Scanner(label or Path(argv[0]).name, argv, {"PYTHONPATH": None})


def _commit(tree: Path | None) -> str:
    if tree is None:
        return "installed"
    done = subprocess.run(
        ["git", "-C", str(tree), "log", "-1", "--format=%h"],
        capture_output=True,
        text=True,
        check=False,
    )
    dirty = subprocess.run(
        ["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        check=False,
    )
    commit = done.stdout.strip() or "not a git checkout"
    return commit + (" (modified)" if dirty.stdout.strip() else "")


def _generator(kind: str) -> str:
    if kind == "capture":
        return GEN_CAPTURE.name if GEN_CAPTURE.is_file() else "make_capture.py"
    return "make_tau.py"


def _input(directory: Path, kind: str, mb: float, seed: int) -> Path:
    """The input of `kind` and about `mb` MB, written into `directory` unless already there."""
    if kind == "capture" and GEN_CAPTURE.is_file():
        path = directory / f"capture-{mb:g}mb.jsonl"
        argv = [sys.executable, str(GEN_CAPTURE), "{out}", f"{mb:g}"]
    elif kind == "capture":
        path = directory / f"make-capture-{mb:g}mb.jsonl"
        argv = [sys.executable, str(HERE / "make_capture.py"), "{out}", "--mb", f"{mb:g}"]
    else:
        # "varied" and the seed in the name: logs of the earlier, repeating make_tau.py that
        # an older run left in --dir are not reused
        ext = "log" if kind == "console" else "json"
        path = directory / f"tau-{kind}-varied-seed{seed}-{mb:g}mb.{ext}"
        argv = [sys.executable, str(HERE / "make_tau.py"), kind, "{out}", "--mb", f"{mb:g}"]
        argv += ["--seed", str(seed)]
    if not path.exists():
        # written under another name first: an interrupted run leaves no half file to reuse
        partial = path.with_name(path.name + ".partial")
        started = time.monotonic()
        subprocess.run(
            [a.replace("{out}", str(partial)) for a in argv], check=True, stdout=subprocess.DEVNULL
        )
        partial.rename(path)
        print(
            f"wrote {path} ({path.stat().st_size / 1e6:,.0f} MB) in "
            f"{time.monotonic() - started:.0f} s",
            file=sys.stderr,
        )
    return path


def _scan(scanner: Scanner, path: Path, out: Path) -> list[str]:
    return [*scanner.argv, "scan", str(path), "--no-report", "--json", str(out), "-q"]


def _header(kind: str, labels: bool, loop: str) -> list[str]:
    tree = " tree |" if labels else ""
    return [
        "",
        f"{TITLES[kind]} (`{_generator(kind)}`):",
        "",
        f"| input MB |{tree} scan wall s | scan CPU s | MB/s | peak RSS | `--json` MB "
        f"| DuckDB CPU s | {loop} CPU s | scan / DuckDB (CPU) | scan / {loop} (CPU) |",
        "|---:|" + ("---|" if labels else "") + "---:|" * 9,
    ]


def _row(mb: float, label: str | None, scan: Runs, json_mb: float, duck: Runs, loop: Runs) -> str:
    tree = f" {label} |" if label is not None else ""
    if scan.failed:
        cells = [scan.failed, *[""] * 4]
    else:
        cells = [
            f"{scan.median(0):.1f}",
            f"{scan.median(1):.1f}",
            f"{mb / scan.median(0):.1f}",
            f"{scan.median(2):,.0f} MB",
            f"{json_mb:,.1f}",
        ]
    for anchor in (duck, loop):
        cells.append(anchor.failed or f"{anchor.median(1):.2f}")
    for anchor in (duck, loop):
        ok = not (scan.failed or anchor.failed)
        cells.append(f"{scan.median(1) / anchor.median(1):.1f}x" if ok else "")
    return f"| {mb:,.0f} |{tree} " + " | ".join(cells) + " |"


def _digest(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _provenance(scanners: list[Scanner], args: argparse.Namespace, loop: str) -> list[str]:
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    lines = [
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.node()}: "
        f"{os.cpu_count()} cores, {total:.0f} GiB RAM, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f} at the start; medians of {args.rounds} "
        f"interleaved round(s); anchors: DuckDB read_json (2 threads), {loop}.",
    ]
    lines += [
        f"- tree `{s.label}`: {_commit(s.tree)} ({' '.join(s.argv)}"
        + (f", PYTHONPATH={s.env['PYTHONPATH']}" if s.env.get("PYTHONPATH") else "")
        + ")"
        for s in scanners
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="0.2,1,2,5", help="input sizes in GB, comma-separated")
    parser.add_argument("--kinds", default=",".join(KINDS), help="of: " + ", ".join(KINDS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0, help="make_tau.py's seed")
    parser.add_argument(
        "--dir", type=Path, default=Path(tempfile.gettempdir()) / "forensics-reference"
    )
    parser.add_argument("--keep-json", type=Path, help="keep every scan's --json here")
    parser.add_argument(
        "--tree",
        action="append",
        default=[],
        metavar="[LABEL=]PATH",
        help="a source tree to measure (python -m forensics with PYTHONPATH=PATH); repeatable",
    )
    parser.add_argument(
        "--forensics",
        action="append",
        default=[],
        metavar="[LABEL=]CMD",
        help="a forensics command to measure (e.g. /opt/venv/bin/forensics); repeatable",
    )
    args = parser.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    if unknown := set(kinds) - set(KINDS):
        parser.error(f"unknown kinds: {', '.join(sorted(unknown))}")
    sizes = [float(s) for s in args.sizes.split(",") if s]
    scanners = [_tree(t) for t in args.tree] + [_command(c) for c in args.forensics]
    if not scanners:
        scanners = [_tree(str(ROOT))]
    if len({s.label for s in scanners}) != len(scanners):
        parser.error("give each tree or command its own LABEL=")
    labelled = len(scanners) > 1

    args.dir.mkdir(parents=True, exist_ok=True)
    if args.keep_json:
        args.keep_json.mkdir(parents=True, exist_ok=True)
    for s in scanners:
        if s.tree is not None:
            subprocess.run(
                [sys.executable, "-m", "compileall", "-q", str(s.tree / "forensics")], check=True
            )
    loop = "orjson" if _have_orjson() else "json"
    if "capture" in kinds and not GEN_CAPTURE.is_file():
        print(
            f"{GEN_CAPTURE} not found (set FORENSICS_BENCH): capture rows use "
            "benchmarks/make_capture.py, not the reference workload",
            file=sys.stderr,
        )

    print("\n".join(_provenance(scanners, args, loop)), flush=True)
    scratch = Path(tempfile.mkdtemp(prefix="scan-json-", dir=args.dir))
    identical: list[str] = []
    try:
        for kind in kinds:
            print("\n".join(_header(kind, labelled, loop)), flush=True)
            for size in sizes:
                path = _input(args.dir, kind, size * 1000, args.seed)
                mb = path.stat().st_size / 1e6
                name = f"{kind}-{size * 1000:g}mb.json"
                outs = {
                    s.label: (args.keep_json or scratch) / (f"{s.label}-" * labelled + name)
                    for s in scanners
                }
                scans = {s.label: Runs() for s in scanners}
                duck, line = Runs(), Runs()
                for r in range(args.rounds):
                    print(f"{kind} {mb:,.0f} MB: round {r + 1}/{args.rounds}", file=sys.stderr)
                    for s in scanners:
                        # a scan that fails must not leave an earlier run's file to be read
                        outs[s.label].unlink(missing_ok=True)
                        scans[s.label].add(_scan(s, path, outs[s.label]), s.env)
                    duck.add([sys.executable, "-c", DUCKDB, str(path), DUCKDB_OPTIONS[kind]])
                    line.add([sys.executable, "-c", ORJSON, str(path), kind])
                for s in scanners:
                    if not (scans[s.label].failed or outs[s.label].is_file()):
                        scans[s.label].failed = "failed (no `--json` written)"
                    done = not scans[s.label].failed
                    json_mb = outs[s.label].stat().st_size / 1e6 if done else 0.0
                    label = s.label if labelled else None
                    print(_row(mb, label, scans[s.label], json_mb, duck, line), flush=True)
                if labelled:
                    first = scanners[0].label
                    for s in scanners[1:]:
                        if scans[first].failed or scans[s.label].failed:
                            same = "not compared (a scan failed)"
                        elif _digest(outs[first]) == _digest(outs[s.label]):
                            same = "byte-identical"
                        else:
                            same = "different (compare the files --keep-json kept)"
                        identical.append(f"- {kind} {mb:,.0f} MB, `{s.label}` vs `{first}`: {same}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if identical:
        print("\n`--json` of each tree against the first's:\n" + "\n".join(identical))
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end", flush=True)


if __name__ == "__main__":
    main()
