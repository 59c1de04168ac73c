"""Number agreement in sentences filled from templates ("{n} agent turns in {m} trajectories").

The templates in rules/causes.toml are written for the plural; a count of one reads wrong
("1 agent turns in 1 trajectories"). Rather than a singular twin of every template, a "1"
followed by a counted noun (one optional qualifier between) is put in the singular here.
"""

from __future__ import annotations

import re

_SINGULAR = {"trajectories": "trajectory", "replies": "reply", "entries": "entry"}
_NOUNS = (
    "turns|trajectories|calls|streams|findings|messages|episodes|tasks|storms|replies|"
    "answers|requests|responses|rule hits|incidents|files|records|entries"
)
# A lone 1 (not 21, 0.1 or 1,001), an optional qualifier word, then a plural noun.
_ONE = re.compile(rf"(?<![\d.,])\b1 ((?:[A-Za-z][\w-]* )?)({_NOUNS})\b")


def _one(m: re.Match[str]) -> str:
    noun = m.group(2)
    if noun in _SINGULAR:
        return f"1 {m.group(1)}{_SINGULAR[noun]}"
    if noun == "rule hits":
        return f"1 {m.group(1)}rule hit"
    return f"1 {m.group(1)}{noun[:-1]}"


def agree(text: str) -> str:
    """text with every "1 <plural noun>" in the singular.

    >>> agree("1 agent turns in 1 trajectories; 21 turns in 3 trajectories")
    '1 agent turn in 1 trajectory; 21 turns in 3 trajectories'
    >>> agree("0 of 1 trajectories; 1 of 2 trajectories")
    '0 of 1 trajectory; 1 of 2 trajectories'
    """
    return _ONE.sub(_one, text)
