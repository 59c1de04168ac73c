"""SDK response objects as Python prints them into logs and issues.

`print(response)` of the OpenAI SDK gives `ChatCompletion(id=..., choices=[Choice(...)], ...)`
as repr, or the pydantic str form without the outer class (`id='chatcmpl-…' choices=[…] …`);
LangChain messages print as `AIMessage(content=..., response_metadata={...}, ...)` or, with
str(), `content='…' additional_kwargs={…} response_metadata={…}`; Anthropic's SDK as
`Message(id='msg_…', content=[TextBlock(...), ToolUseBlock(...)], stop_reason=…)`. None of
this is JSON or a Python literal, so the embedded-object scanner would see only the dicts inside.

A printed object is parsed with the `ast` module, never evaluated: `Class(key=value, …)` becomes
a dict with its class under `__class__`, literals stay literals, anything else becomes its
source text. `as_message` turns the result into the chat message and turn columns it states.
"""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from typing import Any

from forensics import linear
from forensics.ingest.parse.apicommon import as_int, as_list, text_of

MAX_CHARS = 4 * 1024 * 1024
# A pretty-printer (rich, pprint) breaks an object over lines: it is followed this far.
MAX_LINES = 400
UNCLOSED = "does not close on its line"

_CLASSES = (
    "ChatCompletion",
    "ChatCompletionMessage",
    "AIMessage",
    "AIMessageChunk",
    "HumanMessage",
    "SystemMessage",
    "ToolMessage",
)
_ANTHROPIC = ("Message", "BetaMessage")
_START = re.compile(
    r"\b(" + "|".join(_CLASSES) + r")\("
    # Anthropic's Message only as a response (an id msg_…), never as a keyword value inside a
    # stream event (RawMessageStartEvent(message=Message(...))) or another SDK's Message.
    r"|(?<![=\w.])(Message|BetaMessage)\((?=id='msg_)"
)
# pydantic's str(): the fields of the outer object, space-separated, without its class name;
# group 1 starts it. RE2: as a lookahead under `re`, `.*` ran to the line's end once per
# `content=` (quadratic).
_STR_FORM = linear.compile(
    rf"(?:^|{linear.SPACE})(id='chatcmpl-|content=.*{linear.SPACE}response_metadata=)"
)


class _Unsupported(Exception):
    pass


