"""Atropos rollout dumps: the JSONL an environment's process mode writes
(`--env.data_path_to_save_groups`), one scored group per line.

A group (atroposlib.envs.base.ScoredDataGroup) holds parallel lists, one entry per rollout of
the same prompt: `tokens`, `masks`, `scores` and, when the environment keeps them, `messages`.
Each rollout is a trajectory: the group is its task, the rollout its trial, its score its
reward. A rollout's messages are either chat messages (role/content, OpenAI-shaped tool calls)
or one string, the whole conversation as the chat template rendered it: Llama 3
(`<|start_header_id|>role<|end_header_id|>`) and ChatML (`<|im_start|>role`) texts are split
back into turns; other templates stay one text turn. A rollout is the raw completion, so a
leading closed <think> block of an assistant turn is its reasoning, not a leak. A lone
ScoredDataItem (scalar `scores`) is a group of one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from forensics.ingest import jsonrecords
from forensics.ingest.formats.sharegpt import leading_reasoning
from forensics.ingest.parse import jsonhead
from forensics.ingest.parse.apicommon import as_float, as_int
from forensics.ingest.records import Collector, Episode, Run, isolated
from forensics.ingest.registry import FormatSpec

FORMAT = "atropos_groups"

# A dump line starts with the token ids of its rollouts: a list of lists of integers.
_TOKENS_HEAD = re.compile(r'\A\s*\{\s*"tokens"\s*:\s*\[\s*\[\s*-?\d')
_LLAMA3 = re.compile(
    r"<\|start_header_id\|>(\w+)<\|end_header_id\|>\n\n(.*?)(<\|eot_id\|>|(?=<\|start_header_id\|>)|\Z)",
    re.S,
)
_CHATML = re.compile(r"<\|im_start\|>(\w+)\n(.*?)(<\|im_end\|>|(?=<\|im_start\|>)|\Z)", re.S)
_ROLES = {
    "system": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "ipython": "tool",
}


def sniff(head: str) -> str | None:
    if _TOKENS_HEAD.match(head.lstrip("\ufeff")):
        return "JSONL of groups starting with token-id lists (Atropos scored groups)"
    keys = jsonhead.top_level(head)
    if {"tokens", "masks", "scores"} <= keys.keys():
        return "JSONL of objects with tokens, masks and scores (Atropos scored groups)"
    return None


def split_template(text: str) -> list[dict[str, Any]] | None:
    """Turns of a chat-template rendering (Llama 3 or ChatML); None when neither is found."""
    for pattern in (_LLAMA3, _CHATML):
        turns = [
            {"role": _ROLES.get(m.group(1), m.group(1)), "content": m.group(2)}
            for m in pattern.finditer(text)
        ]
        if turns:
            return turns
    return None


def _rollout_messages(item: Any) -> tuple[list[dict[str, Any]], str | None]:
    """(messages, note) of one rollout."""
    if isinstance(item, list):
        return [m for m in item if isinstance(m, dict)], None
    if isinstance(item, str):
        turns = split_template(item)
        if turns is None:
            return [{"role": "user", "content": item}], (
                "rollout kept as one templated text (no Llama 3 or ChatML turn markers)"
            )
        return turns, None
    if isinstance(item, dict):
        return [item], None
    return [], "rollout has no messages"


def _episodes(
    run: Run, path: Path, rec: jsonrecords.Record, group: dict[str, Any], n: int
) -> list[Episode]:
    scores = group.get("scores")
    if not isinstance(scores, list):
        scores = [scores]  # a ScoredDataItem
    messages = group.get("messages")
    if messages is not None and not isinstance(messages, list):
        messages = None
    if (
        isinstance(messages, list)
        and messages
        and isinstance(messages[0], dict)
        and len(scores) == 1
    ):
        messages = [messages]  # the item's own message list
    params = got if isinstance(got := group.get("generation_params"), dict) else {}
    cap = as_int(params.get("max_tokens", params.get("max_new_tokens")))
    base = rec.json_path or "$"
    episodes = []
    for i, score in enumerate(scores):
        item = messages[i] if isinstance(messages, list) and i < len(messages) else None
        msgs, note = _rollout_messages(item) if item is not None else ([], None)
        if item is None:
            note = "group kept no messages for this rollout (include_messages off): no turns"
        ep = Episode(
            run=run,
            source_path=str(path),
            source_line=rec.line,
            source_format=FORMAT,
            task_id=f"group-{n}",
            trial=i,
            reward=as_float(score)
            if isinstance(score, int | float) and not isinstance(score, bool)
            else None,
            note=note,
            json_path=f"{base}.scores[{i}]",
        )
        for j, msg in enumerate(msgs):
            if msg.get("role") == "assistant" and isinstance(msg.get("content"), str):
                # A rollout is the raw completion: no server parser split the reasoning off.
                reasoning, rest = leading_reasoning(msg["content"])
                if reasoning is not None:
                    msg = {**msg, "reasoning": reasoning, "content": rest}
            ep.json_paths[j] = (
                f"{base}.messages[{i}][{j}]" if isinstance(item, list) else f"{base}.messages[{i}]"
            )
            fields = {"max_output_tokens": cap} if msg.get("role") == "assistant" and cap else {}
            ep.add(rec.line, msg, **fields)
        episodes.append(ep)
    return episodes


def ingest(path: Path, collector: Collector) -> int:
    name = str(path)
    run = Run(run_id=path.stem)
    count = groups = 0
    for rec in jsonrecords.read(path, collector, FORMAT):
        with isolated(collector, name, rec.line, FORMAT, rec.json_path):
            group = rec.value
            if not isinstance(group, dict) or "scores" not in group:
                excerpt = json.dumps(group)[:200] if not isinstance(group, dict) else ""
                reason = "record is not a scored group (an object with scores)"
                collector.reject(name, rec.line, reason, excerpt, FORMAT, rec.json_path)
                continue
            groups += 1
            for ep in _episodes(run, path, rec, group, groups):
                collector.add_episode(ep)
                count += 1
    return count


SPECS = (
    FormatSpec(
        name=FORMAT,
        description="Atropos scored groups (process-mode rollout dumps)",
        detection='JSONL whose lines start with {"tokens": [[<ids>…, or objects with tokens, '
        "masks and scores",
        sniff=sniff,
        ingest=ingest,
        priority=830,
        columns=frozenset(
            {"content", "reasoning", "tool_calls", "tool_call_id", "max_output_tokens"}
        ),
        benchmark=False,
        artifact="rollouts",
        rerun=None,
        seeds={"atropos": "tests/data/traces/atropos/math_groups.jsonl"},
    ),
)
