"""The derived signals the catalogue rules read, checked one by one (forensics/check/enrich.py).

Tool-call markup: every example string of the failure catalogue §1.2 must be named by the
parser that reads it, prose about the tags must not, and the model id must settle the formats
two parsers share. Announcements, exact tail loops and request keys get their edge cases here;
tests/check/test_accuracy.py measures the rules built on them.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from forensics import schema
from forensics.check.enrich import _tail_loop, enrich

# failure-catalogue §1.2, one example per format (verbatim where the catalogue quotes one).
MARKUP = {
    "hermes": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    "llama3_json": '<|python_tag|>{"name":"xxx", "arguments":{"a": 1}}',
    "pythonic": "[get_weather(city='San Francisco', metric='celsius'), "
    "get_weather(city='Seattle', metric='celsius')]",
    "llama4_pythonic": "<|python_start|>[get_weather(city='Paris')]<|python_end|>",
    "qwen3_coder": "<tool_call>\n<function=get_current_weather>\n<parameter=location>\nBoston, MA"
    "\n</parameter>\n</function>\n</tool_call>",
    "seed_oss": "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n"
    "</function>\n</seed:tool_call>",
    "deepseek_v3": "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>"
    'get_current_weather\n```json\n{"location": "Beijing"}\n```<｜tool▁call▁end｜>'
    "<｜tool▁calls▁end｜><｜end▁of▁sentence｜>",
    "deepseek_v31": "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_current_weather"
    '<｜tool▁sep｜>{"location": "Tokyo"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
    "deepseek_v32": "<｜DSML｜function_calls>\n"
    '    <｜DSML｜invoke name="get_favorite_tourist_spot">\n'
    '    <｜DSML｜parameter name="city" string="true">San Francisco</｜DSML｜parameter>\n'
    "</｜DSML｜invoke>\n</｜DSML｜function_calls>",
    "glm45": "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>北京</arg_value>\n"
    "</tool_call>",
    "glm47": "<tool_call>get_weather<arg_key>city</arg_key><arg_value>北京</arg_value></tool_call>",
    "mistral": '[TOOL_CALLS] [{"name": "get_current_weather", "arguments": {"location": "MA"}}]',
    "kimi_k2": "<|tool_calls_section_begin|> <|tool_call_begin|> functions.list_directory:0 "
    '<|tool_call_argument_begin|> {"path": "/some/path"} <|tool_call_end|> '
    "<|tool_calls_section_end|>",
    "longcat": '<longcat_tool_call>\n{"name": "func1", "arguments": {}}\n</longcat_tool_call>',
    "granite": '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
    "granite-20b-fc": '<function_call> {"name": "get_weather", "arguments": {"city": "Paris"}}',
    "internlm": 'What?<|action_start|> <|plugin|>\n{"name": "get_weather", "parameters": '
    '{"location": "Tokyo"}}<|action_end|>',
    "jamba": '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Paris"}}]</tool_calls>',
    "hunyuan_a13b": '<answer>\n<tool_calls>[{"name": "get_weather", "arguments": {}}]</tool_calls>',
    "hy_v3": "<tool_calls>\n<tool_call>function_name<tool_sep>\n<arg_key>key1</arg_key>\n"
    "<arg_value>value1</arg_value>\n</tool_call>\n</tool_calls>",
    "minimax": '<tool_calls>\n{"name": "get_weather", "arguments": {}}\n</tool_calls>',
    "minimax_m2": '<minimax:tool_call>\n  <invoke name="exec">\n    <parameter name="command">ls'
    "</parameter>\n  </invoke>\n</minimax:tool_call>",
    "openai": "<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>"
    '{"city":"x"}<|call|>',
    "xlam": '[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
    "step3": "<｜tool_calls_begin｜>\n<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke "
    'name="function_name">\n<steptml:parameter name="param1">value1</steptml:parameter>\n'
    "</steptml:invoke><｜tool_call_end｜>\n<｜tool_calls_end｜>",
    "phi4_mini_json": 'functools[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
    "functiongemma": "<start_function_call>call:get_weather{location:<escape>London<escape>}"
    "<end_function_call>",
    "gemma4": "<|tool_call>call:terminal{...}<tool_call|>",
    "olmo3": '<function_calls>get_weather(city="Paris")\nget_time(tz="CET")</function_calls>',
    "unwrapped_json": '{"name": "calculator", "arguments": {"expr": "17 * 23"}}',
}
# Variants the reports describe (§3.1) that must land on the same parser.
VARIANTS = {
    "qwen3_coder": "I'll search.\n<function=glob>\n<parameter=pattern>*.py</parameter>\n"
    "</function>\n</tool_call>",  # opener dropped after prose (ollama #18530)
    # stripped Harmony that still calls a tool
    "openai": "analysisNeed weather.assistantcommentary to=functions.get_weather json"
    '{"city": "Paris"}',
    "mistral": '[TOOL_CALLS]add{"a": 3.5, "b": 4}',  # v11+ tokenizer
    "granite": '<tool_call>[{"name": "get_weather", "arguments": {"city": "Paris"}}]',  # 3.1+
    "llama3_json": '{"name": "web_search", "parameters": {"query": "你好"}}',  # no python_tag
    "glm47": "<tool_call>list_all_product_types</tool_call>",  # a call without arguments
    # Gemma 3's tool_code fence after prose (vllm #14734)
    "pythonic": "I can help with that. Let me filter the dataframe.\n```tool_code\n"
    '[filter_dataframe_by_search_term(search_term="ACME")]\n```',
}
NOT_MARKUP = [
    "You can call tools with the <tool_call> tag; I will not do that here.",
    "Internally my actions are [TOOL_CALLS] lists, but you don't need to worry about that.",
    "[Note] Your order #W123 was delivered.",
    '{\n  "message": "Your reservation EHGLP3 is confirmed."\n}',  # tau2 JSON-wrapped reply
    'Thought: I need the user id.\nAction:\n{"name": "find_user_id_by_email", "arguments": {}}',
    # stripped Harmony without a call: reasoning shown as the answer (control-token-leak)
    "analysisWe need to add 2+2.assistantfinalfour",
]


def _turns(rows: list[dict[str, Any]]):
    full = []
    for index, row in enumerate(rows):
        r: dict[str, Any] = dict.fromkeys(schema.RAW_TURNS.names)
        r.update(trajectory_id=row.pop("trajectory_id", f"t{index}"), turn_index=0)
        r.update(role="assistant", actor="agent", tool_calls=[])
        r.update(row)
        full.append(r)
    return enrich(pa.Table.from_pylist(full, schema=schema.RAW_TURNS))


def _formats(texts: list[str], **fields: Any) -> list[str | None]:
    df = _turns([{"content": t, **fields} for t in texts])
    return df.sort("trajectory_id")["tool_markup_format"].to_list()


@pytest.mark.parametrize("parser", sorted(MARKUP))
def test_catalogue_example_names_its_parser(parser):
    assert _formats([MARKUP[parser]]) == [parser]


@pytest.mark.parametrize("parser", sorted(VARIANTS))
def test_reported_variant_names_its_parser(parser):
    assert _formats([VARIANTS[parser]]) == [parser]


def test_prose_and_replies_are_not_markup():
    assert _formats(NOT_MARKUP) == [None] * len(NOT_MARKUP)


def test_model_settles_formats_two_parsers_share():
    bare_array = MARKUP["xlam"]
    assert _formats([bare_array], model="mistralai/Mistral-Small-3.1-24B-Instruct-2503") == [
        "mistral"
    ]
    assert _formats([MARKUP["hermes"]], model="baidu/ERNIE-4.5-21B-A3B-Thinking") == ["ernie45"]


def test_markup_location_reasoning_and_tool_name():
    df = _turns(
        [
            {
                "trajectory_id": "a",
                "content": None,
                "reasoning": "Let me call it.\n" + MARKUP["qwen3_coder"],
            },
            {
                "trajectory_id": "b",
                "content": "<think>\n" + MARKUP["hermes"] + "\n</think>\n\nDone.",
            },
            {
                "trajectory_id": "c",
                "tool_calls": [
                    {
                        "id": "1",
                        "name": "read<arg_key>path</arg_key><arg_value>/x</arg_value>",
                        "arguments": "{}",
                    }
                ],
            },
            {
                "trajectory_id": "d",
                "role": "user",
                "actor": "user_sim",
                "content": MARKUP["hermes"],
            },
        ]
    ).sort("trajectory_id")
    assert df["tool_markup_format"].to_list() == ["qwen3_coder", "hermes", "glm47", None]
    assert df["tool_markup_in"].to_list() == ["reasoning", "reasoning", "tool_name", None]


ANNOUNCE = [
    "Thanks! Let me look up your account and your recent orders now.",
    "Sure. One moment while I pull up that order.",
    "Great, I'll check the status of order #W2378156 right away.",
    "Checking your reservation now.",
    "I am going to cancel the reservation for you.",
]
NOT_ANNOUNCE = [
    "Please confirm with yes and I'll proceed with the cancellation.",  # asks
    "Once you confirm, I'll cancel the order.",  # conditional
    "If you need anything else, let me know.",
    "Could you give me your email? Then I will look up your order.",
    "Your order has been cancelled and the refund is on its way.",
    "I'll be happy to help you further.",  # no action verb
]


def test_announcements():
    flags = _turns(
        [{"content": t, "trajectory_id": f"{i:02d}"} for i, t in enumerate(ANNOUNCE + NOT_ANNOUNCE)]
    )
    got = flags.sort("trajectory_id")["announces_action"].to_list()
    assert got == [True] * len(ANNOUNCE) + [False] * len(NOT_ANNOUNCE)


def test_handoff_phrase_counts_only_without_a_transfer_call():
    handoff = "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON."
    rows = []
    for tid, tool in (
        ("after-transfer", "transfer_to_human_agents"),
        ("after-lookup", "get_user_details"),
    ):
        rows.append(
            {"trajectory_id": tid, "tool_calls": [{"id": "1", "name": tool, "arguments": "{}"}]}
        )
        rows.append({"trajectory_id": tid, "role": "tool", "actor": "env", "content": "ok"})
        rows.append({"trajectory_id": tid, "content": handoff})
    df = _turns(rows)
    flags = {
        (r["trajectory_id"], r["content"]): r["announces_action"]
        for r in df.iter_rows(named=True)
        if r["content"] == handoff
    }
    assert flags == {("after-transfer", handoff): False, ("after-lookup", handoff): True}


def test_tail_loop_period_and_coverage():
    unit = "I need to investigate this. Let\n me just paste the message.\n</think>"
    opening = "Okay, the user wants to know why the deploy fails; the log mentions a missing key. "
    assert _tail_loop(opening + unit * 3) == (len(unit), 3 * len(unit))
    # cut mid-unit, as max_tokens leaves it: still periodic
    period, chars = _tail_loop(opening + unit * 4 + unit[:20])
    assert period == len(unit) and chars >= 4 * len(unit)
    assert _tail_loop("items " * 80)[0] == len("items ")
    assert _tail_loop(opening + unit * 2) is None  # two copies are not a loop
    period, chars = _tail_loop(opening * 3)  # a whole sentence looping is a loop too
    assert period == len(opening) and chars == 3 * len(opening) - 1  # its final space trimmed
    listing = "".join(
        f"{i}. Flight HAT{100 + 7 * i:03d}, economy ${120 + 13 * i}\n" for i in range(9)
    )
    assert _tail_loop(listing) is None


def test_request_keys_private_and_foreign():
    df = _turns(
        [
            {
                "request_keys": [
                    "_trace_id",
                    "messages",
                    "messages[].cache_control",
                    "messages[].content",
                    "messages[].metadata._db_id",
                    "messages[].reasoning_content",
                    "messages[].role",
                    "messages[].tool_calls[].function.name",
                    "model",
                ]
            }
        ]
    )
    row = df.row(0, named=True)
    assert row["request_private_keys"] == ["_trace_id", "messages[].metadata._db_id"]
    assert row["request_foreign_keys"] == ["messages[].cache_control"]