def _value(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [_value(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {
            (_value(k) if k is not None else "**"): _value(v)
            for k, v in zip(node.keys, node.values, strict=True)
        }
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id[:1].isupper()
    ):
        # A constructor as a repr prints it; any other call stays its source text.
        out: dict[str, Any] = {"__class__": node.func.id}
        for kw in node.keywords:
            if kw.arg is not None:
                out[kw.arg] = _value(kw.value)
        return out
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _value(node.operand)
        if isinstance(inner, int | float):
            return -inner
    return ast.unparse(node)


def _closing(text: str, start: int) -> int:
    """Index just past the bracket that closes the one at start; -1 when the text ends first."""
    depth, quote, i = 0, "", start
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def _with_commas(fields: str) -> str:
    """`a=1 b=[2] c='x'` as `a=1, b=[2], c='x'`: commas before each top-level `name=`."""
    tokens = list(tokenize.generate_tokens(io.StringIO(fields).readline))
    lines = fields.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    inserts, depth, previous = [], 0, None
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        elif (
            depth == 0
            and tok.type == tokenize.NAME
            and i + 1 < len(tokens)
            and tokens[i + 1].string == "="
            and previous is not None
            and previous.string != ","
        ):
            inserts.append(starts[tok.start[0] - 1] + tok.start[1])
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            previous = tok
    # Joined once: rebuilding the text at each insert was quadratic in a long line of fields.
    pieces, last = [], 0
    for pos in inserts:
        pieces += [fields[last:pos].rstrip(), ", "]
        last = pos
    return "".join([*pieces, fields[last:]])


def _parse(source: str) -> Any:
    if len(source) > MAX_CHARS:
        raise _Unsupported("printed object too large")
    try:
        return _value(ast.parse(source.strip(), mode="eval").body)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise _Unsupported(type(exc).__name__) from None


def find(text: str) -> list[tuple[int, int, Any, str | None]]:
    """(start, end, value, error) of each printed SDK object on a line, in order."""
    out: list[tuple[int, int, Any, str | None]] = []
    # Substring tests first: most log lines hold no SDK object, and the regexes cost more.
    called = "Message(" in text or "Completion(" in text
    if not called and "response_metadata=" not in text and "id='chatcmpl-" not in text:
        return out
    pos = 0
    while called and (m := _START.search(text, pos)) is not None:
        start = m.start()
        end = _closing(text, m.end() - 1)
        kind = m.group(1) or m.group(2)
        if end < 0:
            reason = f"printed {kind}(…) {UNCLOSED}"
            out.append((start, len(text), None, reason))
            break
        try:
            out.append((start, end, _parse(text[start:end]), None))
        except _Unsupported as exc:
            out.append((start, end, None, f"printed {kind}(…) does not parse ({exc})"))
        pos = end
    if not out and (fields := _STR_FORM.search(text)):
        start = fields.start(1)
        kind = "ChatCompletion" if text.startswith("id=", start) else "AIMessage"
        body = text[start:].rstrip()
        try:
            value = _parse(f"{kind}({_with_commas(body)})")
            out.append((start, len(text), value, None))
        except (_Unsupported, tokenize.TokenError, SyntaxError) as exc:
            reason = f"printed {kind} fields (str form) do not parse ({type(exc).__name__})"
            out.append((start, len(text), None, reason))
    return out


def end_of(text: str) -> int:
    """Index just past the object that text starts with (its first bracket's match), or -1."""
    return _closing(text, text.index("("))


def parse(text: str) -> tuple[Any, str | None]:
    """(value, None) of a whole printed object, or (None, why it does not parse)."""
    try:
        return _parse(text), None
    except _Unsupported as exc:
        return None, f"printed {text.split('(', 1)[0]}(…) does not parse ({exc})"


def is_sdk_object(value: Any) -> bool:
    return isinstance(value, dict) and value.get("__class__") in (*_CLASSES, *_ANTHROPIC)


# --- objects -> messages ---------------------------------------------------------------------


def _openai_calls(calls: Any) -> list[dict[str, Any]]:
    out = []
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, dict):
            fn = got if isinstance(got := call.get("function"), dict) else {}
            out.append(
                {
                    "id": call.get("id"),
                    "function": {"name": fn.get("name"), "arguments": fn.get("arguments")},
                }
            )
    return out


def _langchain_calls(value: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for call in as_list(value.get("tool_calls")):
        if isinstance(call, dict):
            args = call.get("args")
            arguments = (
                args
                if isinstance(args, str)
                else json.dumps(args, ensure_ascii=False, sort_keys=True)
            )
            out.append(
                {
                    "id": call.get("id"),
                    "function": {"name": call.get("name"), "arguments": arguments},
                }
            )
    # Calls LangChain could not parse keep their raw argument text: they are the malformed ones.
    for call in as_list(value.get("invalid_tool_calls")):
        if isinstance(call, dict):
            out.append(
                {
                    "id": call.get("id"),
                    "function": {"name": call.get("name"), "arguments": call.get("args")},
                }
            )
    return out


def as_message(value: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(chat message, turn columns) of a printed SDK object; None when it holds none."""
    kind = value.get("__class__")
    if kind == "ChatCompletion":
        choices = value.get("choices")
        choice = (
            choices[0]
            if isinstance(choices, list) and choices and isinstance(choices[0], dict)
            else {}
        )
        inner = got if isinstance(got := choice.get("message"), dict) else None
        if inner is None:
            return None
        message, fields = as_message(inner | {"__class__": "ChatCompletionMessage"}) or ({}, {})
        usage = got if isinstance(got := value.get("usage"), dict) else {}
        details = usage.get("completion_tokens_details")
        fields.update(
            finish_reason_raw=choice.get("finish_reason")
            if isinstance(choice.get("finish_reason"), str)
            else None,
            input_tokens=as_int(usage.get("prompt_tokens")),
            output_tokens=as_int(usage.get("completion_tokens")),
            reasoning_tokens=as_int(details.get("reasoning_tokens"))
            if isinstance(details, dict)
            else None,
            model=value.get("model") if isinstance(value.get("model"), str) else None,
        )
        return message, fields
    if kind == "ChatCompletionMessage":
        message = {"role": value.get("role") or "assistant", "content": value.get("content")}
        reasoning = value.get("reasoning_content", value.get("reasoning"))
        if isinstance(reasoning, str):
            message["reasoning_content"] = reasoning
        if value.get("tool_calls"):
            message["tool_calls"] = _openai_calls(value["tool_calls"])
        return message, {}
    if kind in ("AIMessage", "AIMessageChunk"):
        meta = got if isinstance(got := value.get("response_metadata"), dict) else {}
        extra = got if isinstance(got := value.get("additional_kwargs"), dict) else {}
        message = {"role": "assistant", "content": text_of(value.get("content"))}
        reasoning = extra.get("reasoning_content")
        if isinstance(reasoning, str):
            message["reasoning_content"] = reasoning
        calls = _langchain_calls(value)
        if calls:
            message["tool_calls"] = calls
        reason = next(
            (
                meta[k]
                for k in ("finish_reason", "stop_reason", "done_reason")
                if isinstance(meta.get(k), str)
            ),
            None,
        )
        usage = got if isinstance(got := value.get("usage_metadata"), dict) else {}
        token_usage = got if isinstance(got := meta.get("token_usage"), dict) else {}
        model = meta.get("model_name", meta.get("model"))
        fields = {
            "finish_reason_raw": reason,
            "input_tokens": as_int(usage.get("input_tokens", token_usage.get("prompt_tokens"))),
            "output_tokens": as_int(
                usage.get("output_tokens", token_usage.get("completion_tokens"))
            ),
            "model": model if isinstance(model, str) else None,
        }
        return message, fields
    if kind in ("Message", "BetaMessage"):
        return _anthropic(value)
    role = {"HumanMessage": "user", "SystemMessage": "system", "ToolMessage": "tool"}.get(str(kind))
    if role is None:
        return None
    return {"role": role, "content": text_of(value.get("content"))}, {}


def _anthropic(value: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """An Anthropic Messages response: text, thinking and tool_use blocks, stop reason, usage."""
    blocks = got if isinstance(got := value.get("content"), list) else []
    texts, thoughts, calls = [], [], []
    for b in blocks:
        if not isinstance(b, dict):
            continue
        kind = b.get("type")
        if kind == "text" and isinstance(b.get("text"), str):
            texts.append(b["text"])
        elif kind == "thinking" and isinstance(b.get("thinking"), str):
            thoughts.append(b["thinking"])
        elif kind in ("tool_use", "server_tool_use"):
            arguments = json.dumps(b.get("input"), ensure_ascii=False, sort_keys=True)
            calls.append(
                {"id": b.get("id"), "function": {"name": b.get("name"), "arguments": arguments}}
            )
    message: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts)}
    if thoughts:
        message["reasoning_content"] = "\n".join(thoughts)
    if calls:
        message["tool_calls"] = calls
    usage = got if isinstance(got := value.get("usage"), dict) else {}
    parts = [
        as_int(usage.get(k))
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    ]
    reason = value.get("stop_reason")
    fields = {
        "finish_reason_raw": reason if isinstance(reason, str) else None,
        # the prompt's size: Anthropic's input_tokens leaves out the cached part
        "input_tokens": sum(p for p in parts if p is not None) if parts[0] is not None else None,
        "output_tokens": as_int(usage.get("output_tokens")),
        "model": value.get("model") if isinstance(value.get("model"), str) else None,
    }
    return message, fields
