"""Companion files: what a results folder holds beside the run's artifact.

A harness writes its results next to a `config.json`, a `config.yaml`, a `run.log`, a
`scores.csv`, `notes.txt`. Such a file is no failure of the run, so it must not fail the gate;
an artifact that forensics cannot read must. A file is **plainly not an agent artifact** (it is
skipped and listed with the reason, as ruff and pre-commit pass over files they do not handle)
when all of this holds:

- no format claims it: only the text scanner, which takes any text, read it (a file a format
  claims and cannot read is that format's failure, and fails the gate);
- the text scanner found nothing in it: no record, no episode, no note, and no reject (a reject
  is an object that looked like a message and could not be read);
- nothing in it looks like the record of an agent run (`record_marker`): no chat message,
  no key that only records of conversations and model calls carry, no marker a harness, a chat
  template or an SDK prints.

An empty file, a binary file and a file no text scanner could take stay unreadable: an empty
results file is what a crashed harness leaves, and a binary one may be an artifact compressed
in a way forensics does not read.
"""

from __future__ import annotations

import re
from pathlib import Path

from forensics import markers
from forensics.ingest.parse import files

# Why a companion file was skipped, as the skipped list says it.
REASON = "not an agent artifact (no format reads it; no message, conversation or run in it)"

# Roles of chat messages, as the formats forensics reads spell them.
_ROLES = r"(?:system|user|assistant|tool|function|developer|model|human|gpt|ai|bot|ipython)"
# Keys only records of conversations and model calls carry.
_KEYS = (
    r"(?:messages|conversations?|traj|trajector(?:y|ies)|chat_history|tool_calls?|tool_call_id"
    r"|function_call|tool_use|tool_result|reasoning_content|finish_reason|stop_reason|choices"
    r"|completion|completion_tokens|prompt_tokens|input_tokens|output_tokens|observation"
    r"|thought)"
)
# One pattern for the file's lines: a key written as JSON or a Python repr writes it ("key":,
# 'key':), as YAML does at the start of a line (key: or - key:), or as key=value; a role key
# (quoted, any value) or a role with a chat role as its value; and the markers that harnesses,
# chat templates and SDKs print.
_MARKERS = re.compile(
    "|".join(
        [
            rf"""["']{_KEYS}["']\s*:""",
            rf"^\s*(?:-\s+)?{_KEYS}\s*:(?:\s|$)",
            rf"\b{_KEYS}=",
            r"""["']role["']\s*:""",
            rf"""^\s*(?:-\s+)?role\s*:\s*["']?{_ROLES}\b""",
            rf"""\brole=["']?{_ROLES}\b""",
            # tau-bench's console: a task starts, a result line, its printed argparse args
            r"Running task \S|\btask_id=\S|Namespace\(",
            # reasoning and tool-call markup, chat-template control tokens
            markers.OPEN_RE,
            markers.CLOSE_RE,
            markers.TOOL_NAME_MARKUP,
            r"<\|(?:im_start|im_end|eot_id|start_header_id|end_header_id|channel|message)\|>",
            r"\[/?INST\]|<(?:start|end)_of_turn>",
            # printed SDK objects, a server-sent event stream
            r"\b(?:ChatCompletion|ChatCompletionMessage|AIMessage|HumanMessage|SystemMessage"
            r"|ToolMessage|ModelResponse)\(",
            r"^data:\s*[{\[]",
            # a ReAct agent's transcript
            r"^\s*(?:Thought|Action|Action Input|Observation|Final Answer):",
        ]
    )
)


def record_marker(path: Path) -> str | None:
    """What in the file looks like the record of an agent run (see the module's docstring), in
    words, or None when nothing does. A line too long to hold, or a file that cannot be read to
    its end, was not shown to be plain: it counts."""
    try:
        for number, line in files.iter_lines(path):
            if line is None:
                return f"line {number} is too long to tell it from an agent's record"
            if m := _MARKERS.search(line):
                return f"line {number} looks like an agent's record (`{m.group(0).strip()[:40]}`)"
    except (OSError, files.TooLarge, EOFError) as exc:
        return f"it cannot be read to its end ({exc})"
    return None
