"""The fast path of capture.py for the commonest capture: JSONL request/response pairs of Chat
Completions calls, `{"request": {"body": ...}, "response": {"status": ..., "body": ...}}`.

Agent-loop captures repeat the whole conversation in every request, and reading them costs
per line and per turn, not per byte. This path decodes each line once with msgspec into typed
envelopes whose request `messages` stay raw bytes (`msgspec.Raw`): a request whose array starts
with the bytes of an earlier request's array takes that request's parsed messages and decodes
only what follows (the history is never decoded twice, as with prefix.PrefixParser). The calls
are then understood and linked by the same code as the general reader (exchange.build, Linker),
and the turn rows of the file are built column by column into Arrow batches (groups of whole
episodes), not one dict per turn.

Whatever it does not expect, it does not guess: an envelope of another shape, a value typed
decoding refuses, a line that would be rejected. From that line on the general reader reads
the file, with the same linker (the calls linked so far are exactly the ones it would have
built); when it is the first line, or an error stops this path, the general reader reads the
whole file. A row value the check would refuse leaves the rows to Collector.add_episode. The
tables are the same either way (tests/formats/test_capture_fast.py compares both on every
capture fixture and on generated lines).
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import msgspec
import pyarrow as pa

from forensics import interrupts, schema
from forensics.ingest.api import envelopes, exchange
from forensics.ingest.api.linking import Linker
from forensics.ingest.api.prefix import PrefixParser
from forensics.ingest.parse import files
from forensics.ingest.parse.apicommon import text_of
from forensics.ingest.records import (
    BATCH_ROWS,
    Collector,
    Episode,
    normalise_finish_reason,
    tau_actor,
    tool_calls_of,
)
from forensics.ingest.rows import RowMaker, clean_text

_Raws = dict[str, msgspec.Raw]
_decode_raws = msgspec.json.Decoder(_Raws).decode
_decode_any = msgspec.json.Decoder().decode
_decode_list = msgspec.json.Decoder(list[Any]).decode


class _Envelope(msgspec.Struct, forbid_unknown_fields=True):
    body: _Raws


class _Answer(msgspec.Struct, forbid_unknown_fields=True):
    body: dict[str, Any]
    status: int | None = None


class _Wrapped(msgspec.Struct, forbid_unknown_fields=True):
    """The commonest record: `{"request": {"body": ...}, "response": {"status": ..., "body":
    ...}}`, decoded in one pass. Other records are decoded key by key (`_call`)."""

    request: _Envelope
    response: _Answer


_decode_wrapped = msgspec.json.Decoder(_Wrapped).decode


class NotFast(Exception):
    """The file is not one this path reads exactly: the general reader reads it."""


# Keys that would make the request body something else than a Chat Completions body, or that
# requestinfo walks as a conversation.
_OTHER_CONVERSATION = frozenset({"input", "contents", "prompt"})
_PROBE = 64
_MAX_KEPT_BYTES = 8 * 1024 * 1024
# Distinct request parameter sets (all keys but messages) a file may use: each costs one general
# parse of its first line, so a capture whose every request differs is left to the general
# reader.
_MAX_SIGNATURES = 32


class _Entry:
    __slots__ = ("messages", "text")

    def __init__(self, text: bytes, messages: list[Any]) -> None:
        self.text = text
        self.messages = messages


class _Messages:
    """The messages of each request from their raw array: a start seen before is not decoded
    again, and its message objects are shared (linking and requestinfo resume by identity)."""

    def __init__(self) -> None:
        self._index: dict[bytes, list[_Entry]] = {}
        self._order: dict[int, _Entry] = {}
        self._kept = 0

    def read(self, raw: bytes) -> list[Any]:
        if raw[:1] != b"[":
            raise NotFast("messages is not an array")
        entry = self._match(raw)
        if entry is None:
            messages = new = _decode_list(raw)
        else:
            tail = raw[len(entry.text) :].lstrip(b" \t\r\n")
            if tail[:1] == b"]":
                messages, new = list(entry.messages), []
            elif tail[:1] == b",":
                new = _decode_list(b"[" + tail[1:])
                messages = [*entry.messages, *new]
            else:
                raise NotFast("messages array continued unexpectedly")
        if any(type(m) is not dict for m in new):  # the remembered ones were checked
            raise NotFast("a message that is not an object")
        end = raw.rstrip(b" \t\r\n")
        if len(end) > _PROBE and end[-1:] == b"]":
            self._remember(_Entry(end[:-1].rstrip(b" \t\r\n"), messages))
        return messages

    def _match(self, raw: bytes) -> _Entry | None:
        best: _Entry | None = None
        for entry in self._index.get(raw[:_PROBE]) or ():
            if (best is None or len(entry.text) > len(best.text)) and raw.startswith(entry.text):
                best = entry
        if best is not None:
            self._forget(best)
        return best

    def _remember(self, entry: _Entry) -> None:
        if len(entry.text) < _PROBE:
            return
        self._index.setdefault(entry.text[:_PROBE], []).append(entry)
        self._order[id(entry)] = entry
        self._kept += len(entry.text)
        while self._kept > _MAX_KEPT_BYTES and self._order:
            self._forget(next(iter(self._order.values())))

    def _forget(self, entry: _Entry) -> None:
        self._order.pop(id(entry), None)
        bucket = self._index[entry.text[:_PROBE]]
        bucket.remove(entry)
        if not bucket:
            del self._index[entry.text[:_PROBE]]
        self._kept -= len(entry.text)


class _Bodies:
    """Request bodies with their messages in place. The other keys are the same in every request
    of an agent loop: their values are taken from the general parser's reading of the first line
    that sent them, once, so that everything computed from them (request_fields, the pickled
    params digest behind request_hash) is what the general reader computes."""

    def __init__(self) -> None:
        self._templates: dict[tuple[tuple[str, bytes], ...], dict[str, Any]] = {}

    def body(self, line: str, raw: dict[str, msgspec.Raw], messages: list[Any]) -> dict[str, Any]:
        signature = tuple((k, bytes(v)) for k, v in raw.items() if k != "messages")
        template = self._templates.get(signature)
        if template is None:
            if len(self._templates) >= _MAX_SIGNATURES:
                raise NotFast("too many distinct request parameter sets")
            template = self._templates[signature] = _general_body(line, list(raw))
        return {k: messages if k == "messages" else v for k, v in template.items()}


def _general_body(line: str, keys: list[str]) -> dict[str, Any]:
    record = PrefixParser().loads(line)
    request, _, _ = envelopes._request(record.get("request"))
    if type(request) is not dict or list(request) != keys:
        raise NotFast("request body read differently by the general parser")
    return request


# Nesting a line may reach here; a deeper one goes to the general reader. Its JSON parser
# fails at about the recursion limit less the depth of the stack it is called from, which
# this path does not share: with the limit lowered to this much above the stack while msgspec
# reads a line (msgspec counts it, also when it skips a raw value), no line this path reads is
# too deep for the general reader or its recursive steps after it (requestinfo's walk takes
# two frames a level).
_NESTING = 300


class _Decoder:
    """Each line's record: `_Wrapped` until a record of another shape, then key by key."""

    def __init__(self) -> None:
        self.typed = True
        depth = 0
        frame: FrameType | None = sys._getframe()
        while frame is not None:
            depth, frame = depth + 1, frame.f_back
        self.ceiling: int = depth + _NESTING

    def __call__(self, text: str) -> _Wrapped | _Raws:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(min(limit, self.ceiling))
        try:
            if self.typed:
                try:
                    return _decode_wrapped(text)
                except msgspec.ValidationError:
                    self.typed = False
            return _decode_raws(text)
        except (msgspec.DecodeError, RecursionError) as exc:
            raise NotFast(str(exc)) from None
        finally:
            sys.setrecursionlimit(limit)


