"""The shapes people store API calls in, one record each -> `Exchange`.

- `{"request": <body>, "response": <body>}`
- `{"request": {"url", "headers", "body"}, "response": {"status", "headers", "body"}}`, with the
  usual spellings of those keys (`status_code`, `body_json`, `body_text`, `sse_text`, `chunks`,
  vcrpy's `{"string": ...}` body) — this covers the realdata `extracted_interactions.jsonl`
- OpenAI Batch input lines `{custom_id, method, url, body}` and output lines
  `{custom_id, response: {status_code, body}, error}` (joined on custom_id by the reader)
- a response body alone (Chat Completions, Anthropic Message, Responses, Gemini)

Headers are read for nothing and copied nowhere: they carry the API keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forensics.ingest.api import anthropic, openai_chat, openai_responses
from forensics.ingest.api.exchange import Exchange
from forensics.ingest.parse.apicommon import as_int, as_str, count_of, error_text

_REQUEST_BODY_KEYS = {"messages", "input", "contents", "prompt"}
_REQUEST_ENVELOPE_KEYS = {
    "url",
    "uri",
    "method",
    "headers",
    "body",
    "body_json",
    "body_text",
    "json",
}
_RESPONSE_ENVELOPE_KEYS = {
    "status",
    "status_code",
    "headers",
    "body",
    "body_json",
    "body_text",
    "sse_text",
    "chunks",
    "content_type",
}
_BODY_SPELLINGS = ("body_json", "json", "body", "sse_text", "body_text", "text", "chunks")


def is_response_body(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    return (
        openai_chat.is_response(obj)
        or anthropic.is_response(obj)
        or openai_responses.is_response(obj)
        or "candidates" in obj
        or "promptFeedback" in obj
        or "prompt_feedback" in obj
    )


def _body(envelope: Mapping[str, Any]) -> Any:
    for key in _BODY_SPELLINGS:
        value = envelope.get(key)
        if value is not None:
            if isinstance(value, dict) and set(value) == {"string"}:  # vcrpy
                return value["string"]
            return value
    return None


def _request(raw: Any) -> tuple[Any, str | None, str | None]:
    """(body, url, method) of the request side of a record."""
    if (
        isinstance(raw, dict)
        and not raw.keys() & _REQUEST_BODY_KEYS
        and raw.keys() & _REQUEST_ENVELOPE_KEYS
    ):
        return _body(raw), as_str(raw.get("url") or raw.get("uri")), as_str(raw.get("method"))
    return raw, None, None


def _status(value: Any) -> int | None:
    if isinstance(value, dict):  # vcrpy: {"code": 200, "message": "OK"}
        value = value.get("code")
    if isinstance(value, str):
        return count_of(value)
    return as_int(value)


def _response(raw: Any) -> tuple[Any, int | None]:
    """(body, HTTP status) of the response side of a record."""
    if isinstance(raw, dict) and not is_response_body(raw) and raw.keys() & _RESPONSE_ENVELOPE_KEYS:
        return _body(raw), _status(raw.get("status", raw.get("status_code")))
    return raw, None


def kind(record: Mapping[str, Any]) -> str | None:
    """batch_input, batch_output, pair or body; None for a record that holds no call."""
    if "custom_id" in record:
        if "body" in record and "response" not in record:
            return "batch_input"
        if "response" in record or "error" in record:
            return "batch_output"
    if "request" in record or "response" in record:
        return "pair"
    if is_response_body(record):
        return "body"
    return None


def exchange(record: Mapping[str, Any], kind_of: str) -> Exchange:
    if kind_of == "batch_input":
        return Exchange(
            request=record.get("body"),
            url=as_str(record.get("url")),
            method=as_str(record.get("method")),
            has_response=False,
        )
    if kind_of == "body":
        return Exchange(response=record)
    body, status = _response(record.get("response"))
    error = error_text(record.get("error"))
    if kind_of == "batch_output":
        return Exchange(
            response=body,
            status=status,
            transport_error=error if body is None else None,
            has_response=True,
        )
    request, url, method = _request(record.get("request"))
    return Exchange(
        request=request,
        response=body,
        status=status,
        url=url or as_str(record.get("url")),
        method=method,
        transport_error=error if body is None and error else None,
        has_response=record.get("response") is not None or error is not None,
    )
