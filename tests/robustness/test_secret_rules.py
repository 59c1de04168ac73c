"""The secret rules: gitleaks' default rules as vendored and adjusted, forensics' own, and the
scan that routes a text to them (issue 24: secret shapes from a maintained rule set)."""

import hashlib
import json
import re
import tomllib
from pathlib import Path

import pyarrow as pa
import pytest
import re2

import forensics.redact as redact_mod
from forensics.redact import (
    DATA,
    EXCLUDED,
    GITLEAKS_RULES,
    KEYWORDS,
    MASK_PREFIX,
    RULES,
    findings,
    flagged,
    redact_text,
)

SAMPLES = json.loads((Path(__file__).parent / "gitleaks" / "gitleaks_samples.json").read_text())
GITLEAKS = tomllib.loads((DATA / "gitleaks.toml").read_text())
ADJUSTMENTS = tomllib.loads((DATA / "adjustments.toml").read_text())
IDS = {r["id"] for r in GITLEAKS["rules"]}
# Samples of gitleaks' tests that forensics' adjustments (adjustments.toml) do not find, by design.
NOT_FOUND = {
    # replaced: the bare 40-hex alternative (a git commit id) is gone.
    ("sourcegraph-access-token", "sourcegraph: 6d2FabeB6ADd229Bc199FabA28fD3efb57dF0bD3"),
}

# ... and gitleaks' false positives that forensics masks: its terminator lets a key be followed
# by `.` and a letter, so that `run-sk_live_….jsonl` is masked (adjustments.toml).
MASKED_ANYWAY = {
    (
        "infracost-api-token",
        "http://assets.r7.com/assets/media_box_tv_tres_colunas/video_box.ico-7a388b69018576d24b"
        "59331fd60aab0c.png",
    ),
}


def M(secret: str) -> str:
    return f"{MASK_PREFIX}-{hashlib.sha256(secret.encode()).hexdigest()[:4]}***"


def test_the_vendored_rules_name_their_source():
    source = (DATA / "SOURCE.md").read_text()
    commit = re.search(r"commit: `([0-9a-f]{40})`", source).group(1)
    assert SAMPLES["commit"] == commit
    assert "MIT License" in (DATA / "LICENSE.gitleaks").read_text()
    assert len(GITLEAKS["rules"]) > 200


def test_every_adjustment_names_a_rule_and_says_why():
    for entry in ADJUSTMENTS["excluded"] + ADJUSTMENTS["replaced"]:
        assert entry["id"] in IDS and len(entry["reason"]) > 40, entry
    for entry in ADJUSTMENTS["trigger"]:
        assert entry["id"] in IDS and entry["id"] not in EXCLUDED
    assert {r.id for r in GITLEAKS_RULES} == IDS - set(EXCLUDED)
    # the terminator it replaces is the one gitleaks' rules end with
    old = ADJUSTMENTS["terminator"]["gitleaks"]
    assert sum(old in r.get("regex", "") for r in GITLEAKS["rules"]) > 100


def test_every_rule_compiles_in_re2():
    for index, rule in enumerate(RULES):
        assert redact_mod._compiled(index).pattern, rule.id
        assert redact_mod._compiled(index, glued=True).pattern, rule.id
    re2.compile(redact_mod.PREFILTER)


@pytest.mark.parametrize(
    "sample",
    [s for s in SAMPLES["samples"] if s["kind"] == "tps" and s["rule"] in IDS],
    ids=lambda s: s["rule"],
)
def test_gitleaks_finds_its_own_true_positives(sample):
    """Each rule, as forensics compiles and applies it (RE2, keywords, entropy, allowlists),
    finds what gitleaks' own tests say it must, and the text is redacted."""
    if sample["rule"] in EXCLUDED or (sample["rule"], sample["text"]) in NOT_FOUND:
        assert sample["rule"] not in {rule for rule, _ in findings(sample["text"])}
        return
    assert sample["rule"] in {rule for rule, _ in findings(sample["text"])}
    assert redact_text(sample["text"]) != sample["text"]


@pytest.mark.parametrize(
    "sample",
    [s for s in SAMPLES["samples"] if s["kind"] == "fps" and s["rule"] in IDS],
    ids=lambda s: s["rule"],
)
def test_gitleaks_rules_pass_over_their_own_false_positives(sample):
    found = sample["rule"] in {rule for rule, _ in findings(sample["text"])}
    assert found == ((sample["rule"], sample["text"]) in MASKED_ANYWAY)


