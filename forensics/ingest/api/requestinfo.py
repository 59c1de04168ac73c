"""What a captured request body says about itself: its fingerprint and the keys it carried.

Two turn columns come from here (schema.py documents them): `request_hash`, equal when the same
request is sent again (retry storms are runs of equal hashes), and `request_keys`, the key paths
the body used inside its messages (private `_keys` and keys outside the provider's schema make
strict servers answer 400/422).

The hash has two halves. The conversation half is the digest linking already computes over the
messages (role, visible text, tool calls; ids and reasoning left out), so the history is not
serialised a second time. The other half covers every other key (tools, caps, sampling
parameters) as sent, through pickle: about three times cheaper than canonical JSON, and equal
for equal bodies from the same client, which is what a retry is.
"""

from __future__ import annotations

import contextvars
import hashlib
import pickle
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# Lists of conversation items, walked for their keys; everything else is read at the top only
# (tool schemas are large and their keys are the tools' own business).
_CONVERSATION_KEYS = ("messages", "input", "contents")
# Values not walked: what the model wrote as tool-call arguments is not the client's schema.
_OPAQUE = frozenset({"arguments", "input", "args", "partial_json"})


def params_digest(body: dict[str, Any]) -> bytes | None:
    """Digest of everything in the body but the conversation; None if it can not be pickled."""
    rest = {k: v for k, v in body.items() if k not in _CONVERSATION_KEYS}
    try:
        return hashlib.blake2b(pickle.dumps(rest, protocol=5), digest_size=16).digest()
    except (RecursionError, pickle.PicklingError, TypeError):
        return None


def request_hash(conversation_digest: bytes, params: bytes) -> str:
    return hashlib.blake2b(conversation_digest + params, digest_size=16).hexdigest()


def _walk_items(items: list[Any], path: str, out: set[str]) -> None:
    """Key paths inside the items of a list; runs for every message of every request, so
    scalars are never recursed into and types are compared exactly."""
    for item in items:
        kind = type(item)
        if kind is dict:
            _walk_dict(item, path, out)
        elif kind is list:
            _walk_items(item, path + "[]", out)


def _walk_dict(value: dict[str, Any], path: str, out: set[str]) -> None:
    for key, inner in value.items():
        here = f"{path}.{key}"
        out.add(here)
        kind = type(inner)
        if kind is dict:
            if key not in _OPAQUE:
                _walk_dict(inner, here, out)
        elif kind is list and key not in _OPAQUE:
            _walk_items(inner, here + "[]", out)


# (id(last item), path) -> (that item, key paths of the items up to it, the first item, the
# count). A capture parsed with forensics.ingest.api.prefix shares the history's message objects
# between requests, so each request walks only what it added; the item is held, so its id can
# not be reused while the entry stands.
_MEMO: contextvars.ContextVar[
    dict[tuple[int, str], tuple[Any, frozenset[str], Any, int]] | None
] = contextvars.ContextVar("request_keys_memo", default=None)
_LOOK_BACK = 16  # items a request may add to the last one's before resuming is not tried
_MEMO_ITEMS = 1024  # conversations in flight remembered; past it the memo starts over


# Columns of the part of a request that is not the conversation, under `params_key`: an
# agent loop sends the same tools, model and caps with every request.
_PARAMS: contextvars.ContextVar[dict[tuple[Any, ...], Any] | None] = contextvars.ContextVar(
    "request_params_memo", default=None
)
_MEMO_PARAMS = 64  # distinct parameter sets remembered; past it the memo starts over


@contextmanager
def shared_items() -> Iterator[None]:
    """Within this block, request_keys remembers the key paths of each request's items, and
    `params_memo` is a memo for what the rest of a request decides."""
    token = _MEMO.set({})
    params = _PARAMS.set({})
    try:
        yield
    finally:
        _PARAMS.reset(params)
        _MEMO.reset(token)


def params_memo() -> dict[tuple[Any, ...], Any] | None:
    """The memo of the current `shared_items` block (None outside one), emptied when full."""
    memo = _PARAMS.get()
    if memo is not None and len(memo) > _MEMO_PARAMS:
        memo.clear()
    return memo


def params_key(body: dict[str, Any]) -> tuple[tuple[Any, ...], tuple[Any, ...]] | None:
    """(key, held): the key is equal for two bodies whose keys other than the conversation are
    equal in order, type and value, scalars by value and lists and dicts by identity (the
    prefix parser hands every request of a file the same parsed tool list); `held` are those
    lists and dicts, to keep with the key so that their ids are not reused while it is
    remembered. None when a value is of another type.

    Equal keys give equal pickles (params_digest): pickle also encodes which strings are the
    same object, and the only strings a body's scalars and keys share with a list or dict
    parsed apart are CPython's one-character singletons, which depend on the text alone."""
    parts: list[Any] = []
    held: list[Any] = []
    for key, value in body.items():
        if key in _CONVERSATION_KEYS:
            parts.append(key)
            continue
        kind = type(value)
        if kind is str or kind is int or kind is bool or value is None:
            parts.append((key, kind, value))
        elif kind is float:  # by its bits: -0.0 == 0.0, and pickle tells them apart
            parts.append((key, kind, value.hex()))
        elif kind is list or kind is dict:
            parts.append((key, kind, id(value)))
            held.append(value)
        else:
            return None
    return tuple(parts), tuple(held)


def _walk_conversation(items: list[Any], path: str, out: set[str]) -> None:
    memo = _MEMO.get()
    if memo is None or not items:
        _walk_items(items, path, out)
        return
    if len(memo) > _MEMO_ITEMS:
        memo.clear()
    # The key paths of the longest start of `items` an earlier request sent as the same
    # objects, kept under its last item (key (id, path): the same item may sit in two lists).
    start, keys = 0, frozenset[str]()
    for i in range(len(items) - 1, max(-1, len(items) - 1 - _LOOK_BACK), -1):
        known = memo.get((id(items[i]), path))
        if known is not None and known[0] is items[i]:
            del memo[(id(items[i]), path)]  # continued: this request's entry replaces it
            # Shared objects come with the same items before them (the prefix parser copies
            # whole starts of lists): the same object at i is the same start.
            if known[3] == i + 1 and known[2] is items[0]:
                start, keys = i + 1, known[1]
                break
    found = set(keys)
    _walk_items(items[start:], path, found)
    memo[(id(items[-1]), path)] = (items[-1], frozenset(found), items[0], len(items))
    out |= found


def request_keys(body: dict[str, Any]) -> list[str]:
    """Top-level keys and every key path inside the conversation items, sorted."""
    out: set[str] = set()
    for key, value in body.items():
        out.add(str(key))
        if key in _CONVERSATION_KEYS and type(value) is list:
            _walk_conversation(value, f"{key}[]", out)
    return sorted(out)
