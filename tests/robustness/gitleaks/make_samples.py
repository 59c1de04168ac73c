"""Regenerate gitleaks_samples.json: true- and false-positive strings of gitleaks' own rule tests.

gitleaks generates config/gitleaks.toml from cmd/generate/config/rules/*.go, where each rule
function validates its regex against `tps` (strings it must find) and `fps` (strings it must
not). The literal ones are taken here, a few per rule, so tests/robustness/test_redact.py checks
the vendored rules as forensics compiles and runs them (RE2, keyword prefilter, entropy,
allowlists) against the project's own examples. Randomly generated samples (secrets.NewSecret)
have no literal and are skipped.

    python tests/robustness/gitleaks/make_samples.py /path/to/gitleaks-checkout

The checkout must be at the commit recorded in forensics/data/secrets/SOURCE.md.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

PER_RULE = 4
OUT = Path(__file__).with_name("gitleaks_samples.json")
# A Go string literal: interpreted ("…" with escapes) or raw (`…`).
_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"|`[^`]*`')
_RULE_ID = re.compile(r'RuleID:\s*"([^"]+)"')
# utils.GenerateSampleSecrets(identifier, secret) with a literal secret: gitleaks embeds it in
# some forty contexts; one of them (the Python assignment) is kept here.
_SAMPLE = re.compile(
    r'GenerateSampleSecrets\(\s*"([^"]*)"\s*,\s*(`[^`]*`|"(?:[^"\\\n]|\\.)*")\s*\)'
)


def _go_string(literal: str) -> str:
    if literal.startswith("`"):
        return literal[1:-1]
    # Go's interpreted escapes are JSON's plus a few; json.loads reads the common ones.
    body = literal[1:-1].replace("\\'", "'").replace("\\x60", "`")
    return json.loads(f'"{body}"')


def _list_literals(body: str, name: str) -> list[str]:
    """Literal strings of `name := []string{…}` / `name = append(name, …)` blocks that hold
    nothing but literals (a concatenation with a generated part is skipped)."""
    out: list[str] = []
    for m in re.finditer(rf"\b{name}\s*:?=\s*(?:\[\]string\{{|append\({name},)", body):
        depth, i = 1, m.end()
        start = i
        while i < len(body) and depth:
            c = body[i]
            if c in '`"':
                lit = _LITERAL.match(body, i)
                i = lit.end() if lit else i + 1
                continue
            depth += c in "{("
            depth -= c in "})"
            i += 1
        for line in body[start : i - 1].split("\n"):
            line = line.strip().rstrip(",")
            line = re.sub(r"\s*//.*$", "", line) if not line.startswith("`") else line
            parts = [p.strip() for p in line.split(" + ")]
            if parts and all(_LITERAL.fullmatch(p) for p in parts):
                try:
                    out.append("".join(_go_string(p) for p in parts))
                except ValueError:
                    continue
    return out


def main(checkout: Path) -> None:
    commit = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    samples = []
    for go in sorted((checkout / "cmd/generate/config/rules").glob("*.go")):
        text = go.read_text()
        for func in re.split(r"\nfunc ", text)[1:]:
            rule = _RULE_ID.search(func)
            if not rule:
                continue
            generated = [
                f'{m.group(1)}Token = "{_go_string(m.group(2))}"' for m in _SAMPLE.finditer(func)
            ]
            for s in generated[:PER_RULE]:
                samples.append({"rule": rule.group(1), "kind": "tps", "text": s, "file": go.name})
            for kind in ("tps", "fps"):
                found = [s for s in _list_literals(func, kind) if s.strip()]
                for s in found[:PER_RULE]:
                    samples.append(
                        {"rule": rule.group(1), "kind": kind, "text": s, "file": go.name}
                    )
    OUT.write_text(
        json.dumps(
            {
                "source": "https://github.com/gitleaks/gitleaks",
                "commit": commit,
                "path": "cmd/generate/config/rules/*.go",
                "licence": "MIT (forensics/data/secrets/LICENSE.gitleaks)",
                "samples": samples,
            },
            indent=1,
            ensure_ascii=False,
        )
        + "\n"
    )
    print(f"{len(samples)} samples of {len({s['rule'] for s in samples})} rules -> {OUT}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
