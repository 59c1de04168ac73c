"""Printed SDK objects in text logs: OpenAI ChatCompletion / ChatCompletionMessage reprs,
LangChain messages (repr, str form, inside a LangGraph state dict)."""

from __future__ import annotations

import json

import forensics
from forensics.ingest.parse import embedded, sdk_repr

from conftest import DATA

SDK = DATA / "traces" / "sdk_repr"


def found(result) -> list[tuple[str, int, int]]:
    f = result.findings
    return sorted(zip(f["rule"], f["turn_index"], f["source_line"], strict=True))


def test_real_printed_chat_completion_cut_inside_think_is_found():
    result = forensics.scan([str(SDK / "qwen3_truncated_print.log")])
    assert result.rejects.is_empty()
    turn = result.turns.row(0, named=True)
    assert (turn["role"], turn["finish_reason"], turn["output_tokens"]) == (
        "assistant",
        "max_tokens",
        10,
    )
    assert turn["model"] == "/data/models_ckpt/Qwen3-32B" and turn["source_line"] == 6
    assert found(result) == [
        ("max-tokens", 0, 6),
        ("thinking-budget-exhausted", 0, 6),
        ("unclosed-think", 0, 6),
    ]


def test_langgraph_state_dict_and_str_form_messages():
    result = forensics.scan([str(SDK / "langgraph_prints.log")])
    assert result.rejects.is_empty()
    turns = result.turns
    assert turns["role"].to_list() == ["user", "assistant", "tool", "assistant", "assistant"]
    call = turns.row(1, named=True)
    assert call["tool_calls"] == [
        {"id": "call_t1x9", "name": "get_weather", "arguments": '{"city": "Berlin"}'}
    ]
    assert (call["finish_reason"], call["input_tokens"], call["model"]) == (
        "tool_calls",
        180,
        "qwen3:8b",
    )
    assert turns.row(2, named=True)["content"] == "cloudy, 12°C"
    cut = turns.row(4, named=True)
    assert cut["source_line"] == 4 and cut["finish_reason"] == "max_tokens"
    # The call LangChain could not parse stays a call, its raw arguments kept.
    assert cut["tool_calls"][0]["arguments"].endswith('"date": "2025-11-0')
    assert found(result) == [("malformed-tool-call", 4, 4), ("max-tokens", 4, 4)]


def test_nested_objects_become_dicts_and_nothing_is_evaluated():
    text = (
        "resp: ChatCompletion(id='x', choices=[Choice(finish_reason='stop', index=0, "
        "message=ChatCompletionMessage(content='hi', role='assistant', tool_calls=["
        "ChatCompletionMessageFunctionToolCall(id='c1', function=Function(arguments="
        "'{\"a\": 1}', name='f'), type='function')]))], usage=CompletionUsage("
        "completion_tokens=-1, prompt_tokens=__import__('os').getpid()))"
    )
    ((start, _end, value, error),) = sdk_repr.find(text)
    assert start == 6 and error is None
    assert value["choices"][0]["message"]["tool_calls"][0]["function"] == {
        "__class__": "Function", "arguments": '{"a": 1}', "name": "f",
    }  # fmt: skip
    # A call that is not a constructor stays text: never run.
    assert value["usage"]["prompt_tokens"] == "__import__('os').getpid()"
    message, fields = sdk_repr.as_message(value)
    assert (
        message["tool_calls"][0]["function"]["name"] == "f"
        and fields["finish_reason_raw"] == "stop"
    )


def test_a_printed_object_cut_by_the_line_end_is_rejected_with_its_line(tmp_path):
    path = tmp_path / "cut.log"
    path.write_text(
        "start\nout: ChatCompletion(id='x', choices=[Choice(finish_reason='length'\nend\n"
    )
    result = forensics.scan([str(path)])
    assert result.rejects["source_line"].to_list() == [2]
    assert "does not close on its line" in result.rejects["reason"][0]


def test_a_dict_that_parses_keeps_sdk_text_quoted_inside_it():
    line = json.dumps(
        {
            "role": "assistant",
            "content": "I printed AIMessage(content='x', response_metadata={}) earlier",
        }
    )
    (scanned,) = list(embedded.scan(iter([(1, line)])))
    assert [f.value["role"] for f in scanned.objects] == ["assistant"]


def test_anthropic_message_reprs_and_stream_events(tmp_path):
    path = tmp_path / "claude.log"
    path.write_text(
        "2025-05-03 08:47:46.538 | DEBUG | A#### RawMessageStartEvent(message=Message("
        "id='msg_011CN5HDeXovxZxZYWrkRcXV', content=[], model='claude-3-5-sonnet-20241022', "
        "role='assistant', stop_reason=None, stop_sequence=None, type='message', usage=Usage("
        "input_tokens=9, output_tokens=1)), type='message_start')\n"
        "    Model response : Message(id='msg_01Vu67ktK32NeTiajmKPcGHX', container=None, "
        "content=[TextBlock(citations=None, text='Sure! Let me fetch the customer record.', "
        "type='text'), ToolUseBlock(id='toolu_01Tm1DTaFwNJbyuJ1BsLJcc1', caller=DirectCaller("
        "type='direct'), input={'customer_id': 'cust-4', name='get_customer_record', "
        "type='tool_use')], model='claude-sonnet-4-6', role='assistant', stop_details=None, "
        "stop_reason='max_tokens', stop_sequence=None, type='message', usage=Usage("
        "cache_creation_input_tokens=0, cache_read_input_tokens=120, input_tokens=30, "
        "output_tokens=64))\n"
    )
    result = forensics.scan([str(path)])
    # The stream event's nested Message is no response; the cut dict inside the second one
    # makes that object unparseable: rejected with its line, not guessed.
    assert result.turns.is_empty()
    assert result.rejects["source_line"].to_list() == [2]
    fixed = path.read_text().replace("'cust-4',", "'cust-4'},")
    path.write_text(fixed)
    result = forensics.scan([str(path)])
    turn = result.turns.row(0, named=True)
    assert (turn["finish_reason"], turn["input_tokens"], turn["output_tokens"]) == (
        "max_tokens",
        150,
        64,
    )
    assert turn["tool_calls"][0]["arguments"] == '{"customer_id": "cust-4"}'
    assert found(result) == [("max-tokens", 0, 2)]


def test_an_object_a_pretty_printer_broke_over_lines_is_read_whole(tmp_path):
    path = tmp_path / "rich.log"
    path.write_text(
        "INFO scoring batch 3\n"
        "ChatCompletion(\n"
        "    id='chatcmpl-ENLy4XScT6cqegRBkL5L685jEwtph',\n"
        "    model='gpt-4o-mini-2024-07-18',\n"
        "    choices=[Choice(finish_reason='length', index=0, message=ChatCompletionMessage(\n"
        "        content='{\"evaluations\": [', role='assistant'))],\n"
        "    usage=CompletionUsage(prompt_tokens=199, completion_tokens=14, total_tokens=213)\n"
        ")\n"
        "INFO done\n"
    )
    result = forensics.scan([str(path)])
    assert result.rejects.is_empty()
    turn = result.turns.row(0, named=True)
    assert (turn["source_line"], turn["finish_reason"], turn["output_tokens"]) == (
        2,
        "max_tokens",
        14,
    )
    assert found(result) == [("max-tokens", 0, 2)]
