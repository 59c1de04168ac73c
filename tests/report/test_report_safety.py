"""Model output is untrusted: the report escapes it, loads nothing, and leaks no secret."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner

from forensics.cli import cli

PAYLOADS = ["<script>alert(1)</script>", "<img src=x onerror=alert(2)>", "</textarea><b>x</b>"]
KEY = "sk-proj-AbCdEf1234567890SECRETsecret"


def _hostile_log(tmp_path):
    name = tmp_path / "<script>alert(9)<\\script>.log"
    lines = ["Running task 1", json.dumps({"role": "system", "content": "policy"})]
    for p in PAYLOADS:
        lines.append(json.dumps({"role": "user", "content": f"<think>{p}</think> {p} {KEY}"}))
        lines.append(
            json.dumps(
                {
                    "content": f"<think>\nI will {p} Authorization: Bearer abcdefghijklmnop1234",
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {
                                "name": "lookup",
                                "arguments": json.dumps({"q": p, "api_key": KEY}),
                            },
                        }
                    ],
                }
            )
        )
    lines.append(f"❌ task_id=1 {{'error': 'boom {PAYLOADS[0]} {KEY}'}}")
    name.write_text("\n".join(lines) + "\n")
    return name


def test_html_escapes_payloads_and_loads_nothing(tmp_path):
    log = _hostile_log(tmp_path)
    res = CliRunner().invoke(
        cli, ["scan", str(log), "-o", str(tmp_path / "out"), "--json", str(tmp_path / "r.json")]
    )
    assert res.exit_code == 1, res.output
    html = (tmp_path / "out" / "report.html").read_text()
    for p in PAYLOADS:
        assert p not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # Only the report's own two: the JSON data island and the hashed explorer script.
    assert html.lower().count("<script") == 2
    # No tag carries the handler (the text survives only escaped, as &lt;… or JSON \u003c…).
    assert not re.search(r"<[^>]*onerror", html)
    # Nothing is fetched: no external URLs in src/href, and a CSP that forbids it anyway.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "default-src 'none'" in html


def test_secrets_redacted_in_every_output(tmp_path):
    log = _hostile_log(tmp_path)
    CliRunner().invoke(
        cli, ["scan", str(log), "-o", str(tmp_path / "out"), "--json", str(tmp_path / "r.json")]
    )
    for path in (tmp_path / "out" / "report.html", tmp_path / "r.json"):
        text = path.read_text()
        assert "SECRETsecret" not in text
        assert "abcdefghijklmnop1234" not in text
        assert "***REDACTED-" in text


def test_secret_in_a_file_name_reaches_no_output(tmp_path):
    """Paths and run ids derive from file names: a key pasted into one is masked too."""
    log = _hostile_log(tmp_path).rename(tmp_path / f"run-{KEY}.log")
    out = tmp_path / "out"
    res = CliRunner().invoke(
        cli,
        [
            "scan",
            str(log),
            "-o",
            str(out),
            "--json",
            str(tmp_path / "r.json"),
            "--md",
            str(tmp_path / "r.md"),
            "--sarif",
            str(tmp_path / "r.sarif"),
        ],
    )
    assert res.exit_code == 1, res.output
    for path in (out / "report.html", tmp_path / "r.json", tmp_path / "r.md", tmp_path / "r.sarif"):
        assert "SECRETsecret" not in path.read_text(), path.name
    assert "SECRETsecret" not in res.output
