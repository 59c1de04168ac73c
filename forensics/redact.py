"""Secrets never leave forensics: keys, tokens and passwords are masked before anything is written.

Logs of agent runs carry whatever the agent saw: API keys in headers, URLs and env dumps. Every
output derives from the tables and names redacted here, so a pattern missed here is a leak.

The shapes come from two rule sets, both run on RE2 (linear time on any input):
- gitleaks' default rules (forensics/data/secrets/gitleaks.toml, vendored unchanged at the
  commit SOURCE.md names), with their keywords, secret groups, entropy floors and allowlists,
  as gitleaks applies them; adjustments.toml there lists each rule left out or changed, and why.
- the rules below (RULES_FIRST, RULES_LAST): secrets in their context (an Authorization or
  Cookie header, `password=…`, `?key=…`, `user:pass@host`, `Bearer …`), vendor keys by their
  prefix whatever their length (gitleaks pins lengths and alphabets: a key that does not fit them
  exactly, or is cut, is still a key), shapes gitleaks has no rule for, and keys cut short where
  a text ends.

Each rule names keywords, one of which every text it matches contains (case-insensitively): a
text runs only the rules whose keywords it holds, so most texts cost one scan for keywords.
Over a column, one RE2 scan (PREFILTER: the keywords, or for rules keyed by common words a
piece of their pattern) picks the few values that may hold a secret; only those reach Python.

A rule's secret is its secret group (gitleaks' secretGroup), else its first group that matched,
else the whole match; the rest of the match (a separator, `?key=`, a vendor prefix) is kept.
The mask carries 4 hex digits of the secret's sha256: outputs stay byte-identical across runs,
two keys in one report stay apart, and 4 digits are too few to confirm a guessed password. No
rule matches a mask (masks hold `*`, and values must not start with `***`), so redacting twice
changes nothing.

Text cut to a length (an excerpt, an error message) is cut from redacted text (`clip`): a
secret across the cut is masked whole, never left as a prefix too short to recognise.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import re
import tomllib
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import re2

MASK_PREFIX = "***REDACTED"
DATA = Path(__file__).resolve().parent / "data" / "secrets"

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


def _names(names: Sequence[str]) -> str:
    return "|".join(re2.escape(n) for n in names)


def _keyed(names: Sequence[str], stop: str) -> str:
    """`name: value`, `name=value`, JSON, Python repr and JSON-in-a-string (`\\"name\\": …`)."""
    return rf"""{_B}(?i:{_names(names)})(?:\\?["'])?[ \t]*[:=][ \t]*{_value(stop)}"""


# A bearer token (RFC 6750 characters, 8+) needs an uppercase letter, a digit or one of `~+/=`,
# so "Bearer authentication." and "Bearer token-based" in prose stay readable.
_T, _X = r"[A-Za-z0-9._~+/=-]", r"[A-Z0-9~+/=]"
_TOKEN = "|".join(
    [f"[a-z]{{7,}}{_X}{_T}*"] + [f"[a-z]{{{p}}}{_X}{_T}{{{7 - p},}}" for p in range(7)]
)

# Keys whose vendor prefix says what follows is a key: (prefix, the key's body, keywords). Most
# have a gitleaks rule (named) that wants the exact length and alphabet; these mask any length.
_VENDOR_KEYS = (
    ("sk-", "[A-Za-z0-9_-]{16,}", ("sk-",)),  # OpenAI, Anthropic, DeepSeek, OpenRouter, …
    ("AIza", "[0-9A-Za-z_-]{30,}", ("aiza",)),  # gcp-api-key: exactly 35
    ("hf_", "[A-Za-z0-9]{30,}", ("hf_",)),  # huggingface-access-token: 34 letters
    ("A[KS]IA", "[0-9A-Z]{16}", ("akia", "asia")),  # aws-access-token: base32 only
    ("gh[oprsu]_", "[A-Za-z0-9]{36,}", ("ghp_", "gho_", "ghr_", "ghs_", "ghu_")),  # github-*
    ("github_pat_", "[A-Za-z0-9_]{22,}", ("github_pat_",)),  # github-fine-grained-pat: 82
    ("xox[abeprs]-", "[A-Za-z0-9-]{10,}", ("xoxa-", "xoxb-", "xoxe-", "xoxp-", "xoxr-", "xoxs-")),
    # No gitleaks rule: Groq, xAI.
    ("gsk_", "[A-Za-z0-9]{20,}", ("gsk_",)),
    ("xai-", "[A-Za-z0-9]{20,}", ("xai-",)),
)


@dataclass(frozen=True)
class Allowlist:
    """gitleaks' allowlist of a rule (or the global one): a match it allows is no secret."""

    regexes: tuple[str, ...] = ()
    stopwords: tuple[str, ...] = ()
    target: str = "secret"  # what the regexes search: secret, match or line
    need_all: bool = False  # condition = "AND"
    paths: bool = False  # it has path conditions (never met: a text has no path)


@dataclass(frozen=True)
class Rule:
    id: str
    regex: str
    keywords: tuple[str, ...]
    secret_group: int = 0
    entropy: float = 0.0
    allowlists: tuple[Allowlist, ...] = ()
    gitleaks: bool = False


def _rule(id: str, regex: str, *keywords: str) -> Rule:
    return Rule(id, regex, tuple(k.lower() for k in keywords))


_HEADER_NAMES = (
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "cookie",
    "set-cookie",
)
_KEYED_NAMES = (
    "x-goog-api-key",
    "x-api-key",
    "api-key",
    "api_key",
    "apikey",
    "access_token",
    "auth_token",
    "refresh_token",
    "secret_key",
    "client_secret",
    "password",
    "aws_secret_access_key",
    "secret_access_key",
    "secretaccesskey",  # STS/boto JSON: "SecretAccessKey"
    "aws_session_token",
    "session_token",
    "sessiontoken",
    "private_key_id",  # a GCP service-account file
)
_QUERY_NAMES = (
    "key",
    "api_key",
    "apikey",
    "api-key",
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "client_secret",
    "auth",
    "password",
    "sig",
    "signature",
    "x-amz-signature",
    "x-amz-security-token",
)
_QUERY_VALUE = rf"""({_LEAD}[^*&#{_WS}\"'<>\\][^&#{_WS}\"'<>\\]*)"""

# Order matters: a value in context (a header, a key) is masked whole before the vendor shapes
# inside it would be, so its hash is that of the real secret.
RULES_FIRST: tuple[Rule, ...] = (
    # HAR and proxy dumps: {"name": "Authorization", "value": "<secret>"}.
    _rule(
        "header-name-value",
        rf'"name"[ \t]*:[ \t]*"(?i:{_names(_HEADER_NAMES)})"[ \t\r\n]*,[ \t\r\n]*"value"[ \t]*:'
        rf'[ \t]*"({_LEAD}[^*"\\\r\n][^"\\\r\n]*)',
        "authorization",
        "api-key",
        "cookie",
    ),
    # Any scheme (Bearer, Basic, Token, bare): the whole value goes; unquoted, to the line end.
    _rule("authorization", _keyed(["authorization"], r"\r\n,;"), "authorization"),
    # A Cookie/Set-Cookie header's value, every pair of it (`;` separates pairs, not values),
    # quoted or to the line's end. It starts `name=`: `cookie: str = None` and `cookie = f(x)`
    # in code are no header.
    _rule(
        "cookie",
        r"""(?:^|[^A-Za-z0-9_-])(?i:set-cookie|cookie)(?:\\?["'])?[ \t]*:[ \t]*(?:\\?["'])?"""
        r"""(\*{0,2}[^*\s=;"'\\][^\s=;"'\\]*=[^\r\n"'\\]*)""",
        "cookie",
    ),
    _rule("keyed-credential", _keyed(_KEYED_NAMES, _WS + r",;&<>(){}\[\]"), *_KEYED_NAMES),
    _rule(
        "query-credential",
        rf"[?&#;](?i:{_names(_QUERY_NAMES)})={_QUERY_VALUE}",
        "key=",
        "token=",
        "secret=",
        "auth=",
        "password=",
        "sig=",
        "signature=",
    ),
    # An OAuth authorization code in a redirect URL (8+ chars: `?code=200` is a status).
    _rule(
        "oauth-code",
        rf"[?&#](?i:code)=({_LEAD}[^*&#{_WS}\"'<>\\][^&#{_WS}\"'<>\\]{{7,}})",
        "code=",
    ),
    # scheme://user:pass@host; a user alone (ssh://git@host) is no secret. The scheme is
    # bounded and starts a token: unbounded, every letter of a long word would start a retry.
    _rule(
        "url-userinfo",
        rf"(?:^|[^A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{{0,31}}://"
        rf"([^/?#@:{_WS}\"'<>]*:[^/?#@{_WS}\"'<>]+)@",
        "://",
    ),
    _rule("bearer", rf"{_B}(?i:bearer)[ \t]+({_TOKEN})", "bearer"),
    *(
        _rule(f"vendor-key-{keywords[0].strip('_-')}", rf"{_B}{prefix}({body})", *keywords)
        for prefix, body, keywords in _VENDOR_KEYS
    ),
    # Google OAuth access and refresh tokens (no gitleaks rule).
    _rule("google-oauth-token", rf"{_B}ya29\.([0-9A-Za-z_-]{{20,}})", "ya29."),
    _rule("google-refresh-token", rf"{_B}1//(0[0-9A-Za-z_-]{{20,}})", "1//0"),
    # gitleaks' jwt wants 17+ characters per part and an alphanumeric header.
    _rule("jwt", rf"{_B}(eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)", "eyj"),
    # A private key block, PEM or PGP, encrypted (Proc-Type/DEK-Info headers) or not: its
    # base64 lines and armor headers, to its END line or, cut short, to where the text stops
    # (gitleaks' private-key needs the END line). Code that names the BEGIN line keeps the rest.
    _rule(
        "private-key-block",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----((?:(?:Proc-Type|DEK-Info|Version"
        r"|Comment|Hash|Charset)[ \t]*:[^\r\n\\]*|[A-Za-z0-9+/=\\ \t\r\n])+)",
        "-----begin",
    ),
)

_PREFIXES = "|".join(prefix for prefix, _, _ in _VENDOR_KEYS)
# A vendor key or JWT cut short where a text ends (a value a source itself clipped); a shape
# cut by forensics is cut after redaction (`clip`).
RULES_LAST: tuple[Rule, ...] = (
    _rule(
        "vendor-key-cut",
        rf"{_B}(?:{_PREFIXES})([A-Za-z0-9_-]{{4,}})$",
        *(k for _, _, keywords in _VENDOR_KEYS for k in keywords),
    ),
    _rule("jwt-cut", rf"{_B}(eyJ[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_.-]*)$", "eyj"),
)


def _allowlist(raw: dict[str, Any]) -> Allowlist:
    return Allowlist(
        regexes=tuple(raw.get("regexes", ())),
        stopwords=tuple(w.lower() for w in raw.get("stopwords", ())),
        target=raw.get("regexTarget", "secret"),
        need_all=raw.get("condition", "OR").upper() == "AND",
        paths=bool(raw.get("paths")),
    )


def load_gitleaks() -> tuple[tuple[Rule, ...], Allowlist, dict[str, str], dict[str, str]]:
    """gitleaks' rules as forensics runs them, its global allowlist, {rule id: why it is left
    out} and {rule id: its trigger}, from adjustments.toml."""
    config = tomllib.loads((DATA / "gitleaks.toml").read_text(encoding="utf-8"))
    adjust = tomllib.loads((DATA / "adjustments.toml").read_text(encoding="utf-8"))
    excluded = {e["id"]: e["reason"] for e in adjust["excluded"]}
    replaced = {r["id"]: r["regex"] for r in adjust.get("replaced", [])}
    old, new = adjust["terminator"]["gitleaks"], adjust["terminator"]["forensics"]
    rules = []
    for raw in config["rules"]:
        if raw["id"] in excluded:
            continue
        regex = replaced.get(raw["id"], raw["regex"]).replace(old, new)
        rules.append(
            Rule(
                id=raw["id"],
                regex=regex,
                keywords=tuple(k.lower() for k in raw.get("keywords", ())),
                secret_group=raw.get("secretGroup", 0),
                entropy=raw.get("entropy", 0.0),
                allowlists=tuple(_allowlist(a) for a in raw.get("allowlists", ())),
                gitleaks=True,
            )
        )
    triggers = {t["id"]: t["pattern"] for t in adjust.get("trigger", [])}
    return tuple(rules), _allowlist(config["allowlist"]), excluded, triggers


GITLEAKS_RULES, _GLOBAL_ALLOW, EXCLUDED, _GITLEAKS_TRIGGERS = load_gitleaks()
RULES: tuple[Rule, ...] = RULES_FIRST + GITLEAKS_RULES + RULES_LAST
KEYWORDS: tuple[str, ...] = tuple(sorted({k for r in RULES for k in r.keywords}))
_RULES_OF: dict[str, list[int]] = {}
for _i, _r in enumerate(RULES):
    for _k in set(_r.keywords):
        _RULES_OF.setdefault(_k, []).append(_i)
# Rules whose keywords ordinary log text holds (`task-`, `://`, `text_`, `items.`, words of
# prose) are flagged over a column by a short piece of their own pattern instead (one that every
# match contains), or nearly every value would reach Python. gitleaks' are in adjustments.toml.
_NAMES = _names(("authorization", "cookie", "set-cookie", *_KEYED_NAMES))
TRIGGERS: dict[str, str] = {
    "header-name-value": rf'(?i)"name"[ \t]*:[ \t]*"(?:{_names(_HEADER_NAMES)})"',
    "authorization": rf"""(?i:{_NAMES})(?:\\?["'])?[ \t]*[:=]""",
    "cookie": r"""(?i:cookie)(?:\\?["'])?[ \t]*:""",
    "keyed-credential": rf"""(?i:{_NAMES})(?:\\?["'])?[ \t]*[:=]""",
    "query-credential": rf"[?&#;](?i:{_names((*_QUERY_NAMES, 'code'))})=",
    "oauth-code": rf"[?&#;](?i:{_names((*_QUERY_NAMES, 'code'))})=",
    "url-userinfo": rf"""://[^/?#@{_WS}"'<>]*:[^/?#@{_WS}"'<>]+@""",
    "bearer": rf"(?i:bearer)[ \t]+{_T}",
    "vendor-key-sk": r"(?:^|[^A-Za-z0-9])sk-[A-Za-z0-9_-]{4}",
    "vendor-key-hf": r"hf_[A-Za-z0-9]{4}",
    "vendor-key-xai": r"xai-[A-Za-z0-9]{4}",
    "jwt": r"\.eyJ",
    "vendor-key-cut": rf"{_B}(?:{_PREFIXES})[A-Za-z0-9_-]{{4}}",
    "jwt-cut": r"\.eyJ",
}


# Escapes of printable ASCII that JSON and Python write (`\u002d`, `\x2d`, `\/`): a key written
# with one (`sk\u002dproj-…`) is a key to whoever reads it, and a parser decodes it. (Fixed-width
# alternatives: Python's engine runs this in linear time, and finds many matches faster.)
_ESCAPED = re.compile(rb"\\(?:u00[2-7][0-9a-fA-F]|x[2-7][0-9a-fA-F]|/)")
ESCAPE_TRIGGER = r"\\(?:u00[2-7][0-9a-fA-F]|x[2-7][0-9a-fA-F]|/)"


def _unescaped(data: bytes) -> tuple[bytes, list[int], list[int]]:
    """data with those escapes decoded, where each escape's character sits in the decoded text,
    and how many bytes longer data is up to and including it: `_escaped_offset` maps a secret
    found in the decoded text back onto its escaped form."""
    parts: list[bytes] = []
    starts: list[int] = []
    shifts: list[int] = []
    at = shift = 0
    for m in _ESCAPED.finditer(data):
        a, b = m.span()
        parts += [data[at:a], b"/" if b - a == 2 else bytes([int(data[b - 2 : b], 16)])]
        starts.append(a - shift)
        shift += b - a - 1
        shifts.append(shift)
        at = b
    parts.append(data[at:])
    return b"".join(parts), starts, shifts


def _escaped_offset(offset: int, starts: list[int], shifts: list[int]) -> int:
    """The offset in data of a decoded offset (an escape before it counts whole)."""
    k = bisect.bisect_left(starts, offset)
    return offset + (shifts[k - 1] if k else 0)


def _trigger(rule: Rule) -> str | None:
    return _GITLEAKS_TRIGGERS.get(rule.id) if rule.gitleaks else TRIGGERS.get(rule.id)


def _prefilter() -> str:
    """One RE2 pattern that flags every text some rule could change: the keywords of the rules
    without a trigger, the triggers of the others, and the escapes a secret may be written
    with. It stays small enough for RE2's DFA (with every rule's whole pattern in it, RE2 would
    fall back to its slow NFA)."""
    words = sorted({k for r in RULES if _trigger(r) is None for k in r.keywords}, key=len)
    triggers = sorted({t for r in RULES if (t := _trigger(r)) is not None} | {ESCAPE_TRIGGER})
    return "|".join(
        ["(?i:" + "|".join(re2.escape(k) for k in words[::-1]) + ")"]
        + [f"(?:{t})" for t in triggers]
    )


PREFILTER = _prefilter()


def _compile(pattern: str) -> Any:
    return re2.compile(pattern.encode())


@cache
def _compiled(index: int, glued: bool = False) -> Any:
    pattern = RULES[index].regex
    return _compile(pattern.replace(_B, "") if glued else pattern)


@cache
def _allow_regexes(allow: Allowlist) -> tuple[Any, ...]:
    return tuple(_compile(r) for r in allow.regexes)


@cache
def _keyword_set() -> Any:
    """Which keywords a text holds, all of them in one linear scan (RE2::Set)."""
    found = re2.Set.SearchSet(re2.Options())
    for k in KEYWORDS:
        found.Add(b"(?i)" + re2.escape(k).encode())
    found.Compile()
    return found


@lru_cache(maxsize=4096)
def _routed(keywords: frozenset[int]) -> tuple[int, ...]:
    """The rules (indices into RULES, in order) that texts holding these keywords run."""
    return tuple(sorted({i for k in keywords for i in _RULES_OF[KEYWORDS[k]]}))


def _entropy(secret: bytes) -> float:
    """Shannon entropy per character as gitleaks computes it (runes counted, bytes divided)."""
    n = len(secret)
    counts = Counter(secret.decode("utf-8", "replace"))
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _line(data: bytes, start: int, end: int) -> bytes:
    return data[data.rfind(b"\n", 0, start) + 1 : (data.find(b"\n", end) + 1 or len(data) + 1) - 1]


def _allowed(allow: Allowlist, secret: bytes, match: bytes, line: bytes) -> bool:
    target = {"match": match, "line": line}.get(allow.target, secret)
    by_regex = any(r.search(target) for r in _allow_regexes(allow))
    low = secret.decode("utf-8", "replace").lower()
    by_word = any(w in low for w in allow.stopwords)
    if not allow.need_all:
        return by_regex or by_word
    checks = [False] if allow.paths else []
    checks += [by_regex] if allow.regexes else []
    checks += [by_word] if allow.stopwords else []
    return all(checks)


def _secret_span(rule: Rule, m: Any) -> tuple[int, int]:
    if rule.secret_group:
        return m.span(rule.secret_group)
    for g in range(1, m.re.groups + 1):
        a, b = m.span(g)
        if a >= 0 and b > a:
            return a, b
    a, b = m.span()
    if rule.gitleaks:  # gitleaks trims newlines off a whole-match secret
        whole = m.group()
        a += len(whole) - len(whole.lstrip(b"\n"))
        b -= len(whole) - len(whole.rstrip(b"\n"))
    return a, b


def _spans(index: int, data: bytes, glued: bool = False) -> list[tuple[int, int]]:
    """Where rule `index` finds secrets in data (sorted, disjoint)."""
    rule = RULES[index]
    out: list[tuple[int, int]] = []
    for m in _compiled(index, glued).finditer(data):
        a, b = _secret_span(rule, m)
        if a < 0 or b <= a or (out and a < out[-1][1]):
            continue
        secret = data[a:b]
        if rule.entropy and _entropy(secret) <= rule.entropy:
            continue
        if rule.gitleaks:
            line = _line(data, *m.span())
            allows = (_GLOBAL_ALLOW, *rule.allowlists)
            if any(_allowed(al, secret, m.group(), line) for al in allows):
                continue
        out.append((a, b))
    return out


_MASK = re.compile(r"\*\*\*REDACTED-[0-9a-f]{4}\*\*\*")
_MASK_CHARS = len("***REDACTED-0000***")


def _mask(secret: bytes) -> bytes:
    return f"{MASK_PREFIX}-{hashlib.sha256(secret).hexdigest()[:4]}***".encode()


# Secrets glued into one run (`AKIA…AKIA…`) surface one per round, as each mask becomes the
# next one's boundary; past a few rounds the token boundary is dropped, so hostile text costs
# linear time, not a round per key.
_ROUNDS = 3


class _Redaction:
    """A text under redaction: its original bytes, the masked ranges of them (sorted, disjoint,
    with their masks), and the current text, so a position in either maps to the other."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.masks: list[tuple[int, int, bytes]] = []
        self.text = data

    def _cur_starts(self) -> list[tuple[int, int, int]]:
        """(current start, current end, shift before) of each mask."""
        out, shift = [], 0
        for start, end, mask in self.masks:
            out.append((start + shift, start + shift + len(mask), shift))
            shift += len(mask) - (end - start)
        return out

    def apply(self, spans: list[tuple[int, int]]) -> None:
        """Mask these ranges of the current text; a range that touches a mask absorbs it."""
        cur = self._cur_starts()
        starts = [c[0] for c in cur]
        new: list[tuple[int, int, bytes]] = []
        absorbed: set[int] = set()
        for a, b in spans:
            mask = _mask(self.text[a:b])
            first = max(bisect.bisect_right(starts, a) - 1, 0)
            lo = hi = None
            for k in range(first, len(cur)):
                cs, ce, _ = cur[k]
                if cs >= b:
                    break
                if ce > a:  # the span touches mask k: it goes with it
                    absorbed.add(k)
                    lo = self.masks[k][0] if lo is None else lo
                    hi = self.masks[k][1]
            start = self._orig(a, cur) if lo is None else min(lo, self._orig(a, cur))
            end = self._orig(b, cur) if hi is None else max(hi, self._orig(b, cur))
            if new and start < new[-1][1]:  # both absorbed one mask: one range
                start, end, mask = new[-1][0], max(end, new[-1][1]), new[-1][2]
                new.pop()
            new.append((start, end, mask))
        kept = [m for k, m in enumerate(self.masks) if k not in absorbed]
        self.masks = sorted(kept + new)
        self.rebuild()

    def rebuild(self) -> None:
        """The current text from the original and the masks."""
        parts, at = [], 0
        for start, end, mask in self.masks:
            parts += [self.data[at:start], mask]
            at = end
        parts.append(self.data[at:])
        self.text = b"".join(parts)

    def _orig(self, pos: int, cur: list[tuple[int, int, int]]) -> int:
        """Original offset of a current position outside the masks (or at a mask's edge)."""
        shift = 0
        for k, (cs, ce, before) in enumerate(cur):
            if ce <= pos:
                start, end, mask = self.masks[k]
                shift = before + len(mask) - (end - start)
            elif cs >= pos:
                break
            else:  # inside a mask: its start
                return self.masks[k][0]
        return pos - shift

    def current(self, orig: int) -> int:
        """Current offset of an original one (a masked one: its mask's start)."""
        shift = 0
        for (start, end, mask), (cs, _, before) in zip(self.masks, self._cur_starts(), strict=True):
            if orig < start:
                return orig + before
            if orig < end:
                return cs
            shift = before + len(mask) - (end - start)
        return orig + shift


def _redaction(data: bytes, unescape: bool = True) -> _Redaction:
    red = _Redaction(data)
    if unescape and _ESCAPED.search(data):
        # Secrets written with escapes are found in the decoded text and masked in this one,
        # with the hash of the secret itself. One level: `\x5cx5c…` decodes to more escapes
        # for as long as the text runs.
        decoded, starts, shifts = _unescaped(data)
        inner = _redaction(decoded, unescape=False)
        if inner.masks:
            red.masks = [
                (_escaped_offset(a, starts, shifts), _escaped_offset(b, starts, shifts), mask)
                for a, b, mask in inner.masks
            ]
            red.rebuild()
    found = _keyword_set().Match(red.text)
    if not found:
        return red
    rules = _routed(frozenset(found))
    for glued in [False] * _ROUNDS + [True]:
        changed = False
        for index in rules:
            spans = _spans(index, red.text, glued)
            if spans:
                red.apply(spans)
                changed = True
        if not changed:
            break
    return red


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:  # a range that split a lone surrogate's bytes
        return data.decode("utf-8", "replace")


def findings(text: str) -> list[tuple[str, str]]:
    """(rule id, secret) of each secret one rule finds in the text as it is (no masking between
    rules): what `forensics` would mask, for surveys and tests."""
    data = _encode(text)
    found = _keyword_set().Match(data)
    return [
        (RULES[i].id, _decode(data[a:b]))
        for i in _routed(frozenset(found or ()))
        for a, b in _spans(i, data)
    ]


def contains_secret(text: str | None) -> bool:
    return bool(text) and redact_text(text) != text


def redact_text(text: str | None) -> str | None:
    if not text:
        return text
    data = _encode(text)
    red = _redaction(data)
    return text if red.text is data else _decode(red.text)


# Context redacted around a cut: a secret that starts before the cut is recognised from its
# prefix (a JWT runs to a few KB), and one that runs past it is masked whole.
CONTEXT_BEFORE = 8192
CONTEXT_AFTER = 1024


def clip(text: str, limit: int, start: int = 0, ellipsis: str = "") -> str:
    """`limit` characters of text from `start`, cut from the redacted text: a secret across
    either cut is masked whole, and its mask is kept whole (it starts the clip when it starts
    before `start`, ends it when it runs past the limit). `ellipsis` is appended when text goes
    on past the clip."""
    begin = max(0, start - CONTEXT_BEFORE)
    # A private key block runs to many KB: a cut inside one reaches back to its BEGIN line.
    block = text.rfind("-----BEGIN ", max(0, start - 16 * CONTEXT_BEFORE), start)
    if block >= 0 and "-----END " not in text[block:start]:
        begin = min(begin, block)
    end = min(len(text), start + limit + CONTEXT_AFTER)
    window = text[begin:end]
    data = _encode(window)
    red = _redaction(data)
    at = red.current(len(_encode(window[: start - begin])))
    out = _decode(red.text[at:])
    keep = limit
    for m in _MASK.finditer(out, max(0, limit - _MASK_CHARS), limit + _MASK_CHARS):
        if m.start() < limit < m.end():
            keep = m.end()
    more = len(out) > keep or end < len(text)
    return out[:keep] + (ellipsis if more else "")


@lru_cache(maxsize=4096)
def redact_name(name: str) -> str:
    """A file path or run id, redacted; cached, since every row of a file repeats it."""
    return redact_text(name) or name


def flagged(array: pa.Array) -> pa.Array:
    """Which strings of the array may hold a secret (a superset of those redaction changes)."""
    return pc.match_substring_regex(array, PREFILTER)


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
        hits = pc.fill_null(flagged(array), False)
        if not pc.any(hits).as_py():
            return array
        candidates = pc.filter(array, hits).to_pylist()
        fixed = [redact_text(v) for v in candidates]
        if fixed == candidates:
            return array
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
        hits = flagged(pa.concat_arrays([a for _, a in leaves]))
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
