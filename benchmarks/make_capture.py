"""Writes a large synthetic capture of agent loops: JSONL of {"request", "response"} records.

    python benchmarks/make_capture.py OUT.jsonl --mb 500 [--seed 7] [--concurrency 8]

Like a proxy log of a tau-bench run: several conversations at once (their calls interleave),
each call re-sending the whole growing history (system prompt, user turns, assistant tool calls,
tool results), a fifth of the answers streamed as SSE text, and the failures the rules look for
sprinkled in (`length` inside an unclosed <think>, empty `stop` with tools attached). The file
is written as it is generated, so its size costs no memory. Same seed, same bytes.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator
from pathlib import Path

_VOCABULARY = (
    "order refund exchange policy customer account address payment shipping item status "
    "pending delivered cancel return warranty email confirm verify product size colour "
    "the a to of and for with your please thank you I will check now let me see"
)
WORDS = _VOCABULARY.split()
POLICY = " ".join(
    f"Rule {i}: the agent must verify the customer identity before changing order {i}."
    for i in range(40)
)
# Fourteen tool schemas with descriptions, about 10 KB of JSON like tau-bench retail's: every
# request of a real agent loop carries them, next to the policy and the history.
_TOOL_NAMES = [
    "find_user_id_by_email",
    "find_user_id_by_name_zip",
    "get_user_details",
    "get_order_details",
    "get_product_details",
    "list_all_product_types",
    "cancel_pending_order",
    "modify_pending_order_items",
    "modify_pending_order_address",
    "modify_pending_order_payment",
    "modify_user_address",
    "return_delivered_order_items",
    "exchange_delivered_order_items",
    "transfer_to_human_agents",
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": (
                f"{name.replace('_', ' ').capitalize()}. The agent must obtain explicit user "
                "confirmation (yes) before taking consequential actions; ids look like '#W0000000'."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "order_id": {
                        "type": "string",
                        "description": "The order id, such as '#W0000000'.",
                    },
                    "item_ids": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "The item ids to act on, each a 10-digit string.",
                    },
                    "payment_method_id": {
                        "type": "string",
                        "description": "The payment method id, such as 'gift_card_0000000'.",
                    },
                    "reason": {
                        "type": "string",
                        "enum": ["no longer needed", "ordered by mistake"],
                    },
                },
                "required": ["order_id"],
            },
        },
    }
    for name in _TOOL_NAMES
]
URL = "http://vllm.bench:8000/v1/chat/completions"


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def chat_body(rid: str, message: dict, finish: str, prompt: int, completion: int) -> dict:
    return {
        "id": rid,
        "object": "chat.completion",
        "model": "Qwen/Qwen3-8B",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
    }


def sse_body(rid: str, message: dict, finish: str) -> str:
    def chunk(delta: dict, reason: str | None = None) -> str:
        body = {"id": rid, "object": "chat.completion.chunk", "model": "Qwen/Qwen3-8B"}
        body["choices"] = [{"index": 0, "delta": delta, "finish_reason": reason}]
        return "data: " + json.dumps(body) + "\n\n"

    out = [chunk({"role": "assistant", "content": ""})]
    content = message.get("content") or ""
    for start in range(0, len(content), 40):
        out.append(chunk({"content": content[start : start + 40]}))
    for index, call in enumerate(message.get("tool_calls") or []):
        fn = call["function"]
        first = {"index": index, "id": call["id"], "type": "function"}
        out.append(
            chunk({"tool_calls": [{**first, "function": {"name": fn["name"], "arguments": ""}}]})
        )
        out.append(
            chunk({"tool_calls": [{"index": index, "function": {"arguments": fn["arguments"]}}]})
        )
    out.append(chunk({}, finish))
    return "".join(out) + "data: [DONE]\n\n"


# --light: four one-line tools, so the bytes are mostly history (the harder case for forensics,
# whose cost follows the messages while a bare JSON reader's follows the bytes).
LIGHT_TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in _TOOL_NAMES[:4]
]


def conversation(rng: random.Random, cid: int, tools: list[dict]) -> Iterator[dict]:
    """The records of one agent loop, one per call."""
    history = [
        {"role": "system", "content": POLICY},
        {"role": "user", "content": f"Hi, conversation {cid}. " + text(rng, 30)},
    ]
    for step in range(rng.randint(4, 20)):
        stream = rng.random() < 0.2
        request = {
            "model": "Qwen/Qwen3-8B",
            "messages": list(history),
            "tools": tools,
            "max_tokens": 1024,
            "stream": stream,
        }
        roll = rng.random()
        rid = f"chatcmpl-{cid}-{step}"
        if roll < 0.03:  # truncated mid-reasoning
            message = {"role": "assistant", "content": "<think>\n" + text(rng, 120)}
            finish = "length"
        elif roll < 0.05:  # empty answer with tools attached
            message = {"role": "assistant", "content": ""}
            finish = "stop"
        elif roll < 0.75:
            args = json.dumps({"id": f"#W{rng.randint(1000, 9999)}"})
            call = {"id": f"call-{cid}-{step}", "type": "function"}
            call["function"] = {"name": rng.choice(tools)["function"]["name"], "arguments": args}
            message = {"role": "assistant", "content": text(rng, 20), "tool_calls": [call]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": text(rng, 60)}
            finish = "stop"
        body = (
            sse_body(rid, message, finish) if stream else chat_body(rid, message, finish, 900, 80)
        )
        yield {
            "request": {"method": "POST", "url": URL, "body": request},
            "response": {"status": 200, "body": body},
        }
        if finish in ("length",):
            return
        history.append(message)
        if finish == "tool_calls":
            call_id = message["tool_calls"][0]["id"]
            history.append({"role": "tool", "tool_call_id": call_id, "content": text(rng, 80)})
        else:
            history.append({"role": "user", "content": text(rng, 25)})


def write(
    out: Path, megabytes: float, seed: int = 7, concurrency: int = 8, light: bool = False
) -> tuple[int, int]:
    """Write about `megabytes` MB of records; returns (bytes, records)."""
    tools = LIGHT_TOOLS if light else TOOLS
    rng = random.Random(seed)
    target = int(megabytes * 1_000_000)
    written = records = 0
    next_id = 0
    live: list[Iterator[dict]] = []
    with out.open("w", encoding="utf-8") as f:
        while written < target:
            while len(live) < concurrency:
                live.append(conversation(rng, next_id, tools))
                next_id += 1
            slot = rng.randrange(len(live))
            record = next(live[slot], None)
            if record is None:
                live.pop(slot)
                continue
            line = json.dumps(record) + "\n"
            f.write(line)
            written += len(line.encode())
            records += 1
    return written, records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=float, default=100.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--light", action="store_true", help="four one-line tool schemas")
    args = parser.parse_args()
    size, records = write(args.out, args.mb, args.seed, args.concurrency, args.light)
    print(f"{args.out}: {size / 1e6:.1f} MB, {records} records")


if __name__ == "__main__":
    main()