# Record keys that make a record something else than a request/response pair (envelopes.kind,
# litellm.is_record).
_NOT_PAIR = frozenset({"custom_id", "call_type", "standard_logging_object"})
# The request envelope keys this path takes (envelopes._request): the body under `body` only.
_ENVELOPE = frozenset({"url", "uri", "method", "headers", "body"})


def _wrapped(number: int, record: _Wrapped, line: str, bodies: _Bodies, parsed: _Messages) -> Any:
    """The exchange of a `_Wrapped` record, as envelopes.exchange reads it: both sides are
    envelopes (the response has no key a response body has), the bodies are theirs."""
    raw, answer = record.request.body, record.response.body
    if "messages" not in raw or raw.keys() & _OTHER_CONVERSATION or set(raw) == {"string"}:
        raise NotFast("not a Chat Completions request body")
    if set(answer) == {"string"}:  # vcrpy's spelling of a body
        raise NotFast("a body given as a string")
    body = bodies.body(line, raw, parsed.read(bytes(raw["messages"])))
    return exchange.Exchange(request=body, response=answer, status=record.response.status)


def _call(
    number: int, record: _Wrapped | _Raws, line: str, bodies: _Bodies, parsed: _Messages
) -> exchange.Call:
    if type(record) is _Wrapped:
        return _built(_wrapped(number, record, line, bodies, parsed), number)
    assert isinstance(record, dict)
    if "request" not in record or "response" not in record or record.keys() & _NOT_PAIR:
        raise NotFast("not a request/response pair")
    try:
        side = _decode_raws(bytes(record["request"]))
        if "messages" in side:
            raw, request = side, None
        elif "body" in side and side.keys() <= _ENVELOPE:
            raw = _decode_raws(bytes(side["body"]))
            request = {k: _decode_any(bytes(v)) for k, v in side.items() if k != "body"}
        else:
            raise NotFast("not a Chat Completions request")
        stub = {k: _decode_any(bytes(v)) for k, v in record.items() if k != "request"}
    except (msgspec.DecodeError, RecursionError) as exc:
        raise NotFast(str(exc)) from None
    if "messages" not in raw or raw.keys() & _OTHER_CONVERSATION or set(raw) == {"string"}:
        raise NotFast("not a Chat Completions request body")
    messages = parsed.read(bytes(raw["messages"]))
    body = bodies.body(line, raw, messages)
    if request is None:
        stub["request"] = body
    else:
        request["body"] = body
        stub["request"] = request
    if envelopes.kind(stub) != "pair":
        raise NotFast("not a request/response pair")
    ex = envelopes.exchange(stub, "pair")
    if ex.request is not body:
        raise NotFast("request body found elsewhere")
    return _built(ex, number)


