"""Multi-agent conversations as AG2 and Magentic-One histories: the Who&When failure-attribution
dataset (ag2ai/Agents_Failure_Attribution) and the Magentic-One trajectories of AgentRx
(microsoft/AgentRx).

Who&When keeps one run per file, `{"history": [...], "question", "ground_truth",
"mistake_agent", "mistake_step", ...}`:

- its Algorithm-Generated runs are AG2 (CaptainAgent) group chats whose messages are
  `{"content", "role", "name"}`: `name` is the agent that spoke (an expert such as
  `Verification_Expert`, or `Computer_terminal`, AG2's code executor), `role` is relative to the
  agent that recorded the chat (user for what others said) and says nothing about the speaker;
- its Hand-Crafted runs are Magentic-One logs whose messages are `{"content", "role"}`, `role`
  being the speaker as Magentic-One's log names it: `human` (the task), `Orchestrator (thought)`,
  `Orchestrator (-> WebSurfer)`, `Orchestrator (termination condition)`, `WebSurfer`,
  `FileSurfer`, `Assistant`, `ComputerTerminal`.

AgentRx keeps the Magentic-One histories as bare arrays of the same messages.

One file is one trajectory (task id: `question_ID`, else the file name) and each history entry
exactly one turn, so `turn_index` is the entry's 0-based index in `history` (Who&When's
`mistake_step`; AgentRx's 1-based `step_number` is `turn_index + 1`). The speaker is kept as it
was written in `agent_name`. Roles: the task (`human`) is user (actor user_sim); the agents
whose messages their code writes are the environment (role user, as AG2 and Magentic-One
deliver them, actor env): the code executors (`Computer_terminal`, `ComputerTerminal`) and
Magentic-One's WebSurfer and FileSurfer (the action taken and the page or file shown); every
other agent (AG2's experts, Magentic-One's Orchestrator and Assistant) is assistant (actor
agent). The labels (mistake agent, step, reason) are not read: they
are what an evaluation scores against; `is_correct` is the reward (1 or 0).

How a Magentic-One run ended is in its last entry, where the log also caught the runner's
console: the orchestrator's `FINAL ANSWER: …` and the runner's `SCENARIO.PY COMPLETE !#!#`
(138 of the 142 logs of both datasets). A scenario that crashed ends with its traceback and
`SCENARIO.PY EXITED WITH CODE: 1 !#!#` (2 logs): the episode's termination reason is the
exception's class and its error the exception line. A log whose last entry is an agent's reply
that the orchestrator never answered, with no final answer and no exit line, was cut off
mid-run (2 logs; AgentRx labels one a System Failure at that step).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from forensics import linear
from forensics.ingest import jsonrecords
from forensics.ingest.formats import _ending
from forensics.ingest.parse import files, jsonhead, jsonwalk, walkers
from forensics.ingest.parse.apicommon import json_text, text_of
from forensics.ingest.records import Collector, Episode, Run, excerpt, unreadable
from forensics.ingest.registry import FormatSpec

FORMAT = "multi_agent_history"

# Magentic-One's orchestrator names itself with what it does: "Orchestrator (thought)", "(->
# WebSurfer)", "(termination condition)". A bare list whose speakers are these is its log.
_MAGENTIC = linear.compile(r'"role"\s*:\s*"Orchestrator \((?:thought|-> |termination)')
_ARRAY_HEAD = linear.compile(r'\A\[\s*\{\s*"(?:content|role)"\s*:')
# Keys of other formats' history entries: SWE-agent (agent, message_type), OpenHands (source,
# action, observation).
_FOREIGN = frozenset({"agent", "message_type", "source", "action", "observation"})
_TASK_SPEAKERS = frozenset({"human"})
# Agents whose messages their code writes, not a model: the code executors report what code
# another agent wrote did (AG2's executor is a UserProxyAgent, its output a user message; an
# exception there is that agent's program's, not a tool's own), Magentic-One's WebSurfer and
# FileSurfer report the action their model picked and the page or file it showed ("I clicked
# 'Calendar'.", the viewport's text). They are the environment speaking.
_ENVIRONMENT = frozenset({"Computer_terminal", "ComputerTerminal", "WebSurfer", "FileSurfer"})
# The end of a Magentic-One run as its log caught the console (autogenbench's scenario runner).
_FINAL_ANSWER = linear.compile(r"(?m)^FINAL ANSWER:")
_SCENARIO_EXIT = linear.compile(r"SCENARIO\.PY EXITED WITH CODE: (\d+) !#!#")
_EXCEPTION_LINE = linear.compile(
    r"(?m)^(?:[A-Za-z_]\w*\.)*([A-Z]\w*(?:Error|Exception|Exit|Interrupt))\b(?::.*)?$"
)
MAGENTIC_CUT_OFF = (
    "the Magentic-One log stops on an agent's reply the orchestrator never answered: no final "
    "answer, no exit line of the scenario runner"
)


def sniff(head: str) -> str | None:
    text = head.lstrip("\ufeff \t\r\n")
    if _ARRAY_HEAD.match(text) and _MAGENTIC.search(text):
        return "JSON array of {content, role} messages spoken by Magentic-One agents"
    if not text.startswith("{"):
        return None
    keys = jsonhead.top_level(text)
    if "history" not in keys:
        return None
    first = _first_entry(text)
    if first is None or not {"content", "role"} <= first or first & _FOREIGN:
        return None
    if "name" in first or _MAGENTIC.search(text) or "mistake_agent" in keys:
        return "JSON object with a history of {content, role[, name]} messages (AG2 / Magentic-One)"
    return None


_ENTRY = linear.compile(r'"history"\s*:\s*\[\s*\{')


def _first_entry(text: str) -> set[str] | None:
    """The keys of the history's first message, from a head that may cut the file."""
    m = _ENTRY.search(text)
    if m is None:
        return None
    return set(jsonhead.top_level(text[m.end() - 1 :]))


