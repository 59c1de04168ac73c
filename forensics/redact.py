"""Secrets never leave forensics: keys, tokens and passwords are masked before anything is written.

Logs of agent runs carry whatever the agent saw: API keys in headers, URLs and env dumps. Every
output derives from the tables and names redacted here, so a pattern missed here is a leak.

Each pattern is valid in Python `re` and in RE2 (pyarrow.compute): one combined RE2 scan finds
the few values of a column that hold a candidate, and only those pay for Python. So there is no
lookaround and no backreference; a pattern's capturing group is the secret, and the rest of its
match (a separator, `?key=`, a vendor prefix) is kept. Character classes are spelled out, since
`\\s` and `\\b` differ between the dialects. Python compiles with re.ASCII, so its case folding is
a subset of RE2's: whatever Python would redact, the RE2 scan flags.

The mask carries 4 hex digits of the secret's sha256: outputs stay byte-identical across runs,
two keys in one report stay apart, and 4 digits are too few to confirm a guessed password.
No pattern matches a mask (masks hold `*`, and values must not start with `***`), so redacting
twice changes nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from functools import lru_cache

import pyarrow as pa
import pyarrow.compute as pc

MASK_PREFIX = "***REDACTED"

# A vendor prefix counts only at the start of a token: `task-…` and `risk-…` are words, but
# `OPENAI_sk-…` and `key:sk-…` are keys (`_` separates here).
_B = r"(?:^|[^A-Za-z0-9])"
_WS = r" \t\r\n\f\v"
# Values may start with at most two `*`: a value that is already a mask is left alone.
_LEAD = r"\*{0,2}"


def _value(stop: str) -> str:
    """A quoted value (runs to its quote) or an unquoted one (runs to a `stop` char), 6+ chars:
    `null`, `None` and `true` are no secrets."""
    return (
        rf"""(?:\\?"({_LEAD}[^*"\\\r\n][^"\\\r\n]{{5,}})"""
        rf"""|\\?'({_LEAD}[^*'\\\r\n][^'\\\r\n]{{5,}})"""
        rf"""|({_LEAD}[^*"'\\ \t{stop}][^"'\\{stop}]{{5,}}))"""
    )


def _keyed(names: str, stop: str) -> str:
    """`name: value`, `name=value`, JSON, Python repr and JSON-in-a-string (`\\"name\\": …`)."""
    return rf"""{_B}(?i:{names})(?:\\?["'])?[ \t]*[:=][ \t]*{_value(stop)}"""


# A bearer token (RFC 6750 characters, 8+) needs an uppercase letter, a digit or one of `~+/=`,
# so "Bearer authentication." and "Bearer token-based" in prose stay readable.
_T, _X = r"[A-Za-z0-9._~+/=-]", r"[A-Z0-9~+/=]"
_TOKEN = "|".join(
    [f"[a-z]{{7,}}{_X}{_T}*"] + [f"[a-z]{{{p}}}{_X}{_T}{{{7 - p},}}" for p in range(7)]
)

# Keys whose vendor prefix says what follows is a key: (prefix, the key's body).
_VENDOR_KEYS = (
    ("sk-", "[A-Za-z0-9_-]{16,}"),
    ("AIza", "[0-9A-Za-z_-]{30,}"),
    ("hf_", "[A-Za-z0-9]{30,}"),
    ("A[KS]IA", "[0-9A-Z]{16}"),
    ("gh[oprsu]_", "[A-Za-z0-9]{36,}"),
    ("github_pat_", "[A-Za-z0-9_]{22,}"),
    ("xox[abeprs]-", "[A-Za-z0-9-]{10,}"),
)

