"""Hostile inputs for the robustness properties: seeds of every format, mutations, secrets.

Shared by robustness/test_robustness.py (bounded, fixed seed, in CI) and benchmarks/fuzz.py (long
runs). A mutation works at byte level (truncate, flip, insert, BOM, CRLF, NUL, invalid UTF-8,
gzip and gzip damage) or at field level (a value of a parsed record replaced by a wrong type,
a huge integer, NaN, deep nesting, a lone surrogate), and trailing data after a document.
"""

from __future__ import annotations

import gzip
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from forensics.ingest import FORMATS
from forensics.ingest.parse import files, jsonwalk

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SAMPLES = ROOT / "sample_logs"

# One small real or realistic file of every format the scanner reads, by seed label: each
# format declares its seeds (ingest.registry.FormatSpec.seeds, paths from the repository root).
SEEDS: dict[str, Path] = {
    label: ROOT / path for spec in FORMATS for label, path in sorted(spec.seeds.items())
}

# Seeds whose records are lines (one JSON value per line), for the accounting invariant.
LINE_FORMATS = {
    "gemini_jsonl",
    "capture_jsonl",
    "capture_batch",
    "litellm",
    "sharegpt",
    "atropos",
}
# Seeds whose records are the elements of a top-level array.
ARRAY_FORMATS = {"tau_bench_results", "tau_bench_react"}
# HTTP cassettes: every interaction is a turn source or a reject.
CASSETTE_FORMATS = {"cassette_yaml", "cassette_json", "cassette_bedrock_stream"}

HUGE = 2**70
# What a reject says when a reader failed: a hostile input must never make one.
BUG = "this is a bug in forensics"
# An integer longer than Python converts (sys.int_max_str_digits, 4,300 digits by default): JSON
# all the same, so a reader must reject the record holding it, not fail on the file.
HUGE_DIGITS = "9" * 5000
HUGE_DIGITS_TOKEN = "@@huge-digits@@"
DEEP = 3000
# Stands in for a value nested DEEP levels: spliced in as text after dumping, since neither
# json.dumps nor a recursive copy can build it inside a test's call stack.
DEEP_TOKEN = "@@deep-nesting@@"
DEEP_TEXT = "[" * DEEP + "]" * DEEP


def deep_value() -> str:
    return DEEP_TOKEN


WRONG_VALUES = st.sampled_from(
    [
        True,
        False,
        None,
        0,
        -1,
        HUGE,
        -HUGE,
        1.5,
        float("nan"),
        float("inf"),
        "",
        "\ud800",
        "x\udfffy",
        "\x00\x1b[31m\u202e",
        [],
        [1, "a", None],
        {},
        {"role": True, "content": HUGE},
        "<script>alert(1)</script>",
        HUGE_DIGITS_TOKEN,
    ]
)


