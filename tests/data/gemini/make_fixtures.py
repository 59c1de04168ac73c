"""Regenerate the Gemini fixtures from the pydantic-ai cassettes' extracted interactions and
SDK dumps in tests/data/pydantic_ai/ (stdlib only, deterministic).

Run from the repository root: `python tests/data/gemini/make_fixtures.py`. See README.md for
what each file holds; the synthetic_* files are written by hand and not touched here.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
API = HERE.parent / "pydantic_ai"


def interactions() -> dict[tuple[str, int], dict]:
    out = {}
    with open(API / "extracted_interactions.jsonl", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            if d["source_file"].startswith("gemini/"):
                name = d["source_file"].removeprefix("gemini/").removesuffix(".yaml")
                out[(name, d["interaction_index"])] = d
    return out


def body(d: dict) -> dict:
    return d["response"]["body_json"]


def main() -> None:
    found = interactions()
    pretty = {
        "rest_max_tokens.json": ("test_google_model_max_tokens", 0),
        "rest_max_tokens_thinking_empty.json": (
            "test_google_model_max_tokens_thinking_model_empty_response",
            0,
        ),
    }
    for name, key in pretty.items():
        text = json.dumps(body(found[key]), indent=2, ensure_ascii=False) + "\n"
        (HERE / name).write_text(text, encoding="utf-8")
    lines = [
        ("test_google_model_armor_prompt_template_text_gets_blocked", 1),
        ("test_google_model_armor_response_template_real_block", 0),
        ("test_google_model_safety_settings", 0),
        ("test_google_model_thinking_part", 0),
        ("vertex_unexpected_tool_call_first_interaction", 0),
    ]
    with open(HERE / "rest_responses.jsonl", "w", encoding="utf-8") as f:
        for key in lines:
            f.write(json.dumps(body(found[key]), ensure_ascii=False) + "\n")
    with (
        open(API / "gemini" / "derived_google_genai_sdk_dumps.jsonl", encoding="utf-8") as src,
        open(HERE / "sdk_dumps.jsonl", "w", encoding="utf-8") as out,
    ):
        for line in src:
            out.write(json.dumps(json.loads(line)["to_json_dict"], ensure_ascii=False) + "\n")
    streams = {
        "stream_alt_sse.txt": ("test_google_model_stream", 0),
        "stream_tool_call_alt_sse.txt": ("test_google_streaming_tool_call_thought_signature", 0),
    }
    for name, key in streams.items():
        with open(HERE / name, "w", encoding="utf-8", newline="") as f:
            f.write(found[key]["response"]["body_text"])
    # Without ?alt=sse the endpoint streams one JSON array of the same chunks.
    sse = found[("test_google_streaming_tool_call_thought_signature", 1)]["response"]["body_text"]
    chunks = [json.loads(e[6:]) for e in sse.split("\r\n\r\n") if e.startswith("data: ")]
    array = "[" + ",\r\n".join(json.dumps(c, ensure_ascii=False) for c in chunks) + "]"
    with open(HERE / "stream_json_array.json", "w", encoding="utf-8", newline="") as f:
        f.write(array)
    with open(HERE / "interactions.jsonl", "w", encoding="utf-8") as f:
        for key in sorted(found):
            f.write(json.dumps(found[key], ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