def _built(ex: exchange.Exchange, number: int) -> exchange.Call:
    try:
        call = exchange.build(ex, number)
    except exchange.NotACall:
        raise NotFast("a record that is not a call") from None
    if call.normalise is None or call.output is None or call.request_line is not None:
        raise NotFast("a call of another dialect")
    return call


@dataclass
class Outcome:
    """How far the fast path read a file (read's answer when it read any of it)."""

    sources: int  # records that became turns so far (capture.Reader.sources)
    models: set[str] = field(default_factory=set)
    # The lines it left to the general reader, from the first it could not read exactly (the
    # linker holds every call before it); None when it read them all and handed the rows over.
    rest: Iterator[tuple[int, str | None]] | None = None


def read(path: Path, collector: Collector, linker: Linker) -> Outcome | None:
    """Read a capture file's lines into linker (capture.Reader's, within its
    requestinfo.shared_items) as capture.read does. None, with the collector and the linker
    untouched, when it reads none of it or stops on an error (the general reader then reads the
    whole file); else how far it got: the general reader goes on from there with the same linker,
    which is exact because the calls before are the ones it would have built itself."""
    try:
        with open(path, "rb") as raw:
            if raw.read(1) != b"{":  # compressed, a document, or something else
                return None
        bodies, parsed, decode = _Bodies(), _Messages(), _Decoder()
        outcome = Outcome(0)
        lines = files.iter_lines(path)
        linked = False
        for number, text in lines:
            if text is not None and (not text or text.isspace()):
                continue
            try:
                if text is None:
                    raise NotFast("a line over the line cap")
                call = _call(number, decode(text), text, bodies, parsed)
            except NotFast:
                if not linked:
                    return None
                outcome.rest = itertools.chain([(number, text)], lines)
                return outcome
            history, output = linker.add(call)
            linked = True
            if model := call.fields.get("model"):
                outcome.models.add(model)
            if history or output:
                outcome.sources += 1
        if len(outcome.models) == 1:
            linker.run.agent_model = next(iter(outcome.models))
        episodes = linker.take()
    except NotFast:
        return None
    except Exception as exc:
        # Whatever else stops this path (a file over a cap, an I/O error, JSON nested past
        # msgspec's depth): the general reader meets it again and says what it always says.
        interrupts.raise_if_interrupted(exc)
        return None
    _hand_over(episodes, collector)
    return outcome


