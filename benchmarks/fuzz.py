"""Deep fuzz run of the promises: never abort, never hang, never lose a record silently, never leak.

The suite (tests/robustness/) checks these properties on a few inputs per format and attack
class so that it stays fast; this is the deep run: the same seeds, with secrets planted in
every string of every seed first, through the byte and field mutations (tests/hostile.py) and
the attack classes the issue-24 audit found (tests/robustness/attacks.py: long crafted lines,
integers past the 4,300-digit limit, secrets at every cut point, YAML alias graphs, per-file
bombs, hostile file and member names), for as many inputs as you give it.

Every input is scanned through the command line into every output in a worker process, timed:
a scan that takes more than 10 s of CPU per MB of input (10 s at least) is a hang; one that
does not answer at all is stopped and the worker replaced. The run counts what broke instead
of stopping at the first failure and prints the figures the README quotes, by class. Exit
status 1 when anything broke.

    python benchmarks/fuzz.py --examples 5 --sites           # every format, class and regex
    python benchmarks/fuzz.py --examples 300 --classes mutation
    python benchmarks/fuzz.py --examples 50 --seed 7 --keep failures/
    python benchmarks/fuzz.py --examples 20 --formats har litellm --classes bomb secret
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(1, str(ROOT / "tests" / "robustness"))

from attacks import (  # noqa: E402
    BOMB_BUDGET_MB,
    CLASSES,
    Attack,
    applicable,
    file_name,
    leak_windows,
    regex_sites,
    site_attack,
    site_seeds,
)

from hostile import BUG, SECRETS, SEEDS, mutation, planted  # noqa: E402

# Seconds a scan may take per MB of input before it counts as a hang, and at least.
SECONDS_PER_MB = 10.0
MIN_SECONDS = 10.0
KINDS = ("crash", "hang", "silent loss", "bug reject", "leak")


# --- the worker: one process that scans, replaced when a scan hangs -----------------------------


def _serve(conn: Any) -> None:
    """Scan each input sent (path, format, flags): the CLI into every output, then the
    accounting of its records; answer with what happened."""
    sys.path.insert(0, str(ROOT / "tests"))
    sys.path.insert(1, str(ROOT / "tests" / "robustness"))
    import forensics
    from forensics.config import Settings
    from forensics.limits import MIB, Limits

    from conftest import run_cli
    from test_robustness import unaccounted

    while True:
        job = conn.recv()
        if job is None:
            return
        path, fmt, budget_mb = Path(job[0]), job[1], job[2]
        flags = ["--max-decompressed-mb", str(budget_mb)] if budget_mb else []
        limits = Limits(max_decompressed_bytes=budget_mb * MIB) if budget_mb else Limits()
        work = path.parent.parent
        started = time.process_time()
        code, out, err = run_cli(
            "scan", str(path), "-o", str(work / "out"), "--json", str(work / "r.json"),
            "--md", str(work / "r.md"), "--sarif", str(work / "r.sarif"),
            "--junit", str(work / "r.xml"), "--github", "--parquet", str(work / "tables"),
            *flags,
        )  # fmt: skip
        seconds = time.process_time() - started  # CPU: other work on the machine not counted
        lost: list[str] = []
        reasons: list[str] = []
        failure = None
        if code in (0, 1):
            try:
                result = forensics.scan([str(path)], settings=Settings(limits=limits))
                if not result.files:  # skipped, and listed with its reason: not silent
                    lost = [] if result.skipped else ["the file is neither read nor skipped"]
                else:
                    lost = unaccounted(path, fmt, result) + _lost_members(path, result)
                reasons = list(result.rejects["reason"])
            except Exception as exc:  # counted, so one input can not end the run
                failure = f"scan() raised {type(exc).__name__}: {exc}"
        conn.send((code, out, err, seconds, lost, reasons, failure))


def _lost_members(path: Path, result: Any) -> list[str]:
    """An .eval: every sample member is trajectories or a reject (a bad member costs only
    itself); the whole file as one reject accounts for all."""
    if not path.name.endswith(".eval"):
        return []
    import zipfile

    rejects = result.rejects
    if rejects.filter(rejects["source_path"].str.contains("!").not_()).height:
        return []  # the archive as a whole is a reject
    try:
        with zipfile.ZipFile(path) as archive:
            names = [i.filename for i in archive.infolist() if i.filename.startswith("samples/")]
    except Exception:
        return []
    seen = " ".join(
        [*result.trajectories["source_path"], *rejects["source_path"], *rejects["reason"]]
    )
    return [f"member {n}" for n in names if n not in seen]


class Worker:
    def __init__(self) -> None:
        self._start()

    def _start(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child,), daemon=True)
        self.proc.start()

    def scan(self, path: Path, fmt: str, budget_mb: int | None, timeout: float) -> tuple | None:
        """What the scan gave, or None when it ran past timeout (the worker is replaced).
        budget_mb: --max-decompressed-mb for the scan, None for the default."""
        self.conn.send((str(path), fmt, budget_mb))
        # Wall time is generous (a loaded machine, the worker's start-up, the accounting scan);
        # the hang is judged on the CPU time the worker reports.
        if self.conn.poll(6 * timeout + 60):
            return self.conn.recv()
        self.proc.kill()
        self.proc.join()
        self._start()
        return None

    def close(self) -> None:
        self.conn.send(None)
        self.proc.join(10)


# --- the checks ------------------------------------------------------------------------------


def _intact_secrets(data: bytes) -> list[tuple[str, str]]:
    """Secrets whose every planted copy survived the mutation whole, standing as a token (no
    letter or digit glued to it): their bodies must be masked wherever they appear. A body
    whose copy was cut or flipped by the mutation is no longer a secret shape: left out."""
    text = data.decode("utf-8", "replace")
    out = []
    for shape, (secret, body) in SECRETS.items():
        token = r"(?:^|[^A-Za-z0-9])" + re.escape(secret) + r"(?=[^A-Za-z0-9]|$)"
        copies = len(re.findall(token, text))
        # No piece of it elsewhere either: a copy the mutation cut in two leaves fragments
        # that are no longer a secret, and the leak check looks for pieces of 12 characters.
        width = min(12, len(body))
        pieces = {body[i : i + width] for i in range(len(body) - width + 1)}
        if copies and all(text.count(piece) == copies for piece in pieces):
            out.append((shape, body))
    return out


def _leaked(windows: set[str], texts: list[str]) -> bool:
    """Any 12 characters of a secret (an excerpt or an error text that cut it) in an output."""
    return any(w in text for text in texts for w in windows)


def _outputs(work: Path, path: Path, out: str, err: str) -> list[str]:
    texts = [out, err]
    for f in work.rglob("*"):
        if not f.is_file() or f == path:
            continue
        if f.suffix == ".parquet":
            import pyarrow.parquet as pq

            texts.append(str(pq.read_table(f).to_pylist()))
        else:
            texts.append(f.read_text(errors="replace"))
    return texts


def check(worker: Worker, fmt: str, attack: Attack, keep: Path | None, counts: dict) -> None:
    counts["inputs"] += 1
    counts["by class"][attack.kind] += 1
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "in").mkdir()
        path = work / "in" / file_name(attack, SEEDS[fmt].name)
        path.write_bytes(attack.data)
        budget = BOMB_BUDGET_MB if attack.expect_reject else None
        limit = max(MIN_SECONDS, SECONDS_PER_MB * len(attack.data) / 1e6)
        answer = worker.scan(path, fmt, budget, limit)
        problems = []
        if answer is None:
            problems.append(("hang", f"no answer in {6 * limit + 60:.0f} s"))
        else:
            code, out, err, seconds, lost, reasons, failure = answer
            if seconds > limit:
                problems.append(("hang", f"{seconds:.1f} s of CPU for {len(attack.data):,} bytes"))
            if code not in (0, 1) or "Traceback" in out + err or "internal error" in err:
                problems.append(("crash", f"exit {code}: {err.strip()[-300:]}"))
            elif failure:
                problems.append(("crash", failure))
            if lost:
                problems.append(("silent loss", ", ".join(lost[:5])))
            expected = attack.expect_reject
            if expected and code in (0, 1) and not any(expected in r for r in reasons):
                problems.append(("silent loss", f"bomb without a reject naming {expected}"))
            bugs = [r for r in reasons if BUG in r]
            if bugs:  # a reader failed on the input: its record was lost to a bug
                problems.append(("bug reject", bugs[0][:300]))
            written = _outputs(work, path, out, err)
            secrets = set(attack.secrets) | set(_intact_secrets(attack.data))
            for shape, body in sorted(secrets):
                if _leaked(leak_windows(shape, body, attack.data), written):
                    problems.append(("leak", shape))
        for kind, detail in problems:
            counts[kind] += 1
            counts["failed"][attack.kind] += 1
            if attack.target:
                detail = f"{detail} ({attack.target})"
            counts["examples"].append(
                {"format": fmt, "class": attack.kind, "kind": kind, "detail": detail}
            )
            if keep is not None:
                keep.mkdir(parents=True, exist_ok=True)
                n = len(counts["examples"])
                label = f"{n:04d}-{kind.replace(' ', '_')}-{attack.kind.replace(' ', '_')}-{fmt}"
                target = keep / label
                target.mkdir(exist_ok=True)
                shutil.copy(path, target / os.fsencode(path.name).hex()[:200])
                (target / "case.json").write_text(
                    json.dumps(
                        {"format": fmt, "class": attack.kind, "kind": kind, "detail": detail,
                         "name": os.fsencode(path.name).decode("utf-8", "backslashreplace"),
                         "max_decompressed_mb": budget},
                        indent=1,
                    )
                )  # fmt: skip


def fuzz(
    worker: Worker,
    fmt: str,
    kind: str,
    examples: int,
    seed_value: int,
    keep: Path | None,
    counts: dict,
) -> None:
    raw = planted(SEEDS[fmt].read_bytes())
    if kind != "mutation" and not applicable(kind, raw):
        return

    @seed(seed_value)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        if kind == "mutation":
            attack = Attack("mutation", data.draw(mutation(raw)))
        else:
            attack = data.draw(CLASSES[kind](raw))
        check(worker, fmt, attack, keep, counts)

    run()


def sweep_sites(worker: Worker, formats: list[str], keep: Path | None, counts: dict) -> None:
    """Every module-level pattern once, on the seeds its module reads (or a text log and a
    capture): a line of 256 KiB per literal, each repeated after the others."""
    for site in regex_sites():
        for fmt in site_seeds(site):
            if fmt in formats:  # the seed as it is: what is looked for here is time
                check(worker, fmt, site_attack(site, SEEDS[fmt].read_bytes()), keep, counts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100, help="inputs per format and class")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--formats", nargs="*", default=sorted(SEEDS))
    parser.add_argument(
        "--classes",
        nargs="*",
        default=["mutation", *CLASSES],
        help=f"mutation (byte and field level) and any of: {', '.join(CLASSES)}",
    )
    parser.add_argument(
        "--sites",
        action="store_true",
        help="also every module-level pattern once, on the seeds its module reads",
    )
    parser.add_argument("--keep", type=Path, help="copy failing inputs here, one folder each")
    args = parser.parse_args()
    classes = [c.replace("_", " ") for c in args.classes]
    counts: dict = {"inputs": 0, **dict.fromkeys(KINDS, 0), "examples": []}
    counts["by class"], counts["failed"] = Counter(), Counter()
    started = time.perf_counter()
    worker = Worker()
    try:
        for fmt in args.formats:
            before = counts["inputs"]
            for kind in classes:
                fuzz(worker, fmt, kind, args.examples, args.seed, args.keep, counts)
            print(f"{fmt:<24} {counts['inputs'] - before:>6} inputs", flush=True)
        if args.sites:
            before = counts["inputs"]
            sweep_sites(worker, args.formats, args.keep, counts)
            print(f"{'regex sites':<24} {counts['inputs'] - before:>6} inputs", flush=True)
    finally:
        worker.close()
    seconds = time.perf_counter() - started
    summary = {k: counts[k] for k in ("inputs", *KINDS)} | {"seconds": round(seconds)}
    print(json.dumps(summary))
    print(json.dumps({"inputs by class": dict(counts["by class"]),
                      "failed by class": dict(counts["failed"])}))  # fmt: skip
    for example in counts["examples"][:30]:
        print(json.dumps(example))
    sys.exit(1 if counts["examples"] else 0)


if __name__ == "__main__":
    main()
