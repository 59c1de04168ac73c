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

The role names are the environment's own: atroposlib passes them through. Names other than
system/user/assistant/tool (`agent` and `environment` in the Rubik's cube environment) are read
from the rollout's structure (`_assign`): the policy is the side that writes tool calls, else the
side that answers the rollout's opening message; the other side is its environment. When that
does not single out the policy the roles stay as written, every turn's actor `unknown`, and the
file's note says that the rules that read agent turns did not see these rollouts.
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
from forensics.ingest.records import Collector, Episode, Run, excerpt, isolated
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
# Markup a policy writes when it calls a tool as text (the completion is raw: no server parser
# turned it into a structured call).
_CALL_MARKUP = ("<tool_call>", "<function=", "[TOOL_CALLS]", "<|python_tag|>")
# What an environment's own role names say about the side, when the structure agrees.
_POLICY_NAMES = {"agent", "policy", "model", "bot", "gpt", "ai", "actor", "player"}
_ENV_NAMES = {"environment", "env", "observation", "obs", "world", "game", "judge", "human"}


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


def _calls(msg: dict[str, Any]) -> bool:
    """Whether a message calls a tool: structured calls, or call markup in its text."""
    content = msg.get("content")
    return bool(msg.get("tool_calls")) or (
        isinstance(content, str) and any(m in content for m in _CALL_MARKUP)
    )


def _assign(msgs: list[dict[str, Any]]) -> tuple[dict[str, str], str | None]:
    """Role names the environment made up -> (assistant or user), or ({}, why not).

    The policy is the side whose messages call tools when only one side does; otherwise, of
    exactly two sides, the one that answers the opening message (a rollout opens with the
    prompt, and the policy completes it). A name that says the opposite (an `environment`
    side found to be the policy) leaves the roles as they are: the structure is not clear.
    """
    speakers: list[str] = []
    for msg in msgs:
        role = msg.get("role")
        if isinstance(role, str) and role != "system" and role not in speakers:
            speakers.append(role)
    unknown = [r for r in speakers if r not in _ROLES]
    if not unknown:
        return {}, None
    callers = [r for r in speakers if any(_calls(m) for m in msgs if m.get("role") == r)]
    policy = None
    if len(callers) == 1:
        policy = callers[0]
    elif len(speakers) == 2:
        policy = speakers[1]
    names = ", ".join(unknown)
    if policy is None:
        return {}, f"{len(speakers)} sides ({', '.join(speakers)}) and no single one calls tools"
    if policy.lower() in _ENV_NAMES or any(
        r.lower() in _POLICY_NAMES for r in speakers if r != policy
    ):
        return {}, f"the structure makes {policy!r} the policy, which its name contradicts"
    if policy in _ROLES and _ROLES[policy] != "assistant":
        return {}, f"the structure makes {policy!r} the policy ({names} unknown)"
    return {r: "assistant" if r == policy else "user" for r in unknown}, None


def _episodes(
    run: Run, path: Path, rec: jsonrecords.Record, group: dict[str, Any], n: int
) -> tuple[list[Episode], dict[str, str], dict[str, int]]:
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
    # name -> role given; why none could be -> rollouts (for the file's note)
    assigned: dict[str, str] = {}
    unassigned: dict[str, int] = {}
    for i, score in enumerate(scores):
        item = messages[i] if isinstance(messages, list) and i < len(messages) else None
        msgs, note = _rollout_messages(item) if item is not None else ([], None)
        if item is None:
            note = "group kept no messages for this rollout (include_messages off): no turns"
        roles, why = _assign(msgs)
        if roles:
            assigned.update(roles)
            msgs = [{**m, "role": roles.get(str(m.get("role")), m.get("role"))} for m in msgs]
            # The other side answers the policy's actions: the environment, not a user.
            actors = {"user": "env"} if any(v == "user" for v in roles.values()) else {}
        else:
            actors = {}
            if why is not None:
                names = ", ".join(
                    sorted({str(m.get("role")) for m in msgs if m.get("role") not in _ROLES})
                )
                key = f"roles {names}: {why}"
                unassigned[key] = unassigned.get(key, 0) + 1
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
            fields: dict[str, Any] = (
                {"max_output_tokens": cap} if msg.get("role") == "assistant" and cap else {}
            )
            if (actor := actors.get(str(msg.get("role")))) is not None:
                fields["actor"] = actor
            ep.add(rec.line, msg, **fields)
        episodes.append(ep)
    return episodes, assigned, unassigned


def ingest(path: Path, collector: Collector) -> int:
    name = str(path)
    run = Run(run_id=path.stem)
    count = groups = 0
    assigned: dict[str, str] = {}
    unassigned: dict[str, int] = {}  # why -> rollouts
    for rec in jsonrecords.read(path, collector, FORMAT):
        with isolated(collector, name, rec.line, FORMAT, rec.json_path):
            group = rec.value
            if not isinstance(group, dict) or "scores" not in group:
                shown = excerpt(json.dumps(group)) if not isinstance(group, dict) else ""
                reason = "record is not a scored group (an object with scores)"
                collector.reject(name, rec.line, reason, shown, FORMAT, rec.json_path)
                continue
            groups += 1
            episodes, roles, why_not = _episodes(run, path, rec, group, groups)
            assigned.update(roles)
            for why, n in why_not.items():
                unassigned[why] = unassigned.get(why, 0) + n
            for ep in episodes:
                collector.add_episode(ep)
                count += 1
    if assigned:
        said = ", ".join(f"{given} as {role}" for given, role in sorted(assigned.items()))
        collector.note(
            name,
            f"the environment's own role names read by the rollouts' structure: {said} "
            "(the policy calls the tools, or answers the opening message)",
        )
    for why, n in sorted(unassigned.items()):
        collector.note(
            name,
            f"ACTORS NOT ASSIGNED in {n} rollout(s), {why}: their turns are actor unknown and "
            "no rule that reads agent turns checked them",
        )
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
