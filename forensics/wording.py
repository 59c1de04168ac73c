"""Words filled into sentences: number agreement ("{n} agent turns in {m} trajectories"), the
article before a value, JSON parser messages with their position, and "did you mean".

The templates in rules/causes.toml are written for the plural; a count of one reads wrong
("1 agent turns in 1 trajectories"). Rather than a singular twin of every template, a "1"
followed by a counted noun (one optional qualifier between) is put in the singular here.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

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


def article(word: str) -> str:
    """word with "a" or "an" before it, by its first letter (a value filled into a sentence:
    "a completion call", "an aembedding call").

    >>> article("aembedding"), article("completion"), article("system")
    ('an aembedding', 'a completion', 'a system')
    """
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def json_error(message: str, column: int | None = None) -> str:
    """A JSON parser's message with its position. json's own messages that wait for a position
    end in "at" ("Unterminated string starting at"): the column follows that "at" rather than a
    second one, and without a position the dangling words go.

    >>> json_error("Unterminated string starting at", 187)
    'Unterminated string starting at column 187'
    >>> json_error("Expecting value", 1)
    'Expecting value at column 1'
    >>> json_error("Unterminated string starting at"), json_error("Invalid control character at")
    ('Unterminated string', 'Invalid control character')
    """
    if column is not None:
        return (
            f"{message} column {column}"
            if message.endswith(" at")
            else f"{message} at column {column}"
        )
    return message.removesuffix(" at").removesuffix(" starting")


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """ "; did you mean X?" for the choices closest to a name that matched none (difflib's
    ratio, as click suggests a mistyped option), or "" when none is close.

    >>> did_you_mean("think-lop", ["think-loop", "action-loop", "max-tokens"])
    '; did you mean think-loop or action-loop?'
    >>> did_you_mean("fail_on", ["fail-on", "max-rate"]), did_you_mean("zzz", ["fail-on"])
    ('; did you mean fail-on?', '')
    """
    close = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(close)}?" if close else ""
