"""Attack classes the issue-24 audit found and hostile.mutation never tries.

Each class is a hypothesis strategy over a seed's bytes that returns an `Attack`: the input,
what its name should carry (a hostile file name), what it plants that must never reach an
output, and what a reject must say when the input is a bomb. Shared by test_attacks.py (one
small draw per class, in CI) and benchmarks/fuzz.py (as many as you like, with hangs timed).

- long crafted lines: a token a log-text regex reacts to (or a piece of the seed's own line),
  repeated into a line of 64 KiB to 1 MiB, spliced raw or as a JSON string value;
- integers past Python's 4,300-digit limit for int(str), as a value, and at the top of a file
  whose first line is broken;
- secrets at every position and cut point: a secret placed so that a 200-character excerpt
  cuts it anywhere, in a record made unreadable so that it is rejected, or written with a JSON
  escape that only decoding turns back into the secret;
- YAML alias graphs (billion laughs) of any width and depth, inside a cassette that parses
  whole or not;
- per-file bombs: a gzip stream, a ZIP member (deflate, zstd, or lying about its size) and a
  cassette body (gzip inside gzip), each inflating past the budget the fuzzer sets;
- hostile names: non-UTF-8 bytes, control characters, a very long name, `#`, `%`, spaces, a
  workflow command, a secret; and a ZIP member named so.
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import os
import re
import re._parser as sre  # the standard parser of patterns: their literals, per site
import struct
import zipfile
import zlib
from dataclasses import dataclass
from functools import cache
from typing import Any

import yaml
from hypothesis import strategies as st

from hostile import SECRETS, _members, _zipped

# Every attack that is a bomb inflates past this; the fuzzer and the tests scan with
# --max-decompressed-mb BOMB_BUDGET_MB so that the budget, not the machine, stops it.
BOMB_BUDGET_MB = 2
_BOMB_BYTES = 4 * BOMB_BUDGET_MB * 1024 * 1024


class Attack:
    """An attacked input. Not a dataclass: hypothesis prints a failing draw field by field,
    and a megabyte of it helps no one (see __repr__)."""

    def __init__(
        self,
        kind: str,
        data: bytes,
        name: bytes = b"",
        secrets: list[tuple[str, str]] | None = None,
        expect_reject: str | None = None,
        target: str = "",
    ) -> None:
        self.kind = kind
        self.data = data
        # A file name prefix (bytes: it may not be UTF-8) to write the input under.
        self.name = name
        # (shape, body) of secrets the input holds whole, however encoded: no output may hold
        # the body or any 12 characters of it.
        self.secrets = secrets or []
        # A bomb: some reject must say this (the budget's flag); otherwise it was not bounded.
        self.expect_reject = expect_reject
        # Where the attack aims (a regex site: module.PATTERN), for the report of a failure.
        self.target = target

    def __repr__(self) -> str:
        return (
            f"Attack({self.kind!r}, {len(self.data):,} bytes starting {self.data[:120]!r}, "
            f"name={self.name!r}, secrets={self.secrets!r}, target={self.target!r})"
        )


# --- long crafted lines ------------------------------------------------------------------------

# What the module-level patterns over log text repeat on: think markup, SDK reprs and kwargs,
# tool markup of text calls, quotes and escapes, JSON punctuation, SSE and ReAct prefixes.
SITE_TOKENS = [
    "<think>", "</think>", "<think>x", "<thinking>", "Namespace(", "a=1, ", "x='", "Message(",
    "content='", "tool_calls=[", "ChatCompletionMessage(", "<tools>", "</tools>", "<tool_call>",
    "```tool_code\n", "```", "<|python_tag|>", "<|im_start|>", "<function=", "[TOOL_CALLS]",
    "Action:", "Thought:", "Observation:", '"', "'", '\\"', "\\\\", "\\n", "{", "[", "(",
    '{"', '["', '":', '{"a":', "data: ", "event: ", " ", "\t", "a", "0", "-", ".", ",", "=",
    "Running task ", "INFO ", "Traceback ", "sk-", "Bearer ", "http://", "%",
]  # fmt: skip
LINE_SIZES = [64 * 1024, 256 * 1024, 1024 * 1024]


def _literals(pattern: str) -> list[str]:
    """The literal runs of a pattern (`content=`, `response_metadata=`, a lone quote)."""
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        text = "".join(run)
        if len(text) >= 2 or (text and not text.isalnum()):
            out.append(text)
        run.clear()

    def walk(items: Any) -> None:
        for op, av in items:
            if op is sre.LITERAL:
                run.append(chr(av))
                continue
            flush()
            if op is sre.SUBPATTERN:
                walk(av[3])
            elif op is sre.BRANCH:
                for branch in av[1]:
                    walk(branch)
                    flush()
            elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)):
                walk(av[2])
            elif op in (sre.ASSERT, sre.ASSERT_NOT):
                walk(av[1])
            flush()
        flush()

    try:
        walk(sre.parse(pattern))
    except Exception:  # a pattern of another dialect (RE2): its literals are not needed
        return []
    return out


@dataclass(frozen=True)
class Site:
    """A module-level pattern over log text: where it is, and its literal runs."""

    module: str
    name: str
    literals: tuple[str, ...]

    def run(self, start: str, sep: str, size: int) -> bytes:
        """`start` repeated after all the pattern's literals: a match attempt at each repeat
        that looks ahead for the others (a lookahead, a lazy `.*?`) scans to the end of the
        line, so a quadratic pattern shows at a few hundred KB (`response_metadata=` then
        ` content=` thousands of times)."""
        unit = (sep + start).encode()
        return " ".join(self.literals).encode() + unit * (size // len(unit) + 1)


@cache
def regex_sites() -> list[Site]:
    """Every module-level pattern (re or RE2) of forensics with a literal to repeat."""
    import importlib
    import pkgutil

    import forensics

    sites = []
    for info in pkgutil.walk_packages(forensics.__path__, "forensics."):
        try:
            module = importlib.import_module(info.name)
        except Exception:  # an optional dependency (ray): not a log-text site
            continue
        for name, value in sorted(vars(module).items()):
            pattern = getattr(value, "pattern", None)
            compiled = isinstance(pattern, str) and callable(getattr(value, "search", None))
            if compiled and (literals := _literals(pattern)):
                sites.append(Site(info.name, name, tuple(dict.fromkeys(literals))))
    return sites


SEPARATORS = [" ", " ", "", ", ", "'", "\t"]


@st.composite
def _site_run(draw: st.DrawFn, size: int) -> bytes:
    site = draw(st.sampled_from(regex_sites()))
    return site.run(draw(st.sampled_from(site.literals)), draw(st.sampled_from(SEPARATORS)), size)


def _lines(raw: bytes) -> list[bytes]:
    return raw.split(b"\n")


@st.composite
def crafted_line(draw: st.DrawFn, raw: bytes) -> Attack:
    """One line of the seed with a long run of a token a regex could be slow on: a module's
    own literals (every regex site), a token of SITE_TOKENS, or a piece of the line itself."""
    lines = _lines(raw)
    i = draw(st.integers(0, len(lines) - 1))
    line = lines[i]
    size = draw(st.sampled_from(LINE_SIZES))
    source = draw(st.sampled_from(["site", "token", "line"]))
    if source == "site":
        run = draw(_site_run(size))
    else:
        if source == "token" or not line:
            token = draw(st.sampled_from(SITE_TOKENS)).encode()
        else:  # a piece of the line itself: what its own format's patterns look for
            start = draw(st.integers(0, len(line) - 1))
            token = line[start : start + draw(st.integers(1, 24))]
        run = token * (size // len(token) + 1)
    if draw(st.booleans()):  # a line of its own, after this one: text a log reader scans
        lines.insert(i + 1, run)
        return Attack("long line", b"\n".join(lines))
    pos = draw(st.integers(0, len(line)))
    if draw(st.booleans()):
        # Inside the nearest JSON string value: escaped, so the record still parses and the
        # text reaches the readers' own patterns.
        quote = line.find(b'":"', pos) if b'":"' in line else line.find(b'": "', pos)
        if quote >= 0:
            at = line.index(b'"', quote + 2) + 1
            escaped = json.dumps(run.decode("utf-8", "replace"))[1:-1].encode()
            lines[i] = line[:at] + escaped + line[at:]
            return Attack("long line", b"\n".join(lines))
    lines[i] = line[:pos] + run + line[pos:]
    return Attack("long line", b"\n".join(lines))


# --- integers past the digit limit -------------------------------------------------------------

_NUMBER = re.compile(rb"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")


@st.composite
def huge_integer(draw: st.DrawFn, raw: bytes) -> Attack:
    """A number of the seed (or a string value) replaced by one of 4,301 to 20,000 digits:
    int() of it raises ValueError since Python 3.11."""
    digits = b"9" * draw(st.sampled_from([4301, 5000, 20_000]))
    numbers = list(_NUMBER.finditer(raw))
    if numbers and draw(st.booleans()):
        match = draw(st.sampled_from(numbers))
        out = raw[: match.start()] + digits + raw[match.end() :]
    else:
        strings = [m.start() for m in re.finditer(rb'"[^"\\\n]{0,40}"', raw)]
        if strings:
            at = draw(st.sampled_from(strings))
            end = raw.index(b'"', at + 1) + 1
            out = raw[:at] + digits + raw[end:]
        else:
            pos = draw(st.integers(0, len(raw)))
            out = raw[:pos] + digits + raw[pos:]
    if draw(st.booleans()):
        # Near the top of a file whose first line is broken: format detection steps over it.
        out = b'{"broken": \n{"n": ' + digits + b"}\n" + out
    return Attack("huge integer", out)


# --- secrets at every position and cut point ---------------------------------------------------

EXCERPT = 200  # characters of a record a reject keeps (records._excerpt)


def leak_windows(shape: str, body: str, data: bytes) -> set[str]:
    """The 12-character pieces of a planted secret's body that no output may hold: those found
    in the input only inside whole copies of the secret. Placing a secret inside a line can cut
    a copy planted there before in two; the pieces left outside a copy are no secret any more
    (nothing marks them as one), and a piece across a JSON escape is not in the raw text."""
    rest = data.decode("utf-8", "replace").replace(SECRETS[shape][0], "")
    width = min(12, len(body))
    pieces = {body[i : i + width] for i in range(len(body) - width + 1)}
    return {piece for piece in pieces if piece not in rest}


def _escaped(secret: str, draw: st.DrawFn) -> str:
    """The secret with one of its characters as a JSON \\u escape: raw text does not match the
    shape, the decoded value does."""
    i = draw(st.integers(0, len(secret) - 1))
    return secret[:i] + f"\\u{ord(secret[i]):04x}" + secret[i + 1 :]


@st.composite
def secret_at(draw: st.DrawFn, raw: bytes) -> Attack:
    """A secret put where an excerpt (the first 200 characters of a record, or of a value)
    cuts it, at any cut point, in a line that is then made unreadable so that it is rejected.
    Or written with a JSON escape inside a string value."""
    shape = draw(st.sampled_from(sorted(SECRETS)))
    secret, body = SECRETS[shape]
    text = raw.decode("utf-8", "replace")
    lines = text.split("\n")
    i = draw(st.sampled_from([n for n, line in enumerate(lines) if line.strip()] or [0]))
    line = lines[i]
    if draw(st.integers(0, 3)) == 0 and '": "' in line:
        # Escaped inside a JSON string: readers decode it, redaction must see it decoded.
        at = line.index('": "') + 4
        lines[i] = line[:at] + _escaped(secret, draw) + " " + line[at:]
        return Attack("secret", "\n".join(lines).encode(), secrets=[(shape, body)])
    # Where the excerpt ends: the secret starts `cut` characters before it, anywhere inside.
    cut = draw(st.integers(1, len(secret)))
    start = max(0, EXCERPT - 1 - cut - draw(st.sampled_from([0, 0, 1, 2, 12, 40])))
    pad = line[:start] if len(line) >= start else line + "x" * (start - len(line))
    rest = line[start:] if len(line) >= start else ""
    broken = draw(st.sampled_from(["", "\x00", '"', "}", "{", "]"]))
    # A space before it: a key glued to the word before is not a token of its own.
    lines[i] = pad + " " + secret + " " + rest + broken
    return Attack("secret", "\n".join(lines).encode(), secrets=[(shape, body)])


# --- YAML alias graphs -------------------------------------------------------------------------


def is_yaml_cassette(raw: bytes) -> bool:
    return bool(re.search(rb"^(interactions|http_interactions|requests)\s*:", raw, re.M)) and (
        not raw.lstrip().startswith(b"{")
    )


_ITEM = re.compile(rb"^( *)- ", re.M)


@st.composite
def alias_graph(draw: st.DrawFn, raw: bytes) -> Attack:
    """A billion-laughs graph (anchors that list the one before, `width` times, `depth`
    levels) as the content of a new interaction, maybe aliased again by a second one, in a
    cassette that parses whole or not."""
    width = draw(st.integers(2, 12))
    depth = draw(st.integers(1, 12))
    starts = list(_ITEM.finditer(raw))
    indent = starts[0].group(1).decode() if starts else ""
    pad = indent + "      "
    anchors = [f"{pad}l0: &l0 [{', '.join(['lol'] * width)}]"]
    for n in range(1, depth + 1):
        anchors.append(f"{pad}l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * width)}]")
    item = [
        f"{indent}- request:",
        f"{indent}    method: POST",
        f"{indent}    uri: https://api.openai.com/v1/chat/completions",
        f"{indent}    body:",
        *anchors,
        f"{pad}messages: [{{role: user, content: *l{depth}}}]",
        f"{indent}  response:",
        f"{indent}    status: {{code: 200, message: OK}}",
        f'{indent}    body: {{string: \'{{"choices": [{{"message": {{"role": "assistant", '
        f'"content": "hi"}}}}]}}\'}}',
    ]
    if draw(st.booleans()):  # the same graph once more, from a second interaction
        item += [
            f"{indent}- request: {{method: POST, uri: 'https://api.openai.com/v1/chat/"
            f"completions', body: {{messages: [{{role: user, content: *l{depth}}}]}}}}",
            f"{indent}  response: {{status: {{code: 200}}}}",
        ]
    block = ("\n".join(item) + "\n").encode()
    at = draw(st.sampled_from(starts)).start() if starts else len(raw)
    out = raw[:at] + block + raw[at:]
    if draw(st.booleans()):  # not parseable whole: read interaction by interaction
        after = starts[-1].start() + len(block) if starts else len(out)
        out = out[:after] + f"{indent}- request: [unclosed\n".encode() + out[after:]
    return Attack("alias graph", out)


# --- per-file bombs ----------------------------------------------------------------------------


@cache
def _gzip_run(size: int) -> bytes:
    """gzip of `size` spaces, made once: gzip members can be concatenated."""
    return gzip.compress(b" " * size, compresslevel=9, mtime=0)


def _zstd_member(name: str, data: bytes, declared: int | None = None) -> tuple[bytes, bytes]:
    """(local header + data, central directory entry) of a zstd (method 93) member, declaring
    `declared` bytes inflated (a lie when it differs from len(data))."""
    import zstandard

    packed = zstandard.ZstdCompressor().compress(data)
    size = len(data) if declared is None else declared
    raw_name = name.encode()
    crc = zlib.crc32(data)
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 63, 0, 93, 0, 0, crc, len(packed), size,
                        len(raw_name), 0) + raw_name + packed  # fmt: skip
    central = struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 63, 63, 0, 93, 0, 0, crc, len(packed),
                          size, len(raw_name), 0, 0, 0, 0, 0, 0) + raw_name  # fmt: skip
    return local, central


def _with_zstd_member(raw: bytes, name: str, data: bytes, declared: int | None) -> bytes:
    """The archive (deflate members, rezipped) followed by one zstd member."""
    archive = _zipped(_members(raw))
    end = archive.rindex(b"PK\x05\x06")
    (_, _, _, count, _, cd_size, cd_offset, _) = struct.unpack_from("<4s4H2LH", archive, end)
    local, central = _zstd_member(name, data, declared)
    central = central[:42] + struct.pack("<L", cd_offset) + central[46:]  # its header offset
    body = archive[:cd_offset] + local
    directory = archive[cd_offset : cd_offset + cd_size] + central
    tail = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count + 1, count + 1, len(directory),
                       len(body), 0)  # fmt: skip
    return body + directory + tail


@st.composite
def bomb(draw: st.DrawFn, raw: bytes) -> Attack:
    """The seed made to inflate past BOMB_BUDGET_MB: its gzip with runs of spaces after it, a
    ZIP member (deflate or zstd, or declaring less than it inflates to), a cassette body
    gzipped twice."""
    flag = "--max-decompressed-mb"
    if raw.startswith(b"PK\x03\x04"):
        # A member the reader reads (a sample): one it skips costs nothing and says nothing.
        name = draw(st.sampled_from(["samples/9_epoch_1.json", "samples/10_epoch_2.json"]))
        kind = draw(st.sampled_from(["deflate", "zstd", "zstd-lie"]))
        big = b'{"a": "' + b" " * _BOMB_BYTES + b'"}'
        if kind == "deflate":
            members = [*_members(raw), (name, big)]
            return Attack("bomb", _zipped(members), expect_reject=flag)
        declared = 1000 if kind == "zstd-lie" else None
        out = _with_zstd_member(raw, name, big, declared)
        return Attack("bomb", out, expect_reject="declared size" if declared else flag)
    try:
        doc = json.loads(raw)
    except ValueError:
        doc = None
    cassette = is_yaml_cassette(raw) or (
        isinstance(doc, dict) and {"interactions", "http_interactions"} & set(doc)
    )
    loaded: Any = doc
    if cassette and doc is None:
        try:
            loaded = yaml.load(raw, Loader=yaml.SafeLoader)
        except yaml.YAMLError:  # secrets planted as text broke it: a gzip bomb instead
            loaded = None
    if cassette and isinstance(loaded, dict) and draw(st.booleans()):
        inner = gzip.compress(b'{"choices": []' + b" " * _BOMB_BYTES + b"}", 9, mtime=0)
        body = gzip.compress(inner, 9, mtime=0)
        keys = ("interactions", "http_interactions", "responses")
        key = next((k for k in keys if k in loaded), None)
        items = loaded.get(key) if key else None
        if isinstance(items, list) and items:
            item = items[draw(st.integers(0, len(items) - 1))]
            nested = key != "responses" and isinstance(item, dict)
            response = item.get("response", item) if nested else item
            if isinstance(response, dict):
                if doc is not None:
                    response["body"] = {"base64_string": base64.b64encode(body).decode()}
                    out = json.dumps(loaded).encode()
                else:
                    response["body"] = {"string": body}
                    out = yaml.safe_dump(loaded).encode()
                return Attack("bomb", out, expect_reject=flag)
    runs = draw(st.integers(1, 3))
    tail = _gzip_run(_BOMB_BYTES) * runs
    if draw(st.booleans()):
        tail = gzip.compress(b"\n" * _BOMB_BYTES, 9, mtime=0)
    return Attack("bomb", gzip.compress(raw, mtime=0) + tail, expect_reject=flag)


# --- hostile names -----------------------------------------------------------------------------

NAME_PIECES = [
    b"\xff\xfe", b"\xc3(", b"\x1b[31m", b"\x07", b"\r", b"\t", b"\x7f", b"\xc2\x9b",
    b" ", b"#", b"%", b"%0A", b"%25", b"::warning::", b"##[error]", b"-", b"'", b'"', b"\\",
    b"$(id)", b"`x`", "\u202e".encode(), "\u2028".encode(), "é".encode(), b"[x](http://e.test)",
    b"<script>", b"&amp;", b"*", b"?", b"[", b"!", b"@",
]  # fmt: skip


@st.composite
def hostile_name(draw: st.DrawFn, raw: bytes) -> Attack:
    """The seed under a hostile file name (the format's own name kept at the end, as its
    extension may matter); in a ZIP container, a member named so too."""
    pieces = draw(st.lists(st.sampled_from(NAME_PIECES), min_size=1, max_size=5))
    prefix = b"".join(pieces)
    secrets = []
    if draw(st.integers(0, 3)) == 0:
        shape = draw(st.sampled_from(["aws_key_id", "github", "huggingface", "openai"]))
        prefix += SECRETS[shape][0].encode() + b"-"
        secrets.append((shape, SECRETS[shape][1]))
    if draw(st.integers(0, 3)) == 0:
        prefix = b"n" * draw(st.integers(100, 200)) + prefix  # long: the limit is 255 bytes
    data = raw
    if raw.startswith(b"PK\x03\x04") and draw(st.booleans()):
        data = _renamed_member(raw, draw)
    return Attack("hostile name", data, name=prefix.replace(b"/", b"_"), secrets=secrets)


def _renamed_member(raw: bytes, draw: st.DrawFn) -> bytes:
    """A ZIP with one member's name replaced, in both of its headers, by bytes of the same
    length that are not valid UTF-8 or hold control characters."""
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        names = [i.filename for i in archive.infolist()]
    old = draw(st.sampled_from(names)).encode()
    junk = draw(st.sampled_from([b"\xff", b"\x1b", b"\x00", b"\xc3", b"\n"]))
    at = draw(st.integers(0, len(old) - 1))
    new = old[:at] + junk + old[at + 1 :]
    return raw.replace(old, new)


# --- every class -------------------------------------------------------------------------------

CLASSES = {
    "long line": crafted_line,
    "huge integer": huge_integer,
    "secret": secret_at,
    "alias graph": alias_graph,
    "bomb": bomb,
    "hostile name": hostile_name,
}


def applicable(kind: str, raw: bytes) -> bool:
    """Alias graphs only where a reader reads YAML (cassettes)."""
    return kind != "alias graph" or is_yaml_cassette(raw)


def file_name(attack: Attack, seed_name: str) -> str:
    """The name to write the input under (surrogate-escaped: it may not be UTF-8)."""
    name = attack.name + seed_name.encode()
    if len(name) > 250:  # the file system's limit is 255 bytes a component
        name = name[-250:]
    return os.fsdecode(name)


# --- every regex site, once (benchmarks/fuzz.py --sites) ----------------------------------------

SITE_LINE = 256 * 1024  # a quadratic pattern takes tens of seconds on a line this long
_TEXT_SEEDS = ("tau_bench_log", "capture_jsonl")


def site_seeds(site: Site) -> list[str]:
    """The seeds whose reader the site's module is (a format's own patterns), else a text log
    and a capture, whose text reaches the shared parsers, enrichment and markers."""
    from forensics.ingest import FORMATS

    own = [
        label
        for spec in FORMATS
        if spec.ingest.__module__ == site.module
        for label in sorted(spec.seeds)
    ]
    return own or list(_TEXT_SEEDS)


def site_attack(site: Site, raw: bytes) -> Attack:
    """The seed with one long line per literal of the site (up to four, about 1 MB): as lines
    of their own in a text log, inside JSON string values in a JSON file."""
    runs = [site.run(start, " ", SITE_LINE) for start in site.literals[:4]]
    lines = _lines(raw)
    if raw.lstrip()[:1] in (b"{", b"["):
        values = [(i, m.end()) for i, line in enumerate(lines) for m in re.finditer(rb'": "', line)]
        for n, run in enumerate(runs):
            if not values:
                break
            i, at = values[min(n * 7, len(values) - 1)]  # spread over the file's values
            escaped = json.dumps(run.decode("utf-8", "replace"))[1:-1].encode()
            lines[i] = lines[i][:at] + escaped + lines[i][at:]
            values = [(j, p + len(escaped) if j == i and p >= at else p) for j, p in values]
        return Attack("regex site", b"\n".join(lines), target=f"{site.module}.{site.name}")
    at = min(1, len(lines))
    data = b"\n".join([*lines[:at], *runs, *lines[at:]])
    return Attack("regex site", data, target=f"{site.module}.{site.name}")
