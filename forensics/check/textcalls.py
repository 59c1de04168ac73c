"""Tool calls written as text by agents that speak a text protocol (issue 12 item 8).

Agents without function calling write the call into their message and the harness parses it:
tau-bench's ReAct/Act agents (`Action:` then `{"name": …, "arguments": …}`, the harness runs
`json.loads` on the text after the last `Action:`), LangChain-style ReAct (`Action: tool` then
`Action Input: …`), JSON action blocks (`{"action": …, "action_input": …}`, the same wrapped
in `{"function_call": …}`, Gemma-style
```` ```json ```` fences), Gemma's ```` ```tool_code ```` fences of Python calls, Mistral
`[TOOL_CALLS]` and Llama `<|python_tag|>` payloads. `parse` finds the intended calls in a
message and says, per call, whether it parses the way its harness parses it; a call that does
not parse never reaches a tool (tau-bench sends the raw text to the user instead).

Pure functions of the message text, so enrich can run them row by row on assistant turns only.
"""

from __future__ import annotations

import ast
import json
import re
from functools import partial
from typing import Any

from forensics import linear

# json.loads whose every failure is a JSONDecodeError: an integer longer than Python reads
# fails the harness's own json.loads just the same, and the call is reported as not parsing.
from forensics.ingest.parse.jsonwalk import loads as _loads
from forensics.redact import clip, redact_text

# The formats, as enrich names them (schema: text_call_format).
REACT = "react_action"
LANGCHAIN = "react_action_input"
JSON_ACTION = "json_action"
TOOL_CODE = "tool_code"
MISTRAL = "mistral_tool_calls"
PYTHON_TAG = "llama_python_tag"

# Cheap gate: a message with none of these is no text call (most messages).
GATE = re.compile(
    r'(?m)^[ \t]*Action:|```tool_code|\[TOOL_CALLS\]|<\|python_tag\|>|"action"\s*:|'
    # [ \t], not \s: with (?m) a \s* at every line start would rescan the text (quadratic)
    r'^[ \t]*(?:```(?:json)?\s*)?\{\s*"(?:name|function_call|tool_call)"\s*:'
)
# Wrappers around a call object written as content.
_WRAPPERS = ("function", "function_call", "tool_call")
# A marker only starts a call when a payload follows it: prose that names `[TOOL_CALLS]` or
# writes `Action: …` in words is no call.
_MISTRAL = re.compile(r"\[TOOL_CALLS\]\s*(?:\[\s*\{|[\w.\-]+(?:\[ARGS\])?\s*\{)")
_PYTHON_TAG = re.compile(r"<\|python_tag\|>\s*(?:\{|[A-Za-z_][\w.]*\()")
_PAYLOAD_START = ("{", "[", "```")
_ACTION = re.compile(r"(?m)^[ \t]*Action:[ \t]*")
_ACTION_INPUT = re.compile(r"(?m)^[ \t]*Action Input:[ \t]*")
# Where a LangChain action input ends: the next protocol label.
_NEXT_LABEL = re.compile(r"(?m)^[ \t]*(?:Observation|Thought|Action|Final Answer):")
# The blanks after the opener are possessive: giving some back to the body can not find a
# closer the body did not (they hold no backtick), and an unclosed fence retried its body once
# per blank (quadratic in a run of spaces). On `re`: RE2's binding costs 15 µs a fence.
_FENCE = re.compile(r"(?s)```(json|tool_code|python)?[ \t]*+\n?+(.*?)```")
_S, _W = linear.SPACE, linear.WORD_CHARS
# RE2 for these three as well: under `re` a run of blanks after `"name":` cost its length
# squared times 64, and a long word with no `{` after it (or blanks before one) its square.
_NAME_HINT = linear.compile(rf'"(?:name|action)"{_S}*:{_S}*"?([{_W}.\- ]{{1,64}}?)"?{_S}*[,}}]')
_MISTRAL_CALL = linear.compile(rf"(?s)([{_W}.\-]+){_S}*(\{{.*)$")
# An object that opens like a call: its name or action, or a wrapper around one (the legacy
# OpenAI `{"function_call": {...}}`, `{"tool_call": {...}}`) written as content.
_CALL_OBJECT = linear.compile(rf'{_S}*[\[{{]{_S}*"(?:name|action|function_call|tool_call)"{_S}*:')
_LLAMA_END = re.compile(r"<\|eom_id\|>|<\|eot_id\|>")
_BETWEEN_CALLS = re.compile(r"\}\s*;\s*\{")
_ARG_KEYS = ("arguments", "action_input", "args", "parameters", "input", "kwargs")
# A payload shown when it does not parse, cut from redacted text (a decoded key may cross the cut).
_shown = partial(clip, limit=500)


