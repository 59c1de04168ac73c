"""Reasoning markup, as data (failure-catalogue §2).

Openers and closers of reasoning blocks that models write inline when no reasoning parser
separates them. Counting them in content tells truncation (open, never closed) from leakage
(a closed block, or a lone closer, inside visible text).
"""

from __future__ import annotations

import re

# (opener, closer) pairs, literal text.
REASONING_TAGS: list[tuple[str, str]] = [
    ("<think>", "</think>"),
    ("<thinking>", "</thinking>"),
    ("<seed:think>", "</seed:think>"),
    ("<mm:think>", "</mm:think>"),
    ("[THINK]", "[/THINK]"),
    ("◁think▷", "◁/think▷"),
]

OPEN_RE = "|".join(re.escape(o) for o, _ in REASONING_TAGS)
CLOSE_RE = "|".join(re.escape(c) for _, c in REASONING_TAGS)
# A closed block; an unclosed tail (opener to the end); everything up to a lone closer (models
# whose template puts the opener in the prompt emit only the closer).
CLOSED_BLOCK_RE = f"(?s)(?:{OPEN_RE}).*?(?:{CLOSE_RE})"
UNCLOSED_TAIL_RE = f"(?s)(?:{OPEN_RE}).*$"
LEADING_TO_CLOSER_RE = f"(?s)^.*?(?:{CLOSE_RE})"
