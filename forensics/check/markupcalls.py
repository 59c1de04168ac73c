"""Tool calls written as server markup inside the reasoning, parsed: the evidence of a call the
reasoning parser swallowed (tool-call-in-reasoning).

A swallowed call is a call the model made: complete (its closing marker written), well formed
(the payload parses as its parser would read it), naming a tool the request offered (when the
request says which), and the last thing the reasoning holds (the model stopped after it; the
reasoning parser kept it). Reasoning that discusses the call format quotes markup inside prose:
a placeholder that does not parse, a name no tool has, or words that follow. `parse` reads the
formats whose payload it knows (hermes, qwen3_coder, glm45/glm47, mistral, llama3 JSON); for
the others it returns None and the rule judges the markup alone, as before.

Reasoning is untrusted text of any length. A swallowed call ends it, so only its last `TAIL`
characters are read: the lazy patterns below then cost at most TAIL x (openers in the window),
however long the text (enrich extracts the reasoning with polars' linear-time regexes).
"""

from __future__ import annotations

import json
import re
from typing import Any

from forensics import linear, markers
from forensics.check import textcalls

# RE2 (forensics.linear), with Python's \s: under `re` each opener without a closer rescanned
# the window, up to a quarter second for one 16,000-character reasoning tail.
_S, _NS = linear.SPACE, f"[^{linear.SPACE_CHARS}<]"
_HERMES = linear.compile(rf"(?s)<tool_call>{_S}*(\{{.*?\}}){_S}*</tool_call>")
_QWEN3_CODER = linear.compile(
    rf"(?s)(?:<tool_call>{_S}*)?<function=([^>\n]+)>(.*?)</function>(?:{_S}*</tool_call>)?"
)
_PARAMETER = linear.compile(r"(?s)<parameter=([^>\n]+)>\n?(.*?)\n?</parameter>")
_GLM = linear.compile(
    rf"(?s)<tool_call>{_S}*({_NS}+){_S}*"
    rf"((?:<arg_key>.*?</arg_key>{_S}*<arg_value>.*?</arg_value>{_S}*)*)</tool_call>"
)
_GLM_ARG = linear.compile(rf"(?s)<arg_key>(.*?)</arg_key>{_S}*<arg_value>(.*?)</arg_value>")
# What may follow the last call when the model stopped there: reasoning closers, end tokens.
_TRAILER = re.compile(
    rf"(?:{markers.CLOSE_RE}|<\|im_end\|>|<\|eot_id\|>|<\|endoftext\|>|<\|eom_id\|>|</s>|\s)*$"
)
_QUOTES = "`'\""
# Characters read from the end of the reasoning: a call's payload fits many times over.
TAIL = 16_000
# The formats whose payload is read here (markers.TOOL_MARKUP ids).
PARSED = frozenset(
    {"hermes", "qwen3_coder", "glm45", "glm47", "mistral", "llama3_json", markers.UNWRAPPED_JSON}
)


def _call(name: Any, arguments: Any, error: str | None) -> dict[str, str | None]:
    if arguments is not None and not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
    return {"name": None if name is None else str(name), "arguments": arguments, "error": error}


def _hermes(payload: str) -> dict[str, str | None]:
    try:
        value = json.loads(payload)
    except json.JSONDecodeError as exc:
        return _call(None, payload[:500], f"not valid JSON: {exc.msg} (char {exc.pos})")
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return _call(None, payload[:500], 'not a {"name", "arguments"} object')
    args = value.get("arguments", value.get("parameters"))
    if isinstance(args, str):
        try:
            json.loads(args)
        except json.JSONDecodeError as exc:
            return _call(value["name"], args[:500], f"arguments not valid JSON: {exc.msg}")
    elif args is not None and not isinstance(args, dict):
        return _call(value["name"], json.dumps(args)[:500], "arguments not an object")
    return _call(value["name"], args if args is not None else {}, None)


def _matches(text: str, fmt: str) -> tuple[list[dict[str, str | None]], list[tuple[int, int]]]:
    """The calls of one format and where each sits in the text."""
    calls: list[dict[str, str | None]] = []
    spans: list[tuple[int, int]] = []
    if fmt == "hermes":
        for m in _HERMES.finditer(text):
            calls.append(_hermes(m.group(1)))
            spans.append(m.span())
    elif fmt == "qwen3_coder":
        for m in _QWEN3_CODER.finditer(text):
            args = {k.strip(): v for k, v in _PARAMETER.findall(m.group(2))}
            calls.append(_call(m.group(1).strip(), args, None))
            spans.append(m.span())
    elif fmt in ("glm45", "glm47"):
        for m in _GLM.finditer(text):
            args = {k.strip(): v.strip() for k, v in _GLM_ARG.findall(m.group(2))}
            calls.append(_call(m.group(1).strip(), args, None))
            spans.append(m.span())
    elif fmt == "mistral" and "[TOOL_CALLS]" in text:
        start = text.index("[TOOL_CALLS]")
        found = textcalls.parse(text[start:])
        calls = found[1] if found else []
        spans = [(start, len(text))] * len(calls)
    elif fmt in ("llama3_json", markers.UNWRAPPED_JSON):
        start = text.rfind('{"name"')
        if start >= 0:
            calls = [_hermes(text[start:].strip())]
            spans = [(start, len(text))]
    return calls, spans


def parse(
    reasoning: str | None, fmt: str | None, offered: list[str] | None
) -> list[dict[str, str | None]] | None:
    """The calls the markup of a reasoning text (field or inline block, openers removed)
    writes, each with `error` NULL when it is a call the model made (see the module
    docstring), else why not; None for a format not parsed here."""
    if fmt not in PARSED:
        return None
    text = (reasoning or "")[-TAIL:]
    calls, spans = _matches(text, fmt)
    if not calls:
        return [_call(None, None, "markup without a complete call (no closing marker)")]
    tail = text[max(end for _, end in spans) :]
    out = []
    for call, (start, _) in zip(calls, spans, strict=True):
        if call["error"] is None:
            if start > 0 and text[start - 1] in _QUOTES:
                call = {**call, "error": "quoted in the reasoning"}
            elif not _TRAILER.fullmatch(tail):
                call = {**call, "error": "the reasoning goes on after it: a call quoted in prose"}
            elif offered and call["name"] not in offered:
                call = {**call, "error": f"{call['name']} is no tool the request offered"}
        out.append(call)
    return out
