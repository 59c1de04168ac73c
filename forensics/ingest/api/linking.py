"""Calls -> trajectories: an agent loop is one conversation, not N unrelated calls.

Each request of an agent loop re-sends the whole history: request k+1 = request k + the
assistant message k produced + the tool results. A call continues a trajectory when a prefix of
its messages equals that trajectory's conversation so far. One running hash over the request
gives the fingerprint of every prefix in a single pass, and only the current end of each live
trajectory is indexed, so linking costs one hash update and one dictionary lookup per message:
linear in the input, whatever the number of conversations in flight.

Only the new part of each request becomes turns (and only that part is normalised), so history
appears once; the assistant message of each call is its own turn and carries the call's source
line and response columns. Fingerprints compare what the next request would echo back: role,
visible text (reasoning blocks removed, since clients often strip them) and tool calls (name,
arguments as canonical JSON); ids and reasoning fields are left out because clients rewrite or
drop them.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from forensics import linear, markers
from forensics.ingest.api import requestinfo
from forensics.ingest.api.exchange import Call
from forensics.ingest.parse import jsonwalk
from forensics.ingest.parse.apicommon import text_of
from forensics.ingest.records import Collector, Episode, Run

# The same visible-text reduction as enrich's visible_text column. RE2: with `re`, each opener
# of a text that repeats `<think>` without a closer rescanned the rest of it (quadratic).
_CLOSED = linear.compile(markers.CLOSED_BLOCK_RE)
_UNCLOSED = linear.compile(markers.UNCLOSED_TAIL_RE)
_LEADING = linear.compile(markers.LEADING_TO_CLOSER_RE)
_STATES = 1024  # conversations in flight kept resumable; past it the index starts over
_LOOK_BACK = 16  # messages a request may add to the last one's before resuming is not tried


_OPENERS = [opener for opener, _ in markers.REASONING_TAGS]
_CLOSERS = [closer for _, closer in markers.REASONING_TAGS]


def _visible(text: str) -> str:
    # Each step runs only when its tag is in the text: a call of RE2's binding costs more than
    # the substring tests on the short texts of a conversation.
    if "hink" in text or "HINK" in text:  # every reasoning tag spells think/THINK
        if any(opener in text for opener in _OPENERS):
            text = _CLOSED.sub("", text)
            if any(opener in text for opener in _OPENERS):
                text = _UNCLOSED.sub("", text)
        if any(closer in text for closer in _CLOSERS):
            text = _LEADING.sub("", text, count=1)
    return text.strip()


def _arguments(args: Any, cache: dict[str, str]) -> str:
    if not isinstance(args, str):
        return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # Every later request re-sends the same calls: canonicalise each arguments text once.
    if (known := cache.get(args)) is not None:
        return known
    try:
        value = jsonwalk.loads(args)
        canon = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (json.JSONDecodeError, RecursionError):
        canon = args.strip()
    cache[args] = canon
    return canon


def canonical(message: Mapping[str, Any], cache: dict[str, str]) -> bytes:
    """What of a message the next request echoes back, as bytes with a length prefix.

    Accepts a request's raw Chat Completions message as well as a normalised one (flat tool
    calls), so request history is fingerprinted without being normalised first. This runs once
    per message of every request: exact type checks, not isinstance against ABCs.
    """
    content = message.get("content")
    text = content if type(content) is str else text_of(content) or ""
    data = f"{message.get('role')}\x00{_visible(text)}"
    calls = message.get("tool_calls")
    if calls and type(calls) is list:
        parts = [data]
        for call in calls:
            if type(call) is not dict:
                continue
            fn = call.get("function")
            if type(fn) is not dict:
                fn = call
            args = _arguments(fn.get("arguments", fn.get("input")), cache)
            parts.append(f"\x01{fn.get('name')}\x00{args}")
        data = "".join(parts)
    encoded = data.encode()
    return len(encoded).to_bytes(8, "little") + encoded


@dataclass
class _Trajectory:
    episode: Episode
    error: str | None = None
    # The tool calls of its last assistant message with calls, as the turn holds them: the
    # ids the results that follow answer.
    calls: list[dict[str, Any]] | None = None


def _flat_calls(message: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    """(id, name) of each tool call of a raw or normalised message."""
    out = []
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, dict):
            fn = call.get("function")
            fn = fn if isinstance(fn, dict) else call
            out.append((call.get("id"), fn.get("name")))
    return out


def _renamed_ids(
    messages: Sequence[Mapping[str, Any]], matched: int, ours: list[dict[str, Any]] | None
) -> dict[str, str]:
    """Call ids the client replayed differently from the response that made the calls.

    Ids are left out of the fingerprints because clients rewrite them (pydantic-ai replayed
    Responses calls under their item id): a result then answers the client's id, which the
    turn, holding the response's, does not know. The last assistant message of the matched
    history is the trajectory's last one with calls when their names agree call by call."""
    if not ours:
        return {}
    for message in reversed(messages[:matched]):
        if message.get("role") != "assistant":
            continue
        replayed = _flat_calls(message)
        if len(replayed) != len(ours) or any(
            name != call.get("name") for (_, name), call in zip(replayed, ours, strict=True)
        ):
            return {}
        return {
            client: call["id"]
            for (client, _), call in zip(replayed, ours, strict=True)
            if isinstance(client, str) and isinstance(call.get("id"), str) and client != call["id"]
        }
    return {}


