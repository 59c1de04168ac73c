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


def _errors(reasoning, fmt, offered=None, content=None):
    calls = markupcalls.parse(reasoning, content, fmt, offered)
    return None if calls is None else [c["error"] for c in calls]


def test_qwen3_coder_call_is_read_with_its_parameters():
    (call,) = markupcalls.parse(QWEN3_CODER, None, "qwen3_coder", ["get_current_weather"])
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


def test_an_inline_reasoning_block_is_read_from_content():
    call = '{"name": "get_weather", "arguments": {}}'
    content = f"<think>\nI need the weather.\n<tool_call>\n{call}\n</tool_call>"
    assert _errors(None, "hermes", None, content) == [None]


def test_a_format_not_parsed_here_is_left_to_the_markup_alone():
    assert _errors("<|tool_calls_section_begin|> …", "kimi_k2") is None
