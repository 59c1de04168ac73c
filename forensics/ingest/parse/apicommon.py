"""Small helpers shared by the API-body parsers (OpenAI chat, Anthropic, Responses).

Captured bodies are untrusted: any field may be missing, null or of the wrong type, so every
accessor here checks types instead of assuming the documented shape.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, overload
from urllib.parse import urlsplit

from forensics.redact import clip


def as_int(value: Any) -> int | None:
    """An integer count; floats with no fraction (some proxies re-encode) count too."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def as_float(value: int | float) -> float:
    """A number as a float; an integer beyond a float's range (JSON holds any) is infinite,
    as JSON's own 1e999 reads, where float() raises OverflowError: the row builder then
    rejects the value as not finite, with the record it belongs to."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def count_of(text: str, digits: int = 18) -> int | None:
    """A count written as text (a cap, a status code, a timestamp in nanoseconds): ASCII
    digits only, at most `digits` of them; None for anything else. `str.isdigit` is also true
    of "²" and "١٢", which int() refuses or misreads, and a count of thousands of digits is no
    count (int() refuses past 4,300)."""
    if text.isascii() and text.isdigit() and len(text) <= digits:
        return int(text)
    return None


def as_list(value: Any) -> list[Any]:
    """A list to iterate; anything else (a number, a string, an object where the documented
    shape has a list) as none: `value or []` iterates a string's characters and fails on a
    number, a reader's bug where the input was only wrong."""
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def as_str(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def text_of(content: Any) -> str | None:
    """Message content as text: a string as is, a list of parts with their text joined.

    Parts without text (images, audio) are left out: the rules read text only.
    """
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
        return "\n".join(texts)
    return json.dumps(content, ensure_ascii=False, sort_keys=True)


@overload
def json_text(value: None) -> None: ...
@overload
def json_text(value: str | Mapping[str, Any] | list[Any]) -> str: ...
@overload
def json_text(value: object) -> str | None: ...


def json_text(value: Any) -> str | None:
    """Tool-call arguments as JSON text: strings stay as sent (they may be invalid JSON)."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def without_query(url: Any) -> str | None:
    """A URL for messages: query strings can carry API keys (`?key=`), fragments nothing useful."""
    if not isinstance(url, str) or not url:
        return None
    return url.split("?", 1)[0].split("#", 1)[0]


# Paths an SDK appends to its base URL; what remains names the server (and a router's upstream).
_API_SUFFIXES = (
    "/chat/completions",
    "/completions",
    "/messages",
    "/responses",
    "/api/chat",
    "/api/generate",
    "/inference/v1/generate",
    "/generate",
)


def endpoint_of(url: Any) -> str | None:
    """The base URL of a call (what a client is configured with), without the query string:
    Gemini puts `?key=<API key>` there."""
    if not isinstance(url, str) or not url:
        return None
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    for suffix in _API_SUFFIXES:
        if path.endswith(suffix):
            path = path[: -len(suffix)]
            break
    if not parts.netloc:  # a relative URL (Batch lines) names no server
        return None
    return f"{parts.scheme}://{parts.netloc}{path}"


def error_text(error: Any) -> str | None:
    """One line from an error object in any provider's shape ({code, type, message}, str)."""
    if error is None or error == "" or error == {}:
        return None
    if isinstance(error, dict):
        inner = error.get("error")
        if isinstance(inner, dict | str) and "message" not in error:
            return error_text(inner)
        label = error.get("code") or error.get("type") or error.get("status")
        message = error.get("message") or error.get("detail") or error.get("msg")
        if message is None:
            message = clip(json.dumps(error, ensure_ascii=False, sort_keys=True), 500)
        text = f"{label}: {message}" if label not in (None, "") else str(message)
    else:
        text = str(error)
    return " ".join(text.split())


def tool_choice_text(choice: Any) -> str | None:
    """tool_choice as one word: auto/none/required/any, or `function:name` / `tool:name`."""
    if choice is None:
        return None
    if isinstance(choice, str):
        return choice
    if isinstance(choice, dict):
        kind = choice.get("type")
        name = choice.get("name") or as_dict(choice.get("function")).get("name")
        if kind in (None, "function", "tool") and name:
            return f"{kind or 'function'}:{name}"
        return as_str(kind) or json.dumps(choice, sort_keys=True)
    return str(choice)


def thinking_switch(body: Mapping[str, Any]) -> bool | None:
    """Whether the request turns thinking on or off, in the dialects servers accept."""
    kwargs = as_dict(body.get("chat_template_kwargs"))
    for key in ("enable_thinking", "thinking"):
        if isinstance(kwargs.get(key), bool):
            return kwargs[key]
    if isinstance(body.get("enable_thinking"), bool):
        return body["enable_thinking"]
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and isinstance(thinking.get("type"), str):
        kind = thinking["type"]
        if kind in ("enabled", "adaptive"):
            return True
        if kind == "disabled":
            return False
    return None


def request_basics(
    body: Mapping[str, Any], tool_count: int, choice: str | None, cap: int | None
) -> dict[str, Any]:
    """Turn columns every chat API's request decides the same way.

    Tools count as attached when the request offers at least one and tool_choice is not
    "none": only then could the model have called one.
    """
    return {
        "model": as_str(body.get("model")),
        "max_output_tokens": cap,
        "tool_count": tool_count,
        "tools_attached": tool_count > 0 and choice != "none",
        "tool_choice": choice,
        "stream": body.get("stream") is True,
        # Tools counted but no name read: a shape this reader does not know; unknown, not none.
        "offered_tools": (offered_tool_names(body) or None) if tool_count else [],
    }


def offered_tool_names(body: Mapping[str, Any]) -> list[str]:
    """Names of the tools a chat request offers: OpenAI `tools[].function.name` and legacy
    `functions[].name`, Anthropic and Responses `tools[].name` (a built-in tool without a name
    by its type), Bedrock `toolConfig.tools[].toolSpec.name`, sorted and distinct."""
    names = set()
    bedrock = as_dict(body.get("toolConfig")).get("tools")  # Bedrock Converse toolSpec
    for tools in (body.get("tools"), body.get("functions"), bedrock):
        for tool in tools if isinstance(tools, list) else []:
            if not isinstance(tool, dict):
                continue
            name = (
                tool.get("name")
                or as_dict(tool.get("function")).get("name")
                or as_dict(tool.get("toolSpec")).get("name")
                or tool.get("type")
            )
            if isinstance(name, str) and name:
                names.add(name)
    return sorted(names)