def _hand_over(episodes: list[Episode], collector: Collector) -> None:
    """The episodes' rows to the collector a group of whole episodes at a time, each group's
    Arrow batch built just before it goes (a column's Python list, and the episodes, live only
    until then: a scan streams the batch on). A group the column-wise builder does not take
    exactly goes through add_episode, which builds what the general reader would."""
    pending = episodes[::-1]
    episodes.clear()
    group: list[Episode] = []
    rows = 0
    while pending:
        episode = pending.pop()
        group.append(episode)
        rows += len(episode.messages)
        if rows < BATCH_ROWS and pending:
            continue
        try:
            batch = turn_batch(group)
        except Exception as exc:  # NotFast, or a bug of this path: the general row builder
            interrupts.raise_if_interrupted(exc)
            for one in group:
                collector.add_episode(one)
        else:
            collector.add_turn_batch(group, batch)
        group, rows = [], 0


# --- the turn rows, column by column ----------------------------------------------------------

_TURNS = RowMaker(schema.RAW_TURNS)
_TYPES = {f.name: f.type for f in schema.RAW_TURNS}
# Columns every turn fills from its message and run (Collector._turn_row), the same for a whole
# episode, then turn by turn; the others only come from a call's fields.
_EPISODE = ("source_path", "source_format", "run_id", "task_id")
_TURN = (
    "turn_index",
    "role",
    "actor",
    "content",
    "reasoning",
    "tool_calls",
    "finish_reason",
    "finish_reason_raw",
    "max_output_tokens",
    "tools_attached",
    "model",
    "endpoint",
    "tool_call_id",
    "refusal",
    "tool_name",
    "source_line",
)
_NAMES = set(_TYPES)


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def turn_batch(episodes: list[Episode]) -> pa.RecordBatch:
    """The turn rows of whole episodes as Collector._turn_row makes them, one list per column,
    without trajectory_id and trial (the collector numbers trajectories). NotFast when a value
    would not pass the row check (the general reader then rejects that message)."""
    constant: list[list[Any]] = [[] for _ in _EPISODE]
    rows: list[tuple[Any, ...]] = []
    overridden: list[tuple[int, dict[str, Any]]] = []
    for ep in episodes:
        run = ep.run
        agent_model, agent_endpoint = run.agent_model, run.agent_endpoint
        agent_cap, agent_tools = run.max_output_tokens, run.tools_attached
        user_cap = run.max_output_tokens if run.user_model else None
        fields = ep.turn_fields
        for index, (line, msg) in enumerate(ep.messages):
            get = msg.get
            role = get("role")
            # text_of, without its call for what is already text (every normalised message)
            content = get("content")
            if content is not None and type(content) is not str:
                content = text_of(content)
            reasoning = get("reasoning_content") or get("reasoning")
            if reasoning is not None and type(reasoning) is not str:
                reasoning = text_of(reasoning)
            refusal = get("refusal")
            refusal = (refusal if type(refusal) is str else text_of(refusal)) or None
            actor = tau_actor(role, content if isinstance(content, str) else None)
            if actor == "agent":
                model, endpoint, cap, tools = agent_model, agent_endpoint, None, agent_tools
                cap = agent_cap if model else None
            elif actor == "user_sim":
                model, endpoint, cap, tools = run.user_model, run.user_endpoint, user_cap, None
            else:
                model = endpoint = cap = tools = None
            finish_raw = get("finish_reason")
            tool = role == "tool"
            rows.append(
                (
                    index,
                    role,
                    actor,
                    content,
                    reasoning,
                    tool_calls_of(msg),
                    None if finish_raw is None else normalise_finish_reason(finish_raw),
                    finish_raw,
                    cap,
                    tools,
                    model,
                    endpoint,
                    _text_or_none(get("tool_call_id", get("id"))) if tool else None,
                    refusal,
                    _text_or_none(get("name")) if tool else None,
                    line,
                )
            )
            if overrides := fields.get(index):
                overridden.append((len(rows) - 1, overrides))
        count = len(ep.messages)
        same = (clean_text(ep.source_path), ep.source_format, clean_text(run.run_id), ep.task_id)
        for column, value in zip(constant, same, strict=True):
            column.extend([value] * count)
    n = len(rows)
    columns: dict[str, list[Any]] = dict(zip(_EPISODE, constant, strict=True))
    for name, cells in zip(
        _TURN, zip(*rows, strict=True) if rows else [()] * len(_TURN), strict=True
    ):
        columns[name] = list(cells)
    for i, overrides in overridden:
        if overrides.keys() - _NAMES:
            raise NotFast("unknown turn fields")
        for key, value in overrides.items():
            if key == "source_line":
                continue  # the message's own line, whatever the fields say
            if key not in columns:
                columns[key] = [None] * n
            columns[key][i] = value
        if "finish_reason_raw" in overrides and "finish_reason" not in overrides:
            columns["finish_reason"][i] = normalise_finish_reason(overrides["finish_reason_raw"])
    arrays = []
    for spec in schema.RAW_TURNS:
        if spec.name not in columns:
            arrays.append(pa.nulls(n, spec.type))
            continue
        column = columns[spec.name]
        try:
            if spec.type == _STRINGS:
                arrays.append(_repeated_lists(spec.name, column))
            else:
                _check(spec.name, column)
                arrays.append(pa.array(column, type=spec.type))
        except (pa.ArrowException, OverflowError, UnicodeEncodeError, TypeError) as exc:
            raise NotFast(f"{spec.name}: {exc}") from None
    return pa.RecordBatch.from_arrays(arrays, schema=schema.RAW_TURNS)