# Order matters: a value in context (a header, a key) is masked whole before the vendor
# shapes inside it would be, so its hash is that of the real secret.
PATTERNS: tuple[str, ...] = (
    # HAR and proxy dumps: {"name": "Authorization", "value": "<secret>"}.
    r'"name"[ \t]*:[ \t]*"(?i:authorization|proxy-authorization|x-api-key|api-key|x-goog-api-key'
    r'|cookie|set-cookie)"[ \t\r\n]*,[ \t\r\n]*"value"[ \t]*:[ \t]*"'
    rf'({_LEAD}[^*"\\\r\n][^"\\\r\n]*)',
    # Any scheme (Bearer, Basic, Token, bare): the whole value goes; unquoted, to the line end.
    _keyed(r"authorization", r"\r\n,;"),
    _keyed(
        r"x-goog-api-key|x-api-key|api[-_]?key|access_token|auth_token|refresh_token|secret_key"
        r"|client_secret|password|aws_secret_access_key|aws_session_token",
        _WS + r",;&<>(){}\[\]",
    ),
    r"[?&#;](?i:key|api_key|apikey|api-key|token|access_token|auth|password|sig|signature"
    rf"|x-amz-signature|x-amz-security-token)=({_LEAD}[^*&#{_WS}\"'<>\\][^&#{_WS}\"'<>\\]*)",
    # scheme://user:pass@host; a user alone (ssh://git@host) is no secret. The scheme is
    # bounded and starts a token: unbounded, every letter of a long word would start a retry.
    rf"(?:^|[^A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{{0,31}}://([^/?#@:{_WS}\"'<>]*:[^/?#@{_WS}\"'<>]+)@",
    rf"{_B}(?i:bearer)[ \t]+({_TOKEN})",
    *(rf"{_B}{prefix}({body})" for prefix, body in _VENDOR_KEYS),
    rf"{_B}(eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)",
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----([A-Za-z0-9+/=\\ \t\r\n]+)",
    # A vendor key cut short where a value ends: readers clip reject excerpts and error texts to
    # a few hundred characters before redaction runs, and a clipped key is shorter than the
    # shapes above ask for (found by benchmarks/fuzz.py: a results record cut inside an hf_ key).
    rf"{_B}(?:{'|'.join(prefix for prefix, _ in _VENDOR_KEYS)})([A-Za-z0-9_-]{{4,}})$",
    rf"{_B}(eyJ[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_.-]*)$",
)
ANY_PATTERN = "|".join(f"(?:{p})" for p in PATTERNS)  # for RE2 scans over whole columns
_COMPILED = [re.compile(p, re.ASCII) for p in PATTERNS]
# Secrets glued into one run (`AKIA…AKIA…`) surface one per round, as each mask becomes the
# next one's boundary; past a few rounds the token boundary is dropped, so hostile text costs
# linear time, not a round per key.
_ROUNDS = 3
_GLUED = [re.compile(p.replace(_B, ""), re.ASCII) for p in PATTERNS]
_ANY = re.compile(ANY_PATTERN, re.ASCII)


def _mask(secret: str) -> str:
    digest = hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{MASK_PREFIX}-{digest[:4]}***"


def _replace(m: re.Match[str]) -> str:
    i, start = m.lastindex or 0, m.start()
    whole = m.group()
    return whole[: m.start(i) - start] + _mask(m.group(i)) + whole[m.end(i) - start :]


def contains_secret(text: str) -> bool:
    if not text:
        return False
    # Python scans at a few MB/s, RE2 at hundreds but with ~1 ms to set up: long texts ask RE2
    # first, which flags a superset of what Python matches.
    if len(text) >= 1 << 16 and not pc.match_substring_regex([text], ANY_PATTERN)[0].as_py():
        return False
    return _ANY.search(text) is not None


def redact_text(text: str | None) -> str | None:
    # A mask can become the separator a later match needs (`AKIA…sk-…` glued together), so
    # repeat; one round is usual.
    for patterns in [_COMPILED] * _ROUNDS + [_GLUED]:
        if not (text and contains_secret(text)):
            return text
        for pattern in patterns:
            text = pattern.sub(_replace, text)
    return text


@lru_cache(maxsize=4096)
def redact_name(name: str) -> str:
    """A file path or run id, redacted; cached, since every row of a file repeats it."""
    return redact_text(name) or name


