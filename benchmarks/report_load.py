"""How big the HTML report of a large tau-bench run is, and how long Chromium takes to open it.

    python benchmarks/report_load.py [--n 20000] [--dir /tmp/report-load] [--rounds 3]

Generates N tau-bench trajectories (real records from tests/data/realdata, MIT, Sierra,
repeated with new task ids and trials, the words of every message but the system prompt
shuffled per copy, so that no two trajectories repeat each other and the report compresses
like a real run's; every fourth one has an agent turn cut off inside an unclosed <think>, so
the page has findings to show), 1,000 per results file, scans them,
renders the report and opens it in headless Chromium (the test suite's DevTools client).
Prints the report's size, the scan and render times, and the load time: navigation start
until the explorer has rendered its first page of cards (the `data-ready-ms` the explorer
stamps), and until the turns, inflated after it, are in (`data-turns-ms`).
Same seed, same files; the report is rendered once and loaded `--rounds` times.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests" / "data" / "realdata" / "historical_gpt-4o-airline.first12.json"
PER_FILE = 1000


def generate(folder: Path, n: int) -> list[Path]:
    """n trajectories in results files of PER_FILE records; reuses files already there."""
    folder.mkdir(parents=True, exist_ok=True)
    records = json.loads(SOURCE.read_text(encoding="utf-8"))
    paths = []
    for start in range(0, n, PER_FILE):
        path = folder / f"results-{start // PER_FILE:03d}.json"
        paths.append(path)
        if path.exists():
            continue
        out = []
        for i in range(start, min(n, start + PER_FILE)):
            rec = json.loads(json.dumps(records[i % len(records)]))
            rec["task_id"], rec["trial"] = i // 4, i % 4
            rng = random.Random(i)
            for turn in rec["traj"]:
                if turn["role"] != "system" and isinstance(turn.get("content"), str):
                    words = turn["content"].split(" ")
                    rng.shuffle(words)
                    turn["content"] = " ".join(words)
            if i % 4 == 0:  # an agent turn cut off mid-reasoning: the page's evidence
                for turn in rec["traj"]:
                    if turn["role"] == "assistant" and not turn.get("tool_calls"):
                        turn["content"] = "<think>\nThe user wants " + "to check " * 150
                        rec["reward"] = 0.0
                        break
            out.append(rec)
        path.write_text(json.dumps(out), encoding="utf-8")
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/report-load"))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "report")]
    from test_report_browser import Browser, _chromium

    import forensics
    from forensics.report import model as report_model
    from forensics.report.render import html

    paths = generate(args.dir / "input", args.n)
    size_in = sum(p.stat().st_size for p in paths)
    t0 = time.perf_counter()
    result = forensics.scan([str(p) for p in paths])
    t1 = time.perf_counter()
    page = html.render(report_model.build(result, page=True))
    t2 = time.perf_counter()
    out = args.dir / "report.html"
    out.write_text(page, encoding="utf-8")
    print(
        f"input: {result.trajectories.height:,} trajectories, {result.turns.height:,} turns, "
        f"{result.findings.height:,} findings, {size_in / 1e6:.0f} MB in {len(paths)} files"
    )
    print(f"scan {t1 - t0:.1f} s, report model + render {t2 - t1:.1f} s")
    print(f"report: {out.stat().st_size / 1e6:.1f} MB")
    executable = _chromium()
    if executable is None:
        print("load: skipped (no chromium)")
        return
    times, turns_times = [], []
    for r in range(args.rounds):
        browser = Browser(executable, args.dir / f"profile-{r}")
        try:
            browser.open(out.as_uri())
            browser.ready(120)
            ready = int(browser.js("document.getElementById('explorer').dataset.readyMs"))
            deadline = time.monotonic() + 120
            turns = None  # a small report has its turns at once: no turnsMs
            while turns is None and time.monotonic() < deadline:
                turns = browser.js("document.getElementById('explorer').dataset.turnsMs || null")
                if browser.js("document.getElementById('explorer-data').dataset.encoding") is None:
                    turns = ready
                time.sleep(0.05)
            cards = browser.js("document.querySelectorAll('#x-list details.traj').length")
            problems = browser.problems()
        finally:
            browser.close()
        times.append(ready / 1000)
        turns_times.append(int(turns) / 1000 if turns is not None else float("nan"))
        print(
            f"load round {r + 1}: explorer ready {ready / 1000:.2f} s (turns in "
            f"{turns_times[-1]:.2f} s), {cards} cards, problems {problems}"
        )
    median = sorted(times)[len(times) // 2]
    turns_median = sorted(turns_times)[len(turns_times) // 2]
    print(f"load: explorer ready median {median:.2f} s, turns in {turns_median:.2f} s")


if __name__ == "__main__":
    main()