class Linker:
    """Groups the calls of one file into episodes, in the order they first appear."""

    def __init__(self, run: Run, source_path: str, source_format: str) -> None:
        self.run = run
        self.source_path = source_path
        self.source_format = source_format
        self._ends: dict[bytes, deque[_Trajectory]] = {}
        self._by_response_id: dict[str, _Trajectory] = {}
        # The request of every call, for a retry that re-sends an earlier request of a
        # trajectory: one entry per call, looked up only when no live end matches.
        self._requests: dict[bytes, _Trajectory] = {}
        self._trajectories: list[_Trajectory] = []
        self._arguments: dict[str, str] = {}
        # (role, content) -> canonical bytes of messages without tool calls: every request
        # re-sends the whole history, so each such message would otherwise be reduced again
        # (think blocks, strip, encode) once per later call of its conversation.
        self._plain: dict[tuple[str, str], bytes] = {}
        # id of a request's last message -> (that message, its first, the running hash after
        # them, their prefix digests): the next request of the conversation
        # resumes there instead of hashing its whole history again.
        self._states: dict[int, tuple[Any, Any, hashlib.blake2b, list[bytes]]] = {}

    def _canonical(self, message: Mapping[str, Any]) -> bytes:
        role, content = message.get("role"), message.get("content")
        if type(role) is not str or type(content) is not str or message.get("tool_calls"):
            return canonical(message, self._arguments)
        key = (role, content)
        known = self._plain.get(key)
        if known is None:
            known = self._plain[key] = canonical(message, self._arguments)
        return known

    def _resume(self, messages: Sequence[Mapping[str, Any]]) -> tuple[hashlib.blake2b, list[bytes]]:
        """The running hash and prefix digests after the longest start of `messages` that an
        earlier request sent as the same objects (a shared history), else from scratch."""
        for i in range(len(messages) - 1, max(-1, len(messages) - 1 - _LOOK_BACK), -1):
            known = self._states.get(id(messages[i]))
            if known is None or known[0] is not messages[i]:
                continue
            # Continued: the state is this request's now (the next resumes from this one's).
            del self._states[id(messages[i])]
            _, first, running, prefixes = known
            # A message object is shared only with the messages before it (the prefix parser
            # copies whole starts of lists), so the same object at i is the same start.
            if len(prefixes) == i + 2 and messages[0] is first:
                return running, prefixes
        running = hashlib.blake2b(digest_size=16)
        return running, [running.digest()]

    def _remember(
        self, messages: Sequence[Mapping[str, Any]], running: hashlib.blake2b, prefixes: list[bytes]
    ) -> None:
        if len(self._states) > _STATES:
            self._states.clear()
        self._states[id(messages[-1])] = (messages[-1], messages[0], running.copy(), prefixes)

    def _new(self, line: int) -> _Trajectory:
        traj = _Trajectory(Episode(self.run, self.source_path, line, self.source_format))
        self._trajectories.append(traj)
        return traj

    def add(self, call: Call) -> tuple[int, int]:
        """Link a call; returns the turns it added from its request and from its response."""
        messages = call.messages
        traj: _Trajectory | None = None
        matched = 0
        running, prefixes = self._resume(messages)
        for message in messages[len(prefixes) - 1 :]:
            running.update(self._canonical(message))
            prefixes.append(running.digest())
        if messages:
            self._remember(messages, running, prefixes)
        if call.params_digest is not None and call.output is not None:
            call.fields["request_hash"] = requestinfo.request_hash(prefixes[-1], call.params_digest)
        if call.previous_response_id and call.previous_response_id in self._by_response_id:
            # The Responses API chains by id: the request carries only the new input, and
            # re-sends its instructions every time.
            traj = self._by_response_id[call.previous_response_id]
            messages = [m for m in messages if m.get("role") != "system"]
        else:
            for i in range(len(messages), 0, -1):
                waiting = self._ends.get(prefixes[i])
                if waiting:
                    # First come, first served: identical trials stay apart in call order.
                    traj = waiting.popleft()
                    if not waiting:
                        del self._ends[prefixes[i]]
                    matched = i
                    break
            else:
                # A retry that restarts from an earlier point of a trajectory re-sends one of its
                # earlier requests verbatim (the client dropped the turns after it, or re-samples
                # the reply): it continues that trajectory with its new answer only. It must
                # re-send some of the trajectory's own output, so identical first requests of
                # parallel trials stay apart; a request that changes the history is a fork.
                earlier = self._requests.get(prefixes[-1])
                if earlier is not None and any(m.get("role") == "assistant" for m in messages):
                    traj, matched = earlier, len(messages)
        history_line = call.request_line or call.line
        if traj is None:
            traj = self._new(history_line)
        normalise = call.normalise
        renamed = _renamed_ids(messages, matched, traj.calls)
        for message in messages[matched:]:
            turn = normalise(message) if normalise else message
            if renamed and turn.get("tool_call_id") in renamed:
                turn = {**turn, "tool_call_id": renamed[turn["tool_call_id"]]}
            traj.episode.add(history_line, turn, replayed=True)
            if turn.get("role") == "assistant" and turn.get("tool_calls"):
                traj.calls = turn["tool_calls"]
        if call.output is not None:
            traj.episode.add(call.line, call.output, **call.fields, replayed=False)
            if call.output.get("tool_calls"):
                traj.calls = call.output["tool_calls"]
            if not call.failed:
                running.update(self._canonical(call.output))
            traj.error = call.fields.get("error")
        if not traj.episode.messages:  # a new trajectory that got nothing: drop it
            self._trajectories.pop()
            return 0, 0
        # A failed call leaves the conversation where it was: its retry sends the same messages
        # (or more, when the client reports the failure) and lands in the same trajectory.
        self._ends.setdefault(running.digest(), deque()).append(traj)
        self._requests[prefixes[-1]] = traj
        if call.response_id:
            self._by_response_id[call.response_id] = traj
        return len(messages) - matched, int(call.output is not None)

    def flush(self, collector: Collector) -> int:
        """Hand every trajectory to the collector; returns how many there were."""
        episodes = self.take()
        for episode in episodes:
            collector.add_episode(episode)
        return len(episodes)

    def take(self) -> list[Episode]:
        """Every trajectory's episode, in order, and start over."""
        episodes = []
        for traj in self._trajectories:
            traj.episode.error = traj.error
            episodes.append(traj.episode)
        self._trajectories = []
        self._ends.clear()
        self._by_response_id.clear()
        self._requests.clear()
        self._arguments.clear()
        self._plain.clear()
        self._states.clear()
        return episodes
