"""Calls written as server markup inside the reasoning (issue 21 item 7): a swallowed call is a
complete, parseable call to an offered tool that ends the reasoning; markup quoted in prose is
not one."""

from __future__ import annotations

import pytest

from forensics.check import markupcalls

QWEN3_CODER = (
    "The user wants the weather.\n<tool_call>\n<function=get_current_weather>\n"
    "<parameter=location>\nBoston, MA\n</parameter>\n</function>\n</tool_call>"
)


def _errors(reasoning, fmt, offered=None):
    calls = markupcalls.parse(reasoning, fmt, offered)
    return None if calls is None else [c["error"] for c in calls]


def test_qwen3_coder_call_is_read_with_its_parameters():
    (call,) = markupcalls.parse(QWEN3_CODER, "qwen3_coder", ["get_current_weather"])
    assert call == {
        "name": "get_current_weather",
        "arguments": '{"location": "Boston, MA"}',
        "error": None,
    }


@pytest.mark.parametrize(
    ("reasoning", "fmt", "offered", "error"),
    [
        (QWEN3_CODER + "\n</think>\n<|im_end|>", "qwen3_coder", None, None),
        (QWEN3_CODER + "\nWait, I should ask first.", "qwen3_coder", None, "goes on after it"),
        (QWEN3_CODER, "qwen3_coder", ["get_forecast"], "no tool the request offered"),
        ('Use `<tool_call>{"name": "f", "arguments": {}}</tool_call>`', "hermes", None, "quoted"),
        ('<tool_call>\n{"name": <function-name>}\n</tool_call>', "hermes", None, "not valid JSON"),
        ("<tool_call>lookup\n<arg_key>id</arg_key>\n<arg_value>7</arg_value>\n</tool_call>",
         "glm45", ["lookup"], None),
        ('<tool_call>\n{"name": "f", "arguments": "{bad"}\n</tool_call>', "hermes", None,
         "arguments not valid JSON"),
    ],
)  # fmt: skip
def test_what_makes_markup_a_call_or_not(reasoning, fmt, offered, error):
    (got,) = _errors(reasoning, fmt, offered)
    if error is None:
        assert got is None
    else:
        assert got is not None and error in got


def test_only_the_end_of_a_long_reasoning_is_read():
    # the call ends the reasoning: what comes before the last TAIL characters is never searched
    lead = "<tool_call>{" * 200_000
    assert _errors(lead + QWEN3_CODER, "qwen3_coder") == [None]
    assert _errors(QWEN3_CODER + " " * markupcalls.TAIL, "qwen3_coder") == [
        "markup without a complete call (no closing marker)"
    ]


def test_a_format_not_parsed_here_is_left_to_the_markup_alone():
    assert _errors("<|tool_calls_section_begin|> …", "kimi_k2") is None
