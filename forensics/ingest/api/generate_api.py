"""Inference servers' native generate endpoints, below chat completions: SGLang `/generate` and
vLLM's token-level `/inference/v1/generate`.

RL environments call these with a prompt already rendered by the chat template (or token ids),
so a truncation shows only here. Text Generation Inference's `/generate` (`generated_text`,
`details.finish_reason` length / eos_token / stop_sequence, `parameters.max_new_tokens`) reads
the same way. No reasoning parser runs at this level: a leading closed
`<think>` block is split off as reasoning here, as a parser would; an unclosed one stays in the
text, where it shows the cut. SGLang answers `{"text", "output_ids", "meta_info": {"id",
"finish_reason": {"type": "length"|"stop"|"abort", …}, "prompt_tokens", "completion_tokens"}}`
(streamed as SSE chunks whose text is cumulative by default); its cap is
`sampling_params.max_new_tokens`. vLLM answers `{"request_id", "choices": [{"token_ids",
"finish_reason"}]}` with the cap in `sampling_params.max_tokens`. A rendered ChatML or Llama 3
prompt is split back into its messages, so the calls of one episode link into one trajectory;
any other prompt is one user message.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from forensics import linear
from forensics.ingest.parse.apicommon import as_dict, as_int, as_str, error_text

# role, text, and whether the segment was closed (an open last one is the generation prompt).
_CHATML = re.compile(r"<\|im_start\|>(\w+)\n?(.*?)(<\|im_end\|>|(?=<\|im_start\|>)|\Z)", re.S)
_LLAMA3 = re.compile(
    r"<\|start_header_id\|>(\w+)<\|end_header_id\|>\n*(.*?)(<\|eot_id\|>|<\|eom_id\|>|\Z)", re.S
)
# RE2: under `re`, a `<think>` that never closes behind a long run of blanks was rescanned once
# per blank.
_LEADING_THINK = linear.compile(rf"(?s){linear.SPACE}*<think>(.*?)</think>{linear.SPACE}*")
_ROLES = {"ipython": "tool", "tool": "tool", "system": "system", "assistant": "assistant"}


def claims_path(path: str) -> bool:
    # SGLang serves /generate at the root; a deeper /generate is anybody's, left to the bodies.
    return path == "/generate" or path.endswith("/inference/v1/generate")


def _sglang_body(body: Mapping[str, Any]) -> bool:
    return isinstance(body.get("meta_info"), dict) and ("text" in body or "output_ids" in body)


def _vllm_body(body: Mapping[str, Any]) -> bool:
    choices = body.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    return isinstance(first, dict) and "token_ids" in first and "message" not in first


def _tgi_body(body: Mapping[str, Any]) -> bool:
    """Text Generation Inference: `generated_text` (and `details`), or a stream's token event."""
    return "generated_text" in body or (isinstance(body.get("token"), dict) and "details" in body)


def is_response(body: Mapping[str, Any]) -> bool:
    return _sglang_body(body) or _vllm_body(body) or _tgi_body(body)


def is_request(body: Mapping[str, Any]) -> bool:
    if isinstance(body.get("parameters"), dict) and "inputs" in body:
        return True  # TGI
    return isinstance(body.get("sampling_params"), dict) and bool(
        body.keys() & {"text", "input_ids", "token_ids"}
    )


def _split_template(prompt: str) -> list[dict[str, Any]] | None:
    for pattern in (_CHATML, _LLAMA3):
        segments = pattern.findall(prompt)
        if not segments:
            continue
        out = []
        for role, text, closer in segments:
            out.append(
                {
                    "role": _ROLES.get(role, "user"),
                    "content": text.strip("\n"),
                    "tool_calls": [],
                    "open": not closer,
                }
            )
        if out and out[-1]["role"] == "assistant" and out[-1]["open"]:
            out.pop()  # the generation prompt (and any prefill) the answer continues
        for message in out:
            del message["open"]
        return out
    return None