def paths_of(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside a parsed JSON document (bounded, for sampling)."""
    out = [prefix]
    if len(out) > 5000:
        return out
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths_of(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += paths_of(v, (*prefix, i))
    return out


def replaced(doc: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {k: (replaced(v, rest, new) if k == head else v) for k, v in doc.items()}
    return [replaced(v, rest, new) if i == head else v for i, v in enumerate(doc)]


def dumps(value: Any) -> str:
    # allow_nan: NaN and Infinity are what some Python writers emit; a reader must cope.
    text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    return text.replace(json.dumps(DEEP_TOKEN), DEEP_TEXT).replace(
        json.dumps(HUGE_DIGITS_TOKEN), HUGE_DIGITS
    )


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


@st.composite
def field_mutation(draw: st.DrawFn, raw: bytes) -> bytes:
    """One value inside one record replaced by a hostile one; the rest of the file as it was."""
    text = raw.decode("utf-8")
    lines = text.split("\n")
    parsed = []
    for i, line in enumerate(lines):
        try:
            parsed.append((i, json.loads(line)))
        except ValueError:
            continue
    if parsed and len(parsed) > 1:  # JSONL: mutate one line
        i, doc = draw(st.sampled_from(parsed))
        path = draw(st.sampled_from(paths_of(doc)))
        new = deep_value() if draw(st.booleans()) and draw(st.booleans()) else draw(WRONG_VALUES)
        lines[i] = dumps(replaced(doc, path, new))
        return _encode("\n".join(lines))
    try:
        doc = json.loads(text)
    except ValueError:
        # Text logs and SSE: a hostile value spliced into one line.
        i = draw(st.integers(0, len(lines) - 1))
        lines[i] = lines[i] + dumps(draw(WRONG_VALUES))
        return _encode("\n".join(lines))
    path = draw(st.sampled_from(paths_of(doc)))
    new = deep_value() if draw(st.integers(0, 5)) == 0 else draw(WRONG_VALUES)
    out = dumps(replaced(doc, path, new))
    if draw(st.integers(0, 4)) == 0:  # trailing data: a second document, or junk
        out += draw(st.sampled_from(["\n" + out, "garbage", "\n{}", "]"]))
    return _encode(out)


@st.composite
def byte_mutation(draw: st.DrawFn, raw: bytes) -> bytes:
    kind = draw(
        st.sampled_from(
            ["truncate", "flip", "insert", "bom", "crlf", "nul", "utf8", "gzip", "gzip-cut"]
        )
    )
    pos = draw(st.integers(0, max(0, len(raw) - 1)))
    if kind == "truncate":
        return raw[:pos]
    if kind == "flip":
        return raw[:pos] + bytes([raw[pos] ^ draw(st.integers(1, 255))]) + raw[pos + 1 :]
    if kind == "insert":
        return raw[:pos] + draw(st.binary(min_size=1, max_size=16)) + raw[pos:]
    if kind == "bom":
        return b"\xef\xbb\xbf" + raw
    if kind == "crlf":
        return raw.replace(b"\n", b"\r\n")
    if kind == "nul":
        return raw[:pos] + b"\x00" + raw[pos:]
    if kind == "utf8":
        return raw[:pos] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"])) + raw[pos:]
    packed = gzip.compress(raw, mtime=0)
    if kind == "gzip":
        return packed
    cut = draw(st.integers(10, max(10, len(packed) - 1)))
    return packed[:cut]


def _members(raw: bytes) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        return [(info.filename, archive.read(info)) for info in archive.infolist()]


def _zipped(members: list[tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            archive.writestr(zipfile.ZipInfo(name, date_time=(2025, 1, 1, 0, 0, 0)), data)
    return out.getvalue()


@st.composite
def member_mutation(draw: st.DrawFn, raw: bytes) -> bytes:
    """A ZIP container (Inspect .eval) with one member mutated, rezipped whole."""
    members = _members(raw)
    i = draw(st.integers(0, len(members) - 1))
    name, data = members[i]
    members[i] = (name, draw(st.one_of(byte_mutation(data), field_mutation(data))))
    return _zipped(members)


def mutation(raw: bytes) -> st.SearchStrategy[bytes]:
    if raw.startswith(b"PK\x03\x04"):
        return st.one_of(byte_mutation(raw), member_mutation(raw))
    return st.one_of(byte_mutation(raw), field_mutation(raw))


# --- secrets ----------------------------------------------------------------------------------

# Each shape the redaction promises, with the part that must never reach an output.
SECRETS: dict[str, tuple[str, str]] = {
    "openai": ("sk-proj-Qz7Lk2Vb9Xw4Rt6Yp1Nm8Hc3Jd5Fg0Sa", "Qz7Lk2Vb9Xw4Rt6Yp1Nm8Hc3"),
    "anthropic": ("sk-ant-api03-Wq2Er4Ty6Ui8Op0As2Df4Gh6Jk8Lz", "Wq2Er4Ty6Ui8Op0As2Df4"),
    "after_underscore": ("OPENAI_sk-Mn3Bv5Cx7Za9Sd1Fg3Hj5Kl7", "Mn3Bv5Cx7Za9Sd1Fg3Hj5"),
    "google": ("AIzaSyBx4Kq9Lm2Np7Rs1Tv6Wx3Yz8Ab5Cd0Ef2G", "Bx4Kq9Lm2Np7Rs1Tv6Wx3"),
    "google_query": (
        "https://api.example.test/v1/models/m:gen?key=Pk8Jh6Gf4Ds2Aq1Ww3Ee5",
        "Pk8Jh6Gf4Ds2Aq1Ww3Ee5",
    ),
    "bearer": ("Authorization: Bearer Tk3Ln5Mp7Qr9St1Uv3Wx5Yz7", "Tk3Ln5Mp7Qr9St1Uv3Wx5"),
    "basic": ("Authorization: Basic YWxpY2U6czNjcjN0UGFzc3dvcmQ=", "YWxpY2U6czNjcjN0UGFzc3dvcmQ"),
    "x_api_key": ("x-api-key: Xk2Ak4Pi6Ke8Yv0Al2Ue4Zz", "Xk2Ak4Pi6Ke8Yv0Al2Ue4Zz"),
    "huggingface": ("hf_Hq2Wd4Ef6Rg8Th0Yj2Uk4Il6Om8Pn0Qb2", "Hq2Wd4Ef6Rg8Th0Yj2Uk4Il6"),
    "aws_key_id": ("AKIAZ7Q3W5E7R9T1Y3U5", "AKIAZ7Q3W5E7R9T1Y3U5"),
    "aws_secret": (
        "aws_secret_access_key=Sa8Df6Gh4Jk2Lq0Wz8Xc6Vb4Nm2Aq0Sw8De6Fr4",
        "Sa8Df6Gh4Jk2Lq0Wz8Xc6Vb4",
    ),
    "github": ("ghp_Gh1Ij2Kl3Mn4Op5Qr6St7Uv8Wx9Yz0Ab1Cd2", "Gh1Ij2Kl3Mn4Op5Qr6St7Uv8"),
    "github_pat": ("github_pat_11ABCDEFG0Pq9Rs8Tu7Vw6Xy5Za4Bc3De2", "11ABCDEFG0Pq9Rs8Tu7Vw6"),
    "slack": ("xoxb-1234567890-Sl4Ck6To8Ke0Nx2Yz", "Sl4Ck6To8Ke0Nx2Yz"),
    "jwt": (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZ2VudC0xMjM0In0.Jw7Tt9Si1Gn3At5Ur7Ex9",
        "eyJzdWIiOiJhZ2VudC0xMjM0In0",
    ),
    "userinfo": ("https://alice:Pw9Xx7Cc5Vv3@proxy.example.test/v1", "Pw9Xx7Cc5Vv3"),
    "token_query": ("https://x.example.test/cb?access_token=At6Qq4Ww2Ee0Rr8", "At6Qq4Ww2Ee0Rr8"),
    # Shapes masked since issue 24 (gitleaks' rules and forensics' own); one line each, so a
    # text line that gets one appended stays one line.
    "pem_encrypted": (
        "-----BEGIN RSA PRIVATE KEY----- Proc-Type: 4,ENCRYPTED DEK-Info: AES-128-CBC,"
        "3F17F5316E2BAC89 Mh4Kq8Zp2Lw6Nr0Tv5Xb9Cd3Fg7Hj1Km -----END RSA PRIVATE KEY-----",
        "Mh4Kq8Zp2Lw6Nr0Tv5Xb9Cd3",
    ),
    "pgp_private": (
        "-----BEGIN PGP PRIVATE KEY BLOCK----- Version: GnuPG v2 lQOYBGXk3mMBCADm7Pq2Rs4Tu6Vw8Xy0"
        " =Zx9q -----END PGP PRIVATE KEY BLOCK-----",
        "lQOYBGXk3mMBCADm7Pq2Rs4",
    ),
    "aws_sts_secret": (
        '"SecretAccessKey": "Wd3Fg5Hj7Kl9Zx1Cv3Bn5Mq7Ew9Rt1Yu3Io5Pa7"',
        "Wd3Fg5Hj7Kl9Zx1Cv3Bn5Mq7",
    ),
    "aws_sts_session": (
        "SessionToken=IQoJb3JpZ2luX2VjEJr2Tg4Hk6Lm8Np0Qr2St4Uv6Wx8",
        "IQoJb3JpZ2luX2VjEJr2Tg4H",
    ),
    "google_oauth": ("ya29.a0Rf3Tg5Hj7Kl9Zx1Cv3Bn5Mq7Ew9Rt1Yu3", "Rf3Tg5Hj7Kl9Zx1Cv3Bn5Mq7"),
    "google_refresh": ("1//0gTq3Wv5Xz7Bn9Mk1Lp3Jr5Hs7Fd9Ga1", "gTq3Wv5Xz7Bn9Mk1Lp3Jr5"),
    "slack_app": (
        "xapp-1-A05R3T7Y9U1-5171572773297-d4f6a8b0c2e4f6a8b0c2d4e6f8a0b1c2",
        "d4f6a8b0c2e4f6a8b0c2d4e6",
    ),
    "slack_webhook": (
        "https://hooks.slack.com/services/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",
        "Xk2Vb4Nm6Lp8Qr0Ts2Uw4Yz6",
    ),
    "cookie": ("Cookie: sid=Ck7Jh5Gf3Ds1Aq9Wz7Xe5Rc3; theme=dark", "Ck7Jh5Gf3Ds1Aq9Wz7Xe5Rc3"),
    "stripe": ("sk_live_51Hq8Wz6Xe4Rc2Vb0Nm8Lk6Jh4Gf2", "51Hq8Wz6Xe4Rc2Vb0Nm8Lk6"),
    "groq": ("gsk_Gq4Rw6Ty8Ui0Op2As4Df6Gh8Jk0Lz2Xc4Vb6Nm8", "Gq4Rw6Ty8Ui0Op2As4Df6Gh8"),
    "xai": ("xai-Xa1Sd3Fg5Hj7Kl9Zx1Cv3Bn5Mq7Ew9Rt1", "Xa1Sd3Fg5Hj7Kl9Zx1Cv3Bn5"),
    "oauth_code": (
        "https://app.example.test/cb?code=4/0Oc5Vb7Nm9Lk1Jh3Gf5Ds7Aq9&state=s1",
        "0Oc5Vb7Nm9Lk1Jh3Gf5Ds7Aq9",
    ),
    "gcp_key_id": (
        '"private_key_id": "9c1e7b3d4f6a8b0c2d4e6f8a0b1c2d3e4f5a6b7c"',
        "9c1e7b3d4f6a8b0c2d4e6f8a",
    ),
}


def plant(value: Any, counter: list[int]) -> Any:
    """Every string of a parsed document with a secret appended (the shapes in turn)."""
    if isinstance(value, str):
        counter[0] += 1
        shapes = list(SECRETS.values())
        return f"{value} {shapes[counter[0] % len(shapes)][0]}"
    if isinstance(value, dict):
        return {k: plant(v, counter) for k, v in value.items()}
    if isinstance(value, list):
        return [plant(v, counter) for v in value]
    return value


def planted(raw: bytes) -> bytes:
    """The seed with secrets in every string of every record (JSON, JSONL, SSE or text)."""
    counter = [0]
    if raw.startswith(b"PK\x03\x04"):  # a ZIP container: every member planted
        return _zipped([(name, planted(data)) for name, data in _members(raw)])
    text = raw.decode("utf-8")
    try:
        return _encode(dumps(plant(json.loads(text), counter)))
    except ValueError:
        pass
    out = []
    for line in text.split("\n"):
        prefix, _, rest = line.partition("data: ") if line.startswith("data: ") else ("", "", line)
        marker = "data: " if line.startswith("data: ") else ""
        try:
            out.append(prefix + marker + dumps(plant(json.loads(rest), counter)))
        except ValueError:
            shapes = list(SECRETS.values())
            counter[0] += 1
            out.append(f"{line} {shapes[counter[0] % len(shapes)][0]}" if line else line)
    return _encode("\n".join(out))


def cassette_lines(path: Path) -> set[int]:
    """Lines where the interactions of a cassette start, when the file parses whole (a file
    that does not is checked by the reader's own cut, like the other formats)."""
    try:
        text = files.read_text(path)
        if text.lstrip("\ufeff \t\r\n").startswith("{"):
            doc = json.loads(text)
            key = next(k for k in ("interactions", "http_interactions") if k in doc)
            if not isinstance(doc[key], list):
                return set()
            line_of = jsonwalk.LineCounter(text)
            start = text.index("[", text.index(f'"{key}"'))
            return {line_of(pos) for pos, _, _ in jsonwalk.elements(text, start)}
        root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except Exception:
        return set()
    if not isinstance(root, yaml.MappingNode):
        return set()
    for key, value in root.value:
        if key.value in ("interactions", "http_interactions") and isinstance(
            value, yaml.SequenceNode
        ):
            return {node.start_mark.line + 1 for node in value.value}
    return set()