# (text, output): shapes nothing masked before issue 24.
NEW_SHAPES = [
    (
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17F53"
        "16E2BAC89\n\nhQEMA0VzZ2t3aGl6AQf/Ym9keTEy\n-----END RSA PRIVATE KEY-----",
        "-----BEGIN RSA PRIVATE KEY-----"
        + M(
            "\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17F5316E2BAC89\n\n"
            "hQEMA0VzZ2t3aGl6AQf/Ym9keTEy\n"
        )
        + "-----END RSA PRIVATE KEY-----",
    ),
    (
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\nlQOYBGXk3mMBCADm7Ym9k\n=Zx9q\n"
        "-----END PGP PRIVATE KEY BLOCK-----",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----"
        + M("\nVersion: GnuPG v2\n\nlQOYBGXk3mMBCADm7Ym9k\n=Zx9q\n")
        + "-----END PGP PRIVATE KEY BLOCK-----",
    ),
    (
        '{"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY", '
        '"SessionToken": "IQoJb3JpZ2luX2VjEJr//////////wEaCXVz"}',
        f'{{"SecretAccessKey": "{M("wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY")}", '
        f'"SessionToken": "{M("IQoJb3JpZ2luX2VjEJr//////////wEaCXVz")}"}}',
    ),
    (
        "token ya29.a0AfB_byC3dE4fG5hI6jK7lM8nO9pQ0rS1tU2 ok",
        f"token ya29.{M('a0AfB_byC3dE4fG5hI6jK7lM8nO9pQ0rS1tU2')} ok",
    ),
    (
        "refresh: 1//0gLx2Yk3mN4pQ5rS6tU7vW8xY9zA0bC1dE2",
        f"refresh: 1//{M('0gLx2Yk3mN4pQ5rS6tU7vW8xY9zA0bC1dE2')}",
    ),
    (
        "app xapp-1-A0123456789-1234567890123-0a1b2c3d4e5f60718293a4b5c6d7e8f9 started",
        f"app {M('xapp-1-A0123456789-1234567890123-0a1b2c3d4e5f60718293a4b5c6d7e8f9')} started",
    ),
    (
        "POST https://hooks.slack.com/services/T01234567/B0123456789/AbCdEfGhIjKlMnOpQrStUvWx",
        f"POST {M('https://hooks.slack.com/services/T01234567/B0123456789/AbCdEfGhIjKlMnOpQrStUvWx')}",
    ),
    (
        "Cookie: sessionid=8f2a9c1e7b3d4f6a; csrftoken=Zq8Xw7Vu6Ts5Rq4P\r\nHost: x",
        f"Cookie: {M('sessionid=8f2a9c1e7b3d4f6a; csrftoken=Zq8Xw7Vu6Ts5Rq4P')}\r\nHost: x",
    ),
    (
        "{'Set-Cookie': '__Host-sid=AbCdEf123456; Path=/; Secure'}",
        f"{{'Set-Cookie': '{M('__Host-sid=AbCdEf123456; Path=/; Secure')}'}}",
    ),
    (
        "charge with sk_live_51HxYzAbCdEfGhIjKlMnOpQrStUv.",
        f"charge with {M('sk_live_51HxYzAbCdEfGhIjKlMnOpQrStUv')}.",
    ),
    (
        "using gsk_8Kx2mP9qR4tV7wY1zB3cD5fG6hJ8kL0n now",
        f"using gsk_{M('8Kx2mP9qR4tV7wY1zB3cD5fG6hJ8kL0n')} now",
    ),
    (
        "using xai-Ab3De6Gh9Jk2Mn5Pq8St1Vw4Yz7Bc0Ef3 now",
        f"using xai-{M('Ab3De6Gh9Jk2Mn5Pq8St1Vw4Yz7Bc0Ef3')} now",
    ),
    (
        "GET /callback?code=4/0AbCdEfGhIjKlMnOpQrStUvWxYz0123&state=xyz",
        f"GET /callback?code={M('4/0AbCdEfGhIjKlMnOpQrStUvWxYz0123')}&state=xyz",
    ),
    (
        '{"private_key_id": "3f2a9c1e7b3d4f6a8b0c2d4e6f8a0b1c2d3e4f50"}',
        f'{{"private_key_id": "{M("3f2a9c1e7b3d4f6a8b0c2d4e6f8a0b1c2d3e4f50")}"}}',
    ),
    # gitleaks' shapes where a log puts them: JSON inside a JSON string, before a comma
    (
        r"{\"key\": \"dapi0123456789abcdef0123456789abcdef\"}",
        rf"{{\"key\": \"{M('dapi0123456789abcdef0123456789abcdef')}\"}}",
    ),
    (
        "npm_Ab3De6Gh9Jk2Mn5Pq8St1Vw4Yz7Bc0Ef3Hi6, next",
        f"{M('npm_Ab3De6Gh9Jk2Mn5Pq8St1Vw4Yz7Bc0Ef3Hi6')}, next",
    ),
]


@pytest.mark.parametrize(("text", "expected"), NEW_SHAPES)
def test_shapes_missed_before_are_masked(text, expected):
    out = redact_text(text)
    assert out == expected
    assert redact_text(out) == out
    assert flagged(pa.array([text]))[0].as_py()


