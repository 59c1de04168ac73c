"""How a transcript ended, when its reader can tell (issue 21 item 5).

A format that always writes a closing record when its run ends (Claude Code stream-json's
`result` line, …) lets its reader see a transcript that stops without it: the run was killed, the
harness crashed, or the file was cut. Such an episode is declared here with `cut_off`: its
termination reason becomes CUT_OFF, its error the evidence (the crash text written into the log
when there is one, else the last record), and its note says what was missing. The rule
`run-cut-off` reports it once, at its last turn, instead of leaving a list of rejects and
silence. An episode whose harness already said how it ended (a termination reason) keeps it.

Only a reader that knows its format's end marker may declare one: a transcript format without
one (a Claude Code session file, which a later session may resume) says nothing.
"""

from __future__ import annotations

from typing import Any

from forensics import linear, markers
from forensics.ingest.records import Collector, Episode

CUT_OFF = "cut_off"
# The note's words the rule quotes: "cut off: <what was missing>".
NOTE_PREFIX = "cut off: "
EVIDENCE_CHARS = 600

# The first line of a crash a harness prints: a Python traceback, an exception line, a Node.js
# or Go crash, a shell's kill message. Anchored at the line start so prose quoting them is not.
_CRASH_START = linear.compile(
    r"^(?:Traceback \(most recent call last\):"
    r"|(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)\b(?::|$)"
    r"|Uncaught \w*(?:Error|Exception)"
    r"|panic: |fatal error: |FATAL ERROR: "
    r"|Killed$|Segmentation fault)"
)


def cut_off(ep: Episode, missing: str, evidence: str | None) -> None:
    """Declare that `ep` stops without the record its format closes a run with."""
    if ep.termination_reason:
        return  # the harness said how it ended: that is the finding
    ep.termination_reason = CUT_OFF
    if evidence:
        ep.error = evidence[:EVIDENCE_CHARS]
    said = f"{NOTE_PREFIX}{missing}"
    ep.note = f"{ep.note}; {said}" if ep.note else said


def crash_text(collector: Collector, path: str) -> tuple[int, str] | None:
    """(line, text) of a crash written into a JSONL file: the first rejected (non-JSON) line
    that opens one, and the rejected lines right after it. None when no rejected line does."""
    rows = [
        r
        for r in collector.reject_rows
        if r["source_path"] == path
        and isinstance(r["source_line"], int)
        and str(r["reason"]).startswith("invalid JSON")
    ]
    rows.sort(key=lambda r: r["source_line"])
    for i, row in enumerate(rows):
        if _CRASH_START.match(str(row["excerpt"]).lstrip()):
            lines = [str(row["excerpt"])]
            previous = row["source_line"]
            for after in rows[i + 1 :]:
                if after["source_line"] != previous + 1:
                    break
                lines.append(str(after["excerpt"]))
                previous = after["source_line"]
            return row["source_line"], "\n".join(lines)
    return None


STREAM_JSON_UNFINISHED = "the Claude Code stream-json output ends without its closing `result` line"
MINI_UNFINISHED = (
    "the mini-swe-agent (v2) trajectory has no exit message and no exit status: it was saved "
    "mid-run"
)
OPENHANDS_UNFINISHED = (
    "the OpenHands conversation's execution status is still `running` where its events end: "
    "no finish, error or stuck state was recorded"
)
ATIF_UNFINISHED = (
    "the ATIF trajectory stops on tool results, with no final agent message and no call that "
    "ends the task (no result.json says how the trial ended)"
)

_FINAL_CALLS = linear.compile(markers.FINAL_CALL_NAME_RE)
_SUBMIT_COMMAND = linear.compile(markers.SUBMIT_COMMAND_RE)


def ends_on_tool_result(ep: Episode) -> str | None:
    """The last agent step, as evidence, when an agent transcript ends on the results of calls
    that end nothing (no final message after them, no submit/finish call): the run stopped while
    the agent was still working. None when it ends otherwise."""
    listed = [m for _, m in ep.messages]
    if not listed or listed[-1].get("role") != "tool":
        return None
    index = next(
        (i for i in reversed(range(len(listed))) if listed[i].get("role") == "assistant"), None
    )
    if index is None:
        return None
    agent = listed[index]
    calls = _calls(agent.get("tool_calls")) or _calls(
        ep.turn_fields.get(index, {}).get("tool_calls")
    )
    if not calls:
        return None
    for name, arguments in calls:
        if _FINAL_CALLS.match(name.strip()) or _SUBMIT_COMMAND.search(arguments):
            return None
    text = agent.get("content")
    said = text.strip() if isinstance(text, str) else ""
    names = ", ".join(name for name, _ in calls if name)
    return f"last agent step: {said[:400]}" + (f" (calls {names})" if names else "")


def _calls(calls: Any) -> list[tuple[str, str]]:
    """(name, arguments text) of structured calls in the OpenAI or the flat shape."""
    out = []
    for call in calls if isinstance(calls, list) else []:
        if not isinstance(call, dict):
            continue
        fn = call["function"] if isinstance(call.get("function"), dict) else call
        name, arguments = fn.get("name"), fn.get("arguments")
        out.append(
            (
                name if isinstance(name, str) else "",
                arguments if isinstance(arguments, str) else str(arguments or ""),
            )
        )
    return out
