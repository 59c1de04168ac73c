"""Context overflows in every provider's wording (issue 21 item 6): each wording of
forensics/check/provider_errors.py matches its recorded example through the SQL macro the rules
call, errors that are not overflows stay out, and an overflow that failed the call with HTTP 400
is one incident of one cause, not also an http-error cause. Environment faults (issue 22): each
wording names its category through env_fault(), and tool results that are answers name none."""

from __future__ import annotations

import json
import re

import duckdb
import pytest

import forensics
from forensics.check import provider_errors
from forensics.check.provider_errors import (
    CONTEXT_OVERFLOW_WORDINGS,
    ENV_FAULT_CATEGORIES,
    ENV_FAULT_WORDINGS,
)

NOT_OVERFLOWS = [
    # rate limits speak of tokens too
    "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, "
    "Used 29000, Requested 5000.",
    "Error code: 429 - {'type': 'error', 'error': {'type': 'rate_limit_error', 'message': "
    "'This request would exceed the rate limit for your organization of 40,000 input tokens "
    "per minute.'}}",
    # an output cap above the model's, which is not the window
    "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for "
    "claude-sonnet-4-5",
    "Invalid 'messages[1].content': string too long. Expected a string with maximum length "
    "10485760, but got a string with length 10500000 instead.",
    "The security token included in the request is invalid.",
    "Request entity too large",
    None,
]


def _macro_matches(texts: list[str | None]) -> list[bool]:
    con = duckdb.connect()
    for macro in provider_errors.sql_macros():
        con.execute(macro)
    rows = con.execute(
        "select context_overflow(t) from unnest(?::varchar[]) with ordinality as u(t, i) "
        "order by i",
        [texts],
    ).fetchall()
    return [r[0] for r in rows]


@pytest.mark.parametrize("wording", CONTEXT_OVERFLOW_WORDINGS, ids=lambda w: w.pattern[:40])
def test_each_wording_matches_its_example_and_names_its_source(wording):
    assert re.search(wording.pattern, wording.example, re.IGNORECASE), wording
    assert wording.source.strip() and wording.provider.strip()


def test_the_macro_matches_every_example_and_no_other_error():
    examples = [w.example for w in CONTEXT_OVERFLOW_WORDINGS]
    assert _macro_matches(examples) == [True] * len(examples)
    assert _macro_matches(NOT_OVERFLOWS) == [False] * len(NOT_OVERFLOWS)


BEDROCK = "https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.nova-pro-v1%3A0/converse"
NOVA = (
    "Input Tokens Exceeded: Number of input tokens exceeds maximum length. Please update the "
    "input to a value less than or equal to 300000."
)


def test_a_bedrock_overflow_is_one_incident_of_context_overflow(tmp_path):
    request = {
        "messages": [{"role": "user", "content": [{"text": "Summarise this log: …"}]}],
        "inferenceConfig": {"maxTokens": 1024},
    }
    record = {
        "request": {"url": BEDROCK, "body": request},
        "response": {"status": 400, "body": {"message": NOVA}},
    }
    path = tmp_path / "capture.jsonl"
    path.write_text(json.dumps(record) + "\n")
    result = forensics.scan([str(path)])
    found = sorted((f["rule"], f["turn_index"]) for f in result.findings.iter_rows(named=True))
    # one failed call, one finding: the overflow is not also an http-error (issue 21 class 6)
    assert found == [("context-overflow", 1)]
    (cause,) = result.diagnosis.causes
    assert cause.id == "context-overflow" and cause.incidents == 1


# --- environment faults in tool results and span statuses (issue 22 item 2) -----------------

# Tool results from real runs that are answers, not environment faults: domain errors, a text
# browser's find-in-page miss, a harness's parse error, prices and sizes that look like statuses,
# a compiler's "overloaded" and a file listing.
NOT_ENV_FAULTS = [
    "Error: user not found",  # tau-bench retail, a domain answer
    "Error: Reservation ZFA04Y not found",  # tau2 airline
    "The search string 'equine veterinarian' was not found on this page.",  # TRAIL GAIA find
    "Error in code parsing:\nYour code snippet is invalid, because the regex pattern "
    "```(?:py|python)?\\n(.*?)\\n``` was not found in it.",  # smolagents, the model's format
    '{"flight_number": "HAT277", "date": "2024-05-25", "price": 501}',  # tau-bench airline
    "-rwxr-xr-x 1 root root  404 Jul 17 01:31 build_and_push_docker.sh",  # mini-swe-agent ls
    "error: call of overloaded 'max(int&, long int&)' is ambiguous",  # g++
    "TypeError: PageDownTool.forward() got an unexpected keyword argument ''",  # model's call
    '{"status": "unavailable", "message": "The website www.randomsite123.com is unavailable"}',
    None,
]


def _env_faults(texts: list[str | None]) -> list[str | None]:
    con = duckdb.connect()
    for macro in provider_errors.sql_macros():
        con.execute(macro)
    rows = con.execute(
        "select env_fault(t) from unnest(?::varchar[]) with ordinality as u(t, i) order by i",
        [texts],
    ).fetchall()
    return [r[0] for r in rows]


@pytest.mark.parametrize("wording", ENV_FAULT_WORDINGS, ids=lambda w: w.category)
def test_each_env_fault_wording_matches_its_example_and_names_its_source(wording):
    assert wording.category in ENV_FAULT_CATEGORIES
    assert re.search(wording.pattern, wording.example, re.IGNORECASE), wording
    assert wording.source.strip()


def test_env_fault_names_the_category_of_every_example_and_of_no_answer():
    examples = [w.example for w in ENV_FAULT_WORDINGS]
    assert _env_faults(examples) == [w.category for w in ENV_FAULT_WORDINGS]
    assert _env_faults(NOT_ENV_FAULTS) == [None] * len(NOT_ENV_FAULTS)


def test_a_read_timeout_is_a_timeout_and_a_429_retry_error_a_rate_limit():
    # Categories are tried in order: the first that matches names the fault.
    assert _env_faults(
        [
            "HTTPSConnectionPool(host='api.example.com', port=443): Read timed out. "
            "(read timeout=30)",
            "HTTPSConnectionPool(host='serpapi.com', port=443): Max retries exceeded with url: "
            "/search (Caused by ResponseError('too many 429 error responses'))",
            "curl: (6) Could not resolve host: pypi.org",
        ]
    ) == ["timeout", "rate-limited", "unreachable"]
