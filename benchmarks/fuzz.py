"""Deep fuzz run of the three promises: never abort, never lose a record silently, never leak.

The suite (tests/robustness/test_robustness.py) checks these properties on two mutated inputs
per format (and the empty file of each) so that it stays fast; this is the deep run: the same
seeds and mutations (tests/hostile.py), with secrets planted in every string of every seed
first, for as many inputs as you give it. Every input is scanned through the command line into
every output; the run counts what broke instead of stopping at the first failure, and prints the
figures the README's reliability section quotes. Exit status 1 when anything broke.

    python benchmarks/fuzz.py --examples 300          # per format; about 1 s per input
    python benchmarks/fuzz.py --examples 50 --seed 7 --keep failures/
    python benchmarks/fuzz.py --examples 20 --formats har litellm
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent / "tests" / "robustness"))

import forensics

from conftest import run_cli
from hostile import BUG, SECRETS, SEEDS, mutation, planted
from test_robustness import unaccounted


def _intact_secrets(data: bytes) -> list[tuple[str, str]]:
    """Secrets whose every planted copy survived the mutation whole, standing as a token (no
    letter or digit glued to it): their bodies must be masked wherever they appear. A body
    whose copy was cut or flipped by the mutation is no longer a secret shape: left out."""
    text = data.decode("utf-8", "replace")
    out = []
    for shape, (secret, body) in SECRETS.items():
        token = r"(?:^|[^A-Za-z0-9])" + re.escape(secret) + r"(?=[^A-Za-z0-9]|$)"
        copies = len(re.findall(token, text))
        if copies and copies == text.count(body):
            out.append((shape, body))
    return out


def fuzz(fmt: str, examples: int, seed_value: int, keep: Path | None, counts: dict) -> None:
    raw = planted(SEEDS[fmt].read_bytes())

    @seed(seed_value)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        mutated = data.draw(mutation(raw))
        counts["inputs"] += 1
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            path = work / SEEDS[fmt].name
            path.write_bytes(mutated)
            problems = []
            code, out, err = run_cli(
                "scan", str(path), "-o", str(work / "out"), "--json", str(work / "r.json"),
                "--md", str(work / "r.md"), "--sarif", str(work / "r.sarif"),
                "--junit", str(work / "r.xml"), "--github",
            )  # fmt: skip
            if code not in (0, 1) or "Traceback" in out + err or "internal error" in err:
                problems.append(("crash", f"exit {code}: {err.strip()[-300:]}"))
            else:
                try:
                    lost = unaccounted(path, fmt, forensics.scan([str(path)]))
                except Exception as exc:  # counted, so one input can not end the run
                    problems.append(("crash", f"scan() raised {type(exc).__name__}: {exc}"))
                    lost = []
                if lost:
                    problems.append(("silent loss", ", ".join(lost[:5])))
                report = json.loads((work / "r.json").read_text())
                bugs = [r["reason"] for r in report["rejects"] if BUG in r["reason"]]
                if bugs:  # a reader failed on the input: its record was lost to a bug
                    problems.append(("bug reject", bugs[0][:300]))
                written = [out, err] + [
                    f.read_text(errors="replace") for f in work.rglob("*") if f.is_file()
                    if f != path
                ]  # fmt: skip
                for shape, body in _intact_secrets(mutated):
                    if any(body in text for text in written):
                        problems.append(("leak", shape))
            for kind, detail in problems:
                counts[kind] += 1
                counts["examples"].append({"format": fmt, "kind": kind, "detail": detail})
                if keep is not None:
                    keep.mkdir(parents=True, exist_ok=True)
                    n = len(counts["examples"])
                    shutil.copy(path, keep / f"{n:04d}-{kind.replace(' ', '_')}-{path.name}")

    run()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100, help="inputs per format")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--formats", nargs="*", default=sorted(SEEDS))
    parser.add_argument("--keep", type=Path, help="copy failing inputs here")
    args = parser.parse_args()
    counts: dict = {
        "inputs": 0, "crash": 0, "silent loss": 0, "bug reject": 0, "leak": 0, "examples": [],
    }  # fmt: skip
    started = time.perf_counter()
    for fmt in args.formats:
        before = counts["inputs"]
        fuzz(fmt, args.examples, args.seed, args.keep, counts)
        print(f"{fmt:<22} {counts['inputs'] - before:>6} inputs", flush=True)
    seconds = time.perf_counter() - started
    summary = {k: v for k, v in counts.items() if k != "examples"} | {"seconds": round(seconds)}
    print(json.dumps(summary))
    for example in counts["examples"][:20]:
        print(json.dumps(example))
    sys.exit(1 if counts["examples"] else 0)


if __name__ == "__main__":
    main()
