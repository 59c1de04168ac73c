"""No secret reaches an output, whatever forensics cuts or decodes on the way (issue 24 item 4).

Readers cut reject excerpts and error texts to a few hundred characters; text tool calls are
decoded (JSON escapes, Python literals) after the redaction pass. Both are redacted where they
are made: a cut is made in redacted text (redact.clip), a decoded call is redacted once
decoded. A leak here is any eight characters in a row of a secret's body found in an output.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from forensics.check import textcalls
from forensics.ingest import jsonrecords
from forensics.ingest.records import Collector, excerpt
from forensics.redact import clip

from conftest import run_cli
from hostile import SECRETS, SEEDS

SHAPES = sorted(SECRETS)


def chunks(body: str, size: int = 8) -> set[str]:
    """The runs of `size` letters and digits of a secret's body: what no output may show (an
    escape, HTML or JSON, changes neither)."""
    runs = "".join(c if c.isalnum() else " " for c in body).split()
    return {run[i : i + size] for run in runs for i in range(len(run) - size + 1)}


def leaked(body: str, text: str) -> bool:
    return any(c in text for c in chunks(body))


FILLER = st.text(alphabet=" \n\t.,:;'\"{}[]()=&/-_abcdefghijklmnopqrstuvwxyz", max_size=300)


@settings(derandomize=True, max_examples=400, deadline=None)
@given(st.sampled_from(SHAPES), FILLER, FILLER, st.data())
def test_a_clip_masks_a_secret_across_either_cut(shape, before, after, data):
    """Every start and length: the secret is masked whole wherever the cuts fall, in it or
    around it (the redacted window reaches past both cuts)."""
    secret, body = SECRETS[shape]
    text = f"{before} {secret} {after}"  # a key glued to a word is part of the word
    assume(not leaked(body, before + after))
    start = data.draw(st.integers(0, len(text)), label="start")
    limit = data.draw(st.integers(1, 260), label="limit")
    out = clip(text, limit, start, ellipsis="…")
    assert not leaked(body, out)
    assert excerpt(text, start) == clip(text, 200, start)


@pytest.mark.parametrize("shape", SHAPES)
def test_a_reject_excerpt_cut_at_every_point_of_a_secret_shows_none_of_it(shape):
    """The excerpt of a rejected record is its first 200 characters: with the secret at every
    offset from the cut, none of it reaches the reject row."""
    secret, body = SECRETS[shape]
    collector = Collector()
    for cut in range(len(secret) + 1):
        line = "x" * (199 - cut) + " " + secret + " tail"
        collector.reject("f.jsonl", 1, "invalid JSON", line, "sharegpt")
        collector.reject("f.jsonl", 1, "invalid JSON", excerpt(line, 200 - cut + len(secret) // 2))
    for row in collector.reject_rows:
        assert not leaked(body, row["excerpt"]), row["excerpt"]


def test_a_document_broken_inside_a_private_key_shows_none_of_it():
    """A key pasted with raw line breaks breaks the JSON inside its body: the excerpt starts
    there, after the BEGIN line, and the body is still masked (found: whole PEM bodies)."""
    body = "MIIEowIBAAKCAQEAz8Kq2Lw6Nr0Tv5Xb9Cd3Fg7Hj1KmPq4Rs6Tu8Vw0Xy2Za4Bc6De8Fg"
    text = (
        '{"info": {"mini_version": "1.0"}, "note": "-----BEGIN RSA PRIVATE KEY-----\n'
        + "\n".join(body[i : i + 16] for i in range(0, len(body), 16))
        + '\n-----END RSA PRIVATE KEY-----"}'
    )
    collector = Collector()
    assert jsonrecords.document(collector, "t.json", text, "swe_agent", "not read") is None
    (row,) = collector.reject_rows
    assert row["excerpt"].startswith("***REDACTED-")
    assert not leaked(body, row["excerpt"])


@pytest.mark.parametrize(
    "message",
    [
        # tau-bench ReAct: the harness runs json.loads, which decodes \u002d
        'Action: {"name": "login", "arguments": {"key": "sk\\u002dproj-Qz7Lk2Vb9Xw4Rt6Yp1Nm8Hc3"}}',
        # a JSON action block
        '```json\n{"action": "login", "action_input": {"key": "ghp_Gh1Ij2Kl3Mn4Op5Qr6St7Uv8'
        'Wx9Yz0Ab1Cd2\\u0022x"}}\n```',
        # Gemma tool_code: Python's literal \x2d is a hyphen once evaluated
        '```tool_code\nprint(api.login(key="sk\\x2dproj-Qz7Lk2Vb9Xw4Rt6Yp1Nm8Hc3"))\n```',
        # a call that does not parse, shown from its start and cut at 500 characters
        'Action: {"name": "login", "arguments": {"pad": "' + "p" * 434 + " sk\\u002dproj-Qz7Lk2Vb"
        '9Xw4Rt6Yp1Nm8Hc3"',
    ],
)
def test_a_text_call_decoded_after_redaction_is_redacted(message):
    _, calls = textcalls.parse(message)
    shown = json.dumps(calls)
    for body in ("Qz7Lk2Vb9Xw4Rt6Yp1Nm8Hc3", "Gh1Ij2Kl3Mn4Op5Qr6St7Uv8"):
        assert not leaked(body, shown), shown


def _outputs(out: Path, stdout: str, stderr: str) -> dict[str, str]:
    texts = {"stdout": stdout, "stderr": stderr}
    for f in out.rglob("*"):
        if f.suffix in (".json", ".md", ".sarif", ".xml", ".html"):
            texts[str(f)] = f.read_text()
        elif f.suffix == ".parquet":
            texts[str(f)] = str(pq.read_table(f).to_pylist())
    con = duckdb.connect(str(out / "r.duckdb"), read_only=True)
    for (table,) in con.sql("select table_name from information_schema.tables").fetchall():
        texts[f"duckdb:{table}"] = str(con.sql(f'select * from "{table}"').fetchall())
    con.close()
    return texts


def test_secrets_cut_or_decoded_anywhere_reach_no_output(tmp_path):
    """One scan into every output: broken records whose 200-character excerpt cuts each secret
    shape at every point, text calls that decode escaped keys, every shape whole in a message,
    and keys in file names."""
    seed = SEEDS["sharegpt"].read_text().splitlines()[0]
    lines = [seed]
    head = '{"conversations": [{"from": "human", "value": "'
    for shape in SHAPES:
        secret, _ = SECRETS[shape]
        secret = secret.replace('"', "'")  # one JSON string: the record breaks after it
        for cut in range(len(secret) + 1):
            lines.append(head + "x" * (199 - len(head) - cut) + " " + secret + ' "broken}')
    calls = [
        'Action: {"name": "login", "arguments": {"key": "sk\\u002dproj-Qz7Lk2Vb9Xw4Rt6Yp1Nm8Hc3"}}',
        '```tool_code\nprint(api.login(key="gsk\\x5fGq4Rw6Ty8Ui0Op2As4Df6Gh8Jk0Lz2Xc4Vb6Nm8"))\n```',
    ]
    turns = [{"from": "human", "value": f"use {SECRETS[s][0]} please"} for s in SHAPES]
    turns += [{"from": "gpt", "value": call} for call in calls]
    lines.append(json.dumps({"conversations": turns}))
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "cuts.jsonl").write_text("\n".join(lines) + "\n")
    for shape in ("groq", "xai", "stripe"):
        (inputs / f"run-{SECRETS[shape][0]}.jsonl").write_text(seed + "\n")
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(
        "scan", str(inputs), "-o", str(out / "report"), "--json", str(out / "r.json"),
        "--md", str(out / "r.md"), "--sarif", str(out / "r.sarif"), "--junit", str(out / "r.xml"),
        "--github", "--db", str(out / "r.duckdb"), "--parquet", str(out / "parquet"),
    )  # fmt: skip
    assert code in (0, 1), stderr
    texts = _outputs(out, stdout, stderr)
    report = json.loads(texts[str(out / "r.json")])
    assert len(report["rejects"]) >= len(lines) - 2  # every broken record is a reject
    leaks = [
        (shape, where)
        for shape in SHAPES
        for where, text in texts.items()
        if leaked(SECRETS[shape][1], text)
    ]
    leaks += [
        (body, where)
        for body in ("Qz7Lk2Vb9Xw4Rt6Yp1Nm8Hc3", "Gq4Rw6Ty8Ui0Op2As4Df6Gh8")
        for where, text in texts.items()
        if leaked(body, text)
    ]
    assert leaks == []
