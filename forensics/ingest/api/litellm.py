"""LiteLLM logs: StandardLoggingPayload objects and proxy spend-log rows (formats-api §5.4).

Two things make them tricky. Spend-log rows store `messages`, `response`, `metadata` and
`proxy_server_request` as JSON-encoded strings ("{}" when prompts are not stored). And LiteLLM
rewrites every provider's finish reason into the OpenAI vocabulary, lossily: Gemini's
MALFORMED_FUNCTION_CALL, an `error` and any unknown value all become `stop`. The raw column
therefore says `litellm:stop`, so nobody mistakes LiteLLM's mapping for the provider's word.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from forensics.ingest.api.exchange import Call, Exchange, NotACall, build
from forensics.ingest.parse import jsonwalk
from forensics.ingest.parse.apicommon import as_dict, as_int, as_str, count_of
from forensics.ingest.records import normalise_finish_reason
from forensics.wording import article

RAW_PREFIX = "litellm:"
_CHAT_CALLS = {"completion", "acompletion", "text_completion", "atext_completion"}
_ANTHROPIC_CALLS = {"anthropic_messages", "aanthropic_messages"}
_RESPONSES_CALLS = {"responses", "aresponses"}
_JSON_STRING_FIELDS = ("messages", "response", "proxy_server_request", "metadata")


def unwrap(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """The payload itself, also when a callback logged the whole kwargs around it."""
    inner = record.get("standard_logging_object")
    return inner if isinstance(inner, dict) else record


def is_record(record: Mapping[str, Any]) -> bool:
    record = unwrap(record)
    return "call_type" in record and any(
        k in record for k in ("messages", "response", "model_parameters", "spend", "request_id")
    )


def _decoded(record: Mapping[str, Any], key: str) -> Any:
    value = record.get(key)
    if not isinstance(value, str):
        return value
    if value.strip() in ("", "{}", "None", "null"):
        return None
    try:
        return jsonwalk.loads(value)
    except (json.JSONDecodeError, RecursionError):
        raise NotACall(f"LiteLLM log: field {key!r} is not valid JSON") from None


def call_of(record: Mapping[str, Any], line: int) -> Call:
    """The call a LiteLLM payload or spend-log row records; NotACall when there is none."""
    record = unwrap(record)
    call_type = as_str(record.get("call_type")) or ""
    known = _CHAT_CALLS | _ANTHROPIC_CALLS | _RESPONSES_CALLS
    if call_type not in known:
        raise NotACall(f"LiteLLM log of {article(call_type or 'untyped')} call: not a chat call")
    decoded = {key: _decoded(record, key) for key in _JSON_STRING_FIELDS}
    messages, response = decoded["messages"], decoded["response"]
    request = as_dict(decoded["proxy_server_request"])
    request = dict(as_dict(request.get("body")) or request)
    if not request.get("messages") and not request.get("input"):
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        if isinstance(messages, list) and messages:
            key = "input" if call_type in _RESPONSES_CALLS else "messages"
            request = {**as_dict(record.get("model_parameters")), **request, key: messages}
    if not request and response is None:
        raise NotACall(
            "LiteLLM log without messages or response (store_prompts_in_spend_logs is off): "
            "nothing to analyse"
        )
    request.setdefault("model", record.get("model"))
    if isinstance(record.get("stream"), bool):
        request.setdefault("stream", record["stream"])
    hidden = as_dict(record.get("hidden_params"))
    endpoint = record.get("api_base") or hidden.get("api_base") or record.get("custom_llm_provider")
    failed = record.get("status") == "failure"
    error_info = as_dict(record.get("error_information"))
    error = (
        record.get("error_str")
        or error_info.get("error_message")
        or ("call failed" if failed else None)
    )
    if isinstance(response, str):
        response = {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": response}}]
        }
    code_text = str(error_info.get("error_code") or "")
    code = count_of(code_text)
    call = build(
        Exchange(
            request=request or None,
            response=response if isinstance(response, dict) and response else None,
            status=code if failed else None,
            transport_error=as_str(error) if failed else None,
            endpoint=as_str(endpoint) or None,
            has_response=True,
        ),
        line,
    )
    fields = call.fields
    raw = fields.get("finish_reason_raw")
    if raw is not None and call_type in _CHAT_CALLS:
        fields["finish_reason_raw"] = RAW_PREFIX + raw
        fields["finish_reason"] = normalise_finish_reason(raw)
    # Usage lives on the log row even when the response body was not stored.
    for column, key in (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens")):
        if fields.get(column) is None and (value := as_int(record.get(key))) is not None:
            fields[column] = value
    return call