# Agent-log text that names credentials without holding one, or holds ids and hashes.
HEALTHY = [
    "commit 6d2fabeb6add229bc199faba28fd3efb57df0bd3 of sourcegraph/sourcegraph",
    "cookie = get_pin_and_cookie_name(self.app)",
    "    def set(self, cookie: Morsel[str], value: str | None = None) -> None:",
    ":param cookie: The cookie header as a string.",
    'if line == "-----BEGIN OPENSSH PRIVATE KEY-----":\n    key = read_key(lines)\n',
    '_HEADER = b"-----BEGIN RSA PRIVATE KEY-----"  # the file\'s first line',
    "GET /status?code=200 HTTP/1.1",
    "Our offices in Asia and Europe are open.",
    "s.strip() removes the whitespace; items.sort() sorts.",
    'cache_key: "3f2a9c1e7b3d4f6a8b0c2d4e6f8a0b1c"',
    '{"idempotency_key": "0f8c1e2d3a4b5c6d7e8f9a0b1c2d3e4f"}',
    "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "test_api_key_is_rotated PASSED [ 42%]",
    "next_token was None, so the listing ended",
    "The curl command failed: curl -s https://example.com/health",
]


@pytest.mark.parametrize("text", HEALTHY)
def test_ids_hashes_and_words_stay_readable(text):
    assert redact_text(text) == text


def test_no_keyword_is_inside_a_mask():
    """Masks route no rule, so a second pass over a redacted text costs one keyword scan."""
    for digest in ("0000", "abcd", "ef01", "9999", "dead", "beef"):
        mask = f"{MASK_PREFIX}-{digest}***".lower()
        assert not [k for k in KEYWORDS if k in mask]


def _trigger_matches(rule, text):
    trigger = redact_mod._trigger(rule)
    if trigger is None:
        return any(k in text.lower() for k in rule.keywords)
    return re2.search(trigger, text) is not None


@pytest.mark.parametrize(
    "text",
    [t for t, _ in NEW_SHAPES]
    + [s["text"] for s in SAMPLES["samples"] if s["kind"] == "tps"]
    + [
        "Authorization: Bearer abc.def.ghi",
        "sk-proj-Ab3dEf6hIj9kLm2nOp5q",
        "https://bob:pw1234@h/x",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJ",
        "k=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0",
        "text hf_abcdefghijklmnopqrstuvwxyzABCD",
    ],
)
def test_a_rule_finds_nothing_where_its_trigger_or_keyword_is_missing(text):
    """Over a column a rule is looked for by its trigger (or keywords): every match it makes
    must contain that, or the scan would pass over a value that holds a secret."""
    by_id = {r.id: r for r in RULES}
    for rule_id, _ in findings(text):
        assert _trigger_matches(by_id[rule_id], text), rule_id


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # JSON's \u002d (a parser turns it into `-`): the key's own mask, on its escaped form
        (
            r'{"key": "sk\u002dproj-Qz7Lk2Vb9Xw4Rt6Yp1Nm8Hc3"}',
            rf'{{"key": "sk\u002d{M("proj-Qz7Lk2Vb9Xw4Rt6Yp1Nm8Hc3")}"}}',
        ),
        # Python's \x5f in a tool_code call
        (
            r'login(key="gsk\x5fGq4Rw6Ty8Ui0Op2As4Df6Gh8Jk0L")',
            rf'login(key="gsk\x5f{M("Gq4Rw6Ty8Ui0Op2As4Df6Gh8Jk0L")}")',
        ),
        # PHP's \/ inside a base64 secret: the value no longer stops at the backslash
        (
            r'"SecretAccessKey": "wJalrXUtnFEMI\/K7MDENG\/bPxRfiCYzEXAMPLEKEY"',
            f'"SecretAccessKey": "{M("wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY")}"',
        ),
        # every character escaped
        (
            r"key \u0073\u006b\u002d\u0070roj-Qz7Lk2Vb9Xw4Rt6Yp1Nm8Hc3 end",
            rf"key \u0073\u006b\u002d{M('proj-Qz7Lk2Vb9Xw4Rt6Yp1Nm8Hc3')} end",
        ),
    ],
)
def test_a_key_written_with_escapes_is_masked_where_it_stands(text, expected):
    assert redact_text(text) == expected
    assert flagged(pa.array([text]))[0].as_py()


def test_escapes_are_decoded_one_level_deep():
    """`\\x5cx5c…` decodes to another escape for as long as it runs: one level is decoded, so
    a megabyte of it costs one pass, not one per level."""
    text = r"\x5c" + "x5c" * 300_000
    assert redact_text(text) == text
    # the other escapes of terminal output and HTML-safe JSON are no key
    assert redact_text(r"\x1b[31mred\x1b[0m \u003cb\u003e") == r"\x1b[31mred\x1b[0m \u003cb\u003e"