def redact_array(array: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Every string leaf masked; type, nulls and list offsets as they were. Unchanged input
    (the usual case) comes back as the same object, after one RE2 pass per string leaf."""
    if isinstance(array, pa.ChunkedArray):
        old = array.chunks  # pyarrow hands out a new wrapper per access: compare these
        suspect = _suspects(old)
        chunks = [redact_array(c) if s else c for c, s in zip(old, suspect, strict=True)]
        if all(n is o for n, o in zip(chunks, old, strict=True)):
            return array
        return pa.chunked_array(chunks, type=array.type)
    t = array.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        hits = pc.fill_null(pc.match_substring_regex(array, ANY_PATTERN), False)
        if not pc.any(hits).as_py():
            return array
        fixed = [redact_text(v) for v in pc.filter(array, hits).to_pylist()]
        return pc.replace_with_mask(array, hits, pa.array(fixed, t))
    if pa.types.is_string_view(t):  # no RE2 kernel for views yet
        plain = array.cast(pa.large_string())
        new = redact_array(plain)
        return array if new is plain else new.cast(t)
    if pa.types.is_dictionary(t):
        old = array.dictionary
        words = redact_array(old)
        if words is old:
            return array
        return pa.DictionaryArray.from_arrays(array.indices, words, ordered=t.ordered)
    fixed_size = pa.types.is_fixed_size_list(t)
    if fixed_size or pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        # .values ignores the slice, and so do the reused validity and offset buffers.
        old = array.values
        values = redact_array(old)
        if values is old:
            return array
        own = array.buffers()[: 1 if fixed_size else 2]
        return pa.Array.from_buffers(t, len(array), own, offset=array.offset, children=[values])
    if pa.types.is_struct(t):
        fields = [array.field(i) for i in range(t.num_fields)]  # sliced like the parent
        new = [redact_array(f) for f in fields]
        if all(n is f for n, f in zip(new, fields, strict=True)):
            return array
        mask = array.is_null() if array.null_count else None
        return pa.StructArray.from_arrays(new, fields=list(t), mask=mask)
    if pa.types.is_nested(t):  # list views, unions, run-end encoding: better loud than leaking
        raise TypeError(f"redact_array: {t} is not supported")
    return array


def _text_leaves(array: pa.Array) -> Iterator[pa.Array]:
    """The string arrays inside `array`, nested ones included (with values beyond a slice)."""
    t = array.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        yield array
    elif pa.types.is_string_view(t):
        yield array.cast(pa.large_string())
    elif pa.types.is_dictionary(t):
        yield from _text_leaves(array.dictionary)
    elif (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or (
            pa.types.is_map(t)  # its values are the key/item structs
        )
    ):
        yield from _text_leaves(array.values)
    elif pa.types.is_struct(t):
        for i in range(t.num_fields):
            yield from _text_leaves(array.field(i))
    elif pa.types.is_nested(t):
        raise TypeError(f"redact_array: {t} is not supported")


def _suspects(chunks: list[pa.Array]) -> list[bool]:
    """Which chunks may hold a secret, from one RE2 scan per string type over all of them:
    compiling the combined pattern costs about a millisecond, more than scanning a chunk (a
    table built in record batches has one chunk per batch)."""
    if len(chunks) < 2:
        return [True] * len(chunks)
    groups: dict[pa.DataType, list[tuple[int, pa.Array]]] = {}
    for i, chunk in enumerate(chunks):
        for leaf in _text_leaves(chunk):
            groups.setdefault(leaf.type, []).append((i, leaf))
    suspect = [False] * len(chunks)
    for leaves in groups.values():
        # One array, not a chunked one: RE2 would compile the pattern for every chunk.
        hits = pc.match_substring_regex(pa.concat_arrays([a for _, a in leaves]), ANY_PATTERN)
        start = 0
        for i, leaf in leaves:
            if not suspect[i] and pc.any(hits.slice(start, len(leaf))).as_py():
                suspect[i] = True
            start += len(leaf)
    return suspect


def redact_table(table: pa.Table, columns: Iterable[str]) -> pa.Table:
    """The named columns redacted; the schema, metadata included, unchanged. A name that is not
    a column raises KeyError: a misspelt column would otherwise go out unredacted."""
    for name in columns:
        i = table.schema.get_field_index(name)
        if i < 0:
            raise KeyError(name)
        table = table.set_column(i, table.schema.field(i), redact_array(table.column(i)))
    return table