def _call(name: Any, arguments: Any, error: str | None) -> dict[str, str | None]:
    if arguments is not None and not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    return {"name": None if name is None else str(name), "arguments": arguments, "error": error}


def _json_error(exc: json.JSONDecodeError) -> str:
    return f"not valid JSON: {exc.msg} (char {exc.pos})"


def _name_hint(text: str) -> str | None:
    """The tool name of a payload that does not parse, when its "name"/"action" value shows."""
    m = _NAME_HINT.search(text)
    return m.group(1).strip() if m else None


def _object_call(value: Any) -> tuple[Any, Any] | None:
    """(name, arguments) of a decoded action object, or None when it is no call shape."""
    if not isinstance(value, dict):
        return None
    name = value.get("name", value.get("action"))
    # {"type": "function", "function": {...}}, {"function_call": {...}}, {"tool_call": {...}}
    wrapped = next((value[k] for k in _WRAPPERS if isinstance(value.get(k), dict)), None)
    if name is None and wrapped is not None:
        return _object_call(wrapped)
    # A call names its arguments; {"name": "Ann"} is data, not a call.
    if name is None or not any(k in value for k in _ARG_KEYS):
        return None
    return name, next(value[k] for k in _ARG_KEYS if k in value)


def _tau_action(payload: str) -> dict[str, str | None]:
    """tau-bench's parse: json.loads of the stripped text (a code fence around it fails, as it
    does there), then a mapping with "name" and "arguments"."""
    text = payload.strip()
    try:
        value = _loads(text)
    except json.JSONDecodeError as exc:
        return _call(_name_hint(text), _shown(text), _json_error(exc))
    if not isinstance(value, dict) or "name" not in value or "arguments" not in value:
        keys = sorted(value) if isinstance(value, dict) else type(value).__name__
        return _call(
            _name_hint(text), _shown(text), f'not an {{"name", "arguments"}} object ({keys})'
        )
    return _call(value["name"], value["arguments"], None)


def _langchain(text: str, name: str) -> dict[str, str | None]:
    match = _ACTION_INPUT.search(text)
    assert match is not None
    rest = text[match.end() :]
    end = _NEXT_LABEL.search(rest)
    return _call(name, (rest[: end.start()] if end else rest).strip(), None)


def _react(text: str) -> list[dict[str, str | None]] | None:
    """The call after the last `Action:` label, parsed as its harness parses it; None when
    what follows the label is words, not a payload."""
    last = list(_ACTION.finditer(text))[-1]
    after = text[last.end() :]
    first_line = after.split("\n", 1)[0].strip()
    if _ACTION_INPUT.search(after) and first_line and not first_line.startswith(("{", "`")):
        return [_langchain(after, first_line)]
    # tau-bench parses everything after the label: text after the payload (an Observation the
    # model invented) makes json.loads fail with "Extra data", and the call is lost.
    if not after.strip().startswith(_PAYLOAD_START):
        return None
    return [_tau_action(after)]


def _literal(node: ast.expr) -> Any:
    """A literal argument as its value where JSON can write it; anything else (a name, an
    expression, a set, bytes, a complex number, an infinite float, a dict with tuple keys) as
    its source: the arguments column is JSON text, and Python literals are wider than JSON."""
    try:
        value = ast.literal_eval(node)
        json.dumps(value, sort_keys=True, allow_nan=False)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ast.unparse(node)
    return value


def _python_calls(code: str) -> list[dict[str, str | None]]:
    """Calls in a tool_code fence: `f(a=1)`, `print(api.f(a=1))`, `[f(a=1), g()]`."""
    try:
        tree = ast.parse(code.strip())
    except SyntaxError as exc:
        return [_call(_name_hint(code), _shown(code.strip()), f"not valid Python ({exc.msg})")]
    except ValueError as exc:  # NUL bytes
        return [_call(None, _shown(code.strip()), f"not valid Python ({exc})")]
    calls: list[dict[str, str | None]] = []
    for statement in tree.body:
        value = statement.value if isinstance(statement, ast.Expr) else None
        nodes = value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
        for node in nodes:
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "print"
                and len(node.args) == 1
                and isinstance(node.args[0], ast.Call)
            ):
                node = node.args[0]
            if not isinstance(node, ast.Call):
                text = ast.get_source_segment(code.strip(), statement) or ""
                calls.append(_call(None, _shown(text), "not a function call"))
                continue
            # Llama's built-in tools are called as `brave_search.call(query=…)`.
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "call":
                func = func.value
            name = ast.unparse(func).split(".")[-1]
            args = {k.arg or "**": _literal(k.value) for k in node.keywords}
            if node.args:
                args["*"] = [_literal(a) for a in node.args]
            calls.append(_call(name, args, None))
    return calls or [_call(None, "", "empty tool_code block")]