_STRINGS = pa.list_(pa.string())


def _repeated_lists(name: str, values: list[Any]) -> pa.Array:
    """A list<string> column whose lists repeat (the request's key paths, the tools offered:
    the same for every call of a run): each distinct list checked and converted once."""
    index: dict[tuple[Any, ...] | None, int] = {}
    rows = []
    for value in values:
        if value is not None and type(value) is not list:
            raise NotFast(f"{name}: not an array")
        key = None if value is None else tuple(value)
        at = index.get(key)
        if at is None:
            at = index[key] = len(index)
        rows.append(at)
    distinct = [None if key is None else list(key) for key in index]
    _check(name, distinct)
    return pa.array(distinct, type=_STRINGS).take(pa.array(rows, type=pa.int64()))


_CHECKS = dict(_TURNS._checks)
_SCALARS = {
    pa.string(): (str,),
    pa.int64(): (int,),
    pa.float64(): (int, float),
    pa.bool_(): (bool,),
}


def _check(name: str, values: list[Any]) -> None:
    """What rows.RowMaker.check refuses and pa.array would take (a float or a bool in an int64
    column, NaN, a struct with a field more): NotFast, before Arrow converts it."""
    kind = _TYPES[name]
    allowed = _SCALARS.get(kind)
    if allowed is not None:
        types = set(map(type, values))
        types.discard(type(None))
        if not types <= set(allowed):
            raise NotFast(f"{name}: a value of another type")
        if float in types and not all(
            math.isfinite(v) and abs(v) <= 1.7e308 for v in values if type(v) is float
        ):
            raise NotFast(f"{name}: not a finite number")
        return
    if kind == _STRINGS:  # key paths, tool names: Arrow refuses lone surrogates itself
        if not all(type(x) is str for v in values if v for x in v):
            raise NotFast(f"{name}: a value of another type")
        if not all(type(v) is list for v in values if v is not None):
            raise NotFast(f"{name}: not an array")
        return
    check = _CHECKS[name]
    for value in values:
        if value and check(value) is not None:  # an empty list always fits
            raise NotFast(f"{name}: a value that does not fit")
        if value is not None and type(value) is not list:
            raise NotFast(f"{name}: not an array")
