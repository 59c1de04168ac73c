"""Server-sent events, the wire format of every streamed LLM response.

Only the framing lives here: `data:` lines joined per event, `event:` names kept, comment lines
(`: OPENROUTER PROCESSING` keep-alives) dropped. Each API module reassembles its own events.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

# The SSE spec allows CRLF, LF and CR; str.splitlines would also split on U+2028 inside JSON.
_LINE_END = re.compile(r"\r\n|\r|\n")
DONE = "[DONE]"


@dataclass(frozen=True)
class Event:
    name: str | None
    data: str
    line: int = 1  # 1-based line of the event's first field within the text


def looks_like(text: str) -> bool:
    """The text is an SSE stream: its first field line is `data:` or `event:`."""
    for line in _LINE_END.split(text.lstrip("\ufeff"), 50):
        stripped = line.strip()
        if not stripped or stripped.startswith(":"):
            continue
        return stripped.startswith(("data:", "event:"))
    return False


def events(text: str) -> Iterator[Event]:
    """The events of an SSE text, in order; a last event without its blank line counts too."""
    name: str | None = None
    data: list[str] = []
    first = 0
    lines = _LINE_END.split(text) if "\r" in text else text.split("\n")
    for number, line in enumerate(lines, 1):
        if not line:
            if data:
                yield Event(name, "\n".join(data), first)
            name, data, first = None, [], 0
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        first = first or number
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
    if data:
        yield Event(name, "\n".join(data), first)