def _json_values(payload: str) -> list[dict[str, str | None]]:
    """One JSON value holding a call object or a list of them."""
    try:
        value = _loads(payload)
    except json.JSONDecodeError as exc:
        return [_call(_name_hint(payload), _shown(payload), _json_error(exc))]
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        found = _object_call(item)
        if found is None:
            out.append(_call(None, _shown(json.dumps(item)), "not a call object"))
        else:
            out.append(_call(found[0], found[1], None))
    return out


def _mistral(text: str) -> list[dict[str, str | None]]:
    """`[TOOL_CALLS] [{...}]` (pre-v11) or `[TOOL_CALLS]name[ARGS]{json}` per call (v11+)."""
    out: list[dict[str, str | None]] = []
    for piece in text.split("[TOOL_CALLS]")[1:]:
        piece = piece.strip()
        if piece.startswith("["):
            out.extend(_json_values(piece))
            continue
        name, sep, args = piece.partition("[ARGS]")
        if not sep:
            m = _MISTRAL_CALL.match(piece)
            name, args = (m.group(1), m.group(2)) if m else (clip(piece, 64), "")
        try:
            _loads(args)
        except json.JSONDecodeError as exc:
            out.append(_call(name.strip() or None, _shown(args), _json_error(exc)))
            continue
        out.append(_call(name.strip(), args.strip(), None))
    return out


def _python_tag(text: str) -> list[dict[str, str | None]]:
    """Llama 3.x: JSON `{"name", "parameters"}` calls (`;`-separated) or built-in Python."""
    payload = text.split("<|python_tag|>", 1)[1]
    payload = _LLAMA_END.split(payload)[0].strip()
    if payload.startswith("{"):
        out: list[dict[str, str | None]] = []
        for part in _BETWEEN_CALLS.split(payload):
            part = part if part.startswith("{") else "{" + part
            part = part if part.endswith("}") else part + "}"
            out.extend(_json_values(part))
        return out
    return _python_calls(payload)


def parse(text: str | None) -> tuple[str, list[dict[str, str | None]]] | None:
    """(format, calls) of the tool calls a message writes as text, or None when it writes none.

    Each call is {name, arguments, error}: error says why it does not parse (None: it does).
    """
    if not text or not GATE.search(text):
        return None
    try:
        found = _parse(text)
    except (RecursionError, MemoryError, ValueError):
        # Nesting beyond the parsers' limits, NUL bytes in code: no call can be read from it,
        # and no harness would have read one either.
        return None
    if found is None:
        return None
    # Parsing decodes what the redaction pass saw encoded (`"sk\u002d…"` in JSON, `'\x2d'` in
    # Python): the calls are redacted again once decoded (schema: text_calls is a redact column).
    fmt, calls = found
    return fmt, [{k: redact_text(v) for k, v in call.items()} for call in calls]


def _parse(text: str) -> tuple[str, list[dict[str, str | None]]] | None:
    if _ACTION.search(text):
        calls = _react(text)
        if calls is None:
            return None
        last = list(_ACTION.finditer(text))[-1]
        fmt = LANGCHAIN if _ACTION_INPUT.search(text[last.end() :]) else REACT
        return fmt, calls
    if mistral := _MISTRAL.search(text):
        return MISTRAL, _mistral(text[mistral.start() :])
    if _PYTHON_TAG.search(text):
        return PYTHON_TAG, _python_tag(text)
    for fence in _FENCE.finditer(text):
        kind, body = fence.group(1), fence.group(2)
        if kind == "tool_code":
            return TOOL_CODE, _python_calls(body)
        if kind in (None, "json") and _CALL_OBJECT.match(body):
            calls = _json_values(body.strip())
            if any(c["name"] is not None for c in calls):
                return JSON_ACTION, calls
    if "```tool_code" in text:  # an unclosed fence: the message was cut inside the call
        body = text.split("```tool_code", 1)[1]
        return TOOL_CODE, _python_calls(body)
    stripped = text.strip()
    if stripped.startswith("{") and _CALL_OBJECT.match(stripped):
        calls = _json_values(stripped)
        return (JSON_ACTION, calls) if any(c["name"] is not None for c in calls) else None
    return None