def _speaker(item: dict[str, Any], named: bool) -> str | None:
    value = item.get("name") if named else item.get("role")
    return value if isinstance(value, str) and value else None


def _turn(item: dict[str, Any], named: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """The message and its turn columns: role and actor from who spoke."""
    speaker = _speaker(item, named)
    if not named and speaker in _TASK_SPEAKERS:
        role, actor = "user", "user_sim"
    elif speaker in _ENVIRONMENT:
        role, actor = "user", "env"
    elif speaker is None:
        role, actor = None, "unknown"
    else:
        role, actor = "assistant", "agent"
    msg = {"role": role, "content": text_of(item.get("content"))}
    if isinstance(item.get("tool_calls"), list):
        msg["tool_calls"] = item["tool_calls"]
    return msg, {"actor": actor, "agent_name": speaker}


def ingest(path: Path, collector: Collector) -> int:
    name = str(path)
    text = files.read_text(path)
    bare = text.lstrip("\ufeff \t\r\n").startswith("[")
    read = jsonrecords.document(
        collector,
        name,
        text,
        FORMAT,
        "not a whole history file",
        walkers.positioned()
        if bare
        else lambda t, pos: jsonwalk.obj(t, pos, {"history": walkers.positioned()}),
        skip_bom=True,
        excerpt_from_start=True,
    )
    if read is None:
        return 0
    doc: dict[str, Any] = {"history": read.value} if bare else read.value
    line_of = read.line_of
    entries = walkers.items(doc, "history")
    if entries is None:
        shown = json_text(doc.get("history")) or ""
        collector.reject(name, 1, "history is not an array", shown, FORMAT, "$.history")
        return 0
    dicts = [item for _, item in entries if isinstance(item, dict)]
    # AG2 messages name their speaker; Magentic-One's role is the speaker.
    named = any("name" in item for item in dicts)
    question_id = doc.get("question_ID")
    # The files of one directory are runs of one system on one dataset.
    run = Run(run_id=path.parent.name or "history")
    correct = doc.get("is_correct")
    ep = Episode(
        run=run,
        source_path=name,
        source_line=line_of(read.start),
        source_format=FORMAT,
        task_id=str(question_id) if isinstance(question_id, str | int) else path.stem,
        reward=(1.0 if correct else 0.0) if isinstance(correct, bool) else None,
        json_path="$",
    )
    where = "$" if bare else "$.history"
    skipped: list[int] = []
    for i, (pos, item) in enumerate(entries):
        at = f"{where}[{i}]"
        if unreadable(collector, name, line_of(pos), item, FORMAT, at, text, pos):
            skipped.append(i)
            continue
        if not isinstance(item, dict):
            reason = "history entry is not a JSON object"
            shown = excerpt(json.dumps(item))
            collector.reject(name, line_of(pos), reason, shown, FORMAT, at)
            skipped.append(i)
            continue
        msg, fields = _turn(item, named)
        ep.json_paths[len(ep.messages)] = at
        ep.add(line_of(pos), msg, **fields)
    if not named and dicts:
        _ending_of_magentic_one(ep, dicts[-1])
    if skipped:
        # turn_index is the history index only up to the first entry left out.
        ep.note = (
            f"history entries {', '.join(map(str, skipped))} rejected: turn_index is the "
            f"history index before entry {skipped[0]} only"
        )
    collector.add_episode(ep)
    return 1


def _ending_of_magentic_one(ep: Episode, last: dict[str, Any]) -> None:
    """A crashed scenario's exception, or a log cut off mid-run, from the last entry."""
    text = text_of(last.get("content")) or ""
    speaker = _speaker(last, named=False) or ""
    exited = _SCENARIO_EXIT.search(text)
    if exited is not None:
        if exited.group(1) == "0":
            return
        # the exception the traceback ends with, just before the runner's exit line
        raised = list(_EXCEPTION_LINE.finditer(text, 0, exited.start()))
        if raised:
            ep.termination_reason = raised[-1].group(1)
            ep.error = raised[-1].group(0)[:600] + "\n" + exited.group(0)
        return
    if _FINAL_ANSWER.search(text) or speaker.startswith("Orchestrator"):
        return
    # the orchestrator speaks after every agent's reply until it gives the final answer: a log
    # ending on a reply it never answered stopped mid-run
    _ending.cut_off(ep, MAGENTIC_CUT_OFF, f"last entry ({speaker}): {text.strip()[-300:]}")


SPECS = (
    FormatSpec(
        name=FORMAT,
        description="Multi-agent chat histories: AG2 group chats and Magentic-One logs "
        "(Who&When, AgentRx)",
        detection="a JSON object whose history holds {content, role[, name]} messages, or a "
        "JSON array of messages spoken by Magentic-One's Orchestrator",
        sniff=sniff,
        ingest=ingest,
        priority=520,
        columns=frozenset({"content", "agent_name"}),
        benchmark=True,
        artifact="histories",
        rerun=None,
        seeds={
            "who_when_ag2": "tests/data/agents/multi_agent/whowhen_algorithm_generated_1.json",
            "who_when_magentic": "tests/data/agents/multi_agent/whowhen_hand_crafted_1.json",
            "agentrx_magentic": "tests/data/agents/multi_agent/agentrx_magentic_f88066d2.json",
        },
    ),
)