def request_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    prompt = body.get("text", body.get("prompt", body.get("inputs")))
    if isinstance(prompt, list) and len(prompt) == 1:
        prompt = prompt[0]
    if not isinstance(prompt, str):
        return []  # token ids only: there is no text to show
    split = _split_template(prompt)
    return split if split is not None else [{"role": "user", "content": prompt, "tool_calls": []}]


def request_fields(body: Mapping[str, Any]) -> dict[str, Any]:
    params = as_dict(body.get("sampling_params") or body.get("parameters"))
    cap = as_int(params.get("max_new_tokens", params.get("max_tokens")))
    return {
        "model": as_str(body.get("model")),
        "max_output_tokens": cap,
        "tool_count": None,
        "tools_attached": None,
        "stream": body.get("stream") is True,
    }


def _finish(value: Any) -> tuple[str | None, str | None]:
    """(raw finish reason, error) of a finish_reason: SGLang's dict or a plain string."""
    if isinstance(value, dict):
        kind = as_str(value.get("type"))
        message = value.get("message")
        return kind, error_text(message) if kind == "abort" and message else None
    return as_str(value), None


def response_turn(body: Mapping[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    if not is_response(body):
        return None, {"error": error_text(body.get("error") or body.get("message"))}
    message, fields = stream_turn([body])
    fields.pop("stream_completed", None)
    return message, fields


def stream_turn(chunks: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    text: str | None = None
    fields: dict[str, Any] = {}
    errors: list[str] = []
    ids: set[str] = set()
    finished = False
    whole = False  # a TGI answer without details: complete, its finish reason not asked for
    for chunk in chunks:
        if "error" in chunk and not is_response(chunk):
            errors.append(f"error inside the stream: {error_text(chunk.get('error'))}")
            continue
        if _tgi_body(chunk):
            details = as_dict(chunk.get("details"))
            raw, error = as_str(details.get("finish_reason")), None
            if (count := as_int(details.get("generated_tokens"))) is not None:
                fields["output_tokens"] = count
            if isinstance(chunk.get("generated_text"), str):
                text, whole = chunk["generated_text"], True
            elif isinstance(piece := as_dict(chunk.get("token")).get("text"), str):
                text = (text or "") + piece
        elif _vllm_body(chunk):
            choice = as_dict(chunk["choices"][0])
            raw, error = _finish(choice.get("finish_reason"))
            tokens = choice.get("token_ids")
            if isinstance(tokens, list):
                fields["output_tokens"] = fields.get("output_tokens", 0) + len(tokens)
            piece = as_str(choice.get("text"))
            if piece:
                text = (text or "") + piece
        else:
            meta = as_dict(chunk.get("meta_info"))
            if rid := as_str(meta.get("id")):
                ids.add(rid)
            raw, error = _finish(meta.get("finish_reason"))
            for column, key in (
                ("input_tokens", "prompt_tokens"),
                ("output_tokens", "completion_tokens"),
            ):
                if (count := as_int(meta.get(key))) is not None:
                    fields[column] = count
            piece = chunk.get("text")
            if isinstance(piece, str):
                # Cumulative by default; incremental output (a server flag) sends deltas.
                text = piece if text is None or piece.startswith(text) else text + piece
        if raw is not None:
            finished = True
            fields["finish_reason_raw"] = raw
        if error:
            errors.append(error)
    if len(ids) > 1:
        errors.append(f"a batch of {len(ids)} generations: only their merged text is read")
    fields["stream_completed"] = finished or whole
    if not (finished or whole):
        errors.append("no finish_reason: the generation was cut off")
    if errors:
        fields["error"] = "; ".join(errors)
    reasoning = None
    if text is not None and (match := _LEADING_THINK.match(text)):
        # What a reasoning parser would have split off; an unclosed block stays in the text.
        reasoning, text = match.group(1), text[match.end() :]
    return {"role": "assistant", "content": text, "reasoning": reasoning, "tool_calls": []}, fields
