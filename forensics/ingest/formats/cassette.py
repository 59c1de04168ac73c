"""HTTP cassettes (recorded test traffic) -> trajectories, through the API dialects.

Agent frameworks and SDKs record their test suites' HTTP traffic as cassettes, hundreds per
project. One file holds a list of interactions, each a request and its response:

- vcrpy (Python), YAML by default or JSON: `interactions: [{request: {method, uri, body,
  headers}, response: {status: {code, message}, headers, body: {string}}}]`. Bodies are text,
  or bytes (`!!binary`, base64 in the YAML) when they were not valid UTF-8: gzip-compressed
  answers, Bedrock's binary event streams. pydantic-ai's serializer stores JSON bodies parsed,
  under `parsed_body`. langchain's keeps `requests` and `responses` as two parallel lists.
- Ruby VCR and R vcr (YAML or JSON): `http_interactions`, bodies as `{encoding, string}` or
  `{base64_string}`; R writes `status: {status_code}`.
- go-vcr: `interactions` with `url`, bodies as plain strings and `code` beside `status`.

Every interaction goes through `exchange.build` like a live capture, and the interactions of a
file link into conversations (`linking`). Each turn points at the line where its interaction
starts. YAML is composed into nodes first (line marks, and alias expansion bounded so a
billion-laughs file is a reject, not an exhausted machine); a file that does not parse whole is
read interaction by interaction, so one broken record costs only itself.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import yaml

from forensics.ingest.api import exchange
from forensics.ingest.api.exchange import Exchange, NotACall
from forensics.ingest.formats import capture
from forensics.ingest.parse import files, jsonhead, jsonwalk
from forensics.ingest.parse.apicommon import as_dict, as_int, as_str, count_of, without_query
from forensics.ingest.records import Collector, isolated, reject_trailing
from forensics.ingest.registry import FormatSpec
from forensics.limits import amount, exceeded
from forensics.redact import clip

FORMAT = "http_cassette"


if TYPE_CHECKING:  # both loaders have the API used here; the checker needs a static base
    _SafeLoader = yaml.SafeLoader
else:  # libyaml's C loader where PyYAML was built with it
    _SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_SafeLoader):
    """The safe loader (libyaml's when present), plus the string tags Python 2 era vcrpy wrote
    (`!!python/unicode`, `!!python/str`): text, not objects; and the tags Ruby's Psych writes
    in VCR cassettes: `!binary` (one `!`: base64 bytes, as `!!binary`) and `!ruby/...` (a
    string, hash, array or object subclass) read as the plain string, mapping or list under
    the tag, never as an object."""


def _text(loader: _Loader, node: yaml.Node) -> str:
    return loader.construct_yaml_str(node)


def _ruby(loader: _Loader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(cast("yaml.ScalarNode", node))


def _binary(loader: _Loader, node: yaml.Node) -> bytes:
    return loader.construct_yaml_binary(cast("yaml.ScalarNode", node))


for _tag in ("python/unicode", "python/str"):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _text)
_Loader.add_constructor("!binary", _binary)
_Loader.add_multi_constructor("!ruby/", _ruby)

_LIST_KEYS = ("interactions", "http_interactions")
# A top-level key line of a YAML cassette, after an optional `---` and comments.
_YAML_KEY = re.compile(
    r"^(interactions|http_interactions|requests|responses|version|recorded_with)\s*:", re.M
)
_YAML_LIST = re.compile(r"^(interactions|http_interactions|requests)\s*:", re.M)
_BASE64 = re.compile(r"[A-Za-z0-9+/\r\n]+={0,2}\s*")


def sniff(head: str) -> str | None:
    text = head.lstrip("\ufeff \t\r\n")
    if text.startswith("{"):
        keys = jsonhead.top_level(text)
        found = [k for k in _LIST_KEYS if k in keys]
        if found:
            return f"HTTP cassette, JSON ({found[0]}: recorded request/response pairs)"
        return None
    first = next(
        (
            line
            for line in text.splitlines()
            if line.strip() and not line.startswith(("#", "---", "%"))
        ),
        "",
    )
    if _YAML_KEY.match(first) and (match := _YAML_LIST.search(text)):
        return f"HTTP cassette, YAML ({match.group(1)}: recorded request/response pairs)"
    return None


# --- bodies ----------------------------------------------------------------------------------


class BadBody(Exception):
    """A body that can not be turned into text or JSON; str(exc) says why."""


def header(headers: Any, name: str) -> str | None:
    """A header's first value, whatever the case of its name and the cassette's shape of it."""
    if not isinstance(headers, dict):
        return None
    for key, value in headers.items():
        if isinstance(key, str) and key.lower() == name:
            if isinstance(value, list):
                value = value[0] if value else None
            if isinstance(value, bytes):
                value = value.decode("utf-8", errors="replace")
            return value if isinstance(value, str) else None
    return None


class _Damaged(BadBody):
    """Bytes that do not inflate: perhaps not compressed at all (a stale header)."""


def _inflate(data: bytes, wbits: int) -> bytes:
    """The body inflated, within the file's budgets: a body is a document read whole (the
    document cap), and the bodies of a file share its decompression budget with the rest of
    it, so neither one huge body nor many large ones (nor gzip inside gzip) can outgrow it."""
    document = files.limits().max_document_bytes
    left = files.decompression_left()
    cap = min(document, left)
    if cap <= 0:  # zlib reads a max_length of 0 as no limit at all
        raise BadBody(_spent())
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(data, cap)
    except zlib.error as exc:
        raise _Damaged(f"compressed body is damaged ({exc})") from None
    files.decompressed(len(out))
    if inflater.unconsumed_tail:
        if cap < document:
            raise BadBody(_spent())
        raise BadBody(f"compressed body inflates past {files.over('max_document_bytes')}")
    if not inflater.eof:
        raise _Damaged("compressed body is damaged (cut short)")
    return out


def _spent() -> str:
    return (
        f"compressed bodies of this file inflate past {files.over('max_decompressed_bytes')}: "
        "this one was not read"
    )


def _from_bytes(data: bytes, encoding: str | None) -> bytes | str:
    """Bytes inflated as their magic (gzip) or header (deflate) says; a header that names a
    codec the bytes do not follow is stale (recorders decode bodies and keep the header)."""
    if data[:2] == b"\x1f\x8b":
        return _from_bytes(_inflate(data, 31), None)
    if encoding == "deflate":
        for wbits in (15, -15):
            try:
                return _from_bytes(_inflate(data, wbits), None)
            except _Damaged:
                continue
        return data
    if encoding in ("br", "zstd", "compress") and not _is_text(data):
        raise BadBody(f"{encoding}-compressed body: not decoded")
    return data


def _is_text(data: bytes) -> bool:
    return data.lstrip()[:1] in (b"{", b"[") or data.startswith((b"data:", b"event:"))


def _maybe_base64(text: str) -> bytes | None:
    """The bytes a base64 text stands for, when they are compressed or JSON/SSE text."""
    if len(text) < 16 or not _BASE64.fullmatch(text):
        return None
    try:
        data = base64.b64decode(text, validate=False)
    except (binascii.Error, ValueError):
        return None
    return data if data[:2] == b"\x1f\x8b" or _is_text(data) else None


def body_of(side: Mapping[str, Any]) -> Any:
    """The body of a request or response side: dict (parsed JSON), text, bytes or None."""
    for key in ("parsed_body", "body_json"):
        if key in side:
            return side[key]
    raw = side.get("body")
    if isinstance(raw, dict):
        if "base64_string" in raw:
            try:
                raw = base64.b64decode(str(raw["base64_string"]), validate=False)
            except (binascii.Error, ValueError):
                raise BadBody("base64_string body is not base64") from None
        elif "string" in raw:
            raw = raw["string"]
        elif "parsed_body" in raw:
            return raw["parsed_body"]
    encoding = (header(side.get("headers"), "content-encoding") or "").strip().lower() or None
    if isinstance(raw, str) and raw[:1] not in ("{", "["):
        decoded = _maybe_base64(raw)
        if decoded is not None:
            raw = decoded
    if isinstance(raw, bytes | bytearray):
        return _from_bytes(bytes(raw), encoding)
    return raw


def _status(response: Mapping[str, Any]) -> int | None:
    status = response.get("status")
    if isinstance(status, dict):
        return as_int(status.get("code", status.get("status_code")))
    code = as_int(response.get("code"))
    if code is not None:
        return code
    if isinstance(status, int):
        return as_int(status)
    if isinstance(status, str):
        return count_of(status[:3])
    return None


def interaction_exchange(item: Mapping[str, Any]) -> Exchange:
    """The exchange one interaction records; raises BadBody when a body can not be read."""
    request = as_dict(item.get("request"))
    response = as_dict(item.get("response"))
    return Exchange(
        request=body_of(request),
        response=body_of(response),
        status=_status(response),
        url=as_str(request.get("uri") or request.get("url")),
        method=as_str(request.get("method")),
        has_response=bool(response),
        # Ruby VCR dates each interaction; vcrpy keeps only the server's Date header.
        time=as_str(item.get("recorded_at")) or header(response.get("headers"), "date"),
    )


def _where(item: Any) -> str:
    request = as_dict(as_dict(item).get("request"))
    method = as_str(request.get("method"))
    url = without_query(request.get("uri") or request.get("url"))
    return " ".join(p for p in (method.upper() if method else None, url) if p)


# --- YAML ------------------------------------------------------------------------------------

Item = tuple[int, Any, str | None]  # line, interaction, why it could not be read


class _Aliases:
    """The file's YAML alias budget, spent as documents are checked before construction.

    A node reached again (through an alias, `*a` of an `&a` node) is visited again with its
    whole subtree, as constructing and then reading the value costs: a billion-laughs file of
    a few hundred bytes expands to billions of visits. One budget for the whole file, however
    its interactions share anchors and whether it parses whole or interaction by interaction,
    so neither many interactions under a per-interaction cap nor the fallback parse of a
    broken file escapes it.
    """

    def __init__(self) -> None:
        # Nodes already visited: their ids stay valid while the composed document is alive
        # (one `seen` per composed document).
        self.seen: set[int] = set()

    def within(self, node: yaml.Node) -> bool:
        """Whether constructing node stays within the file's alias budget (counted)."""
        left = files.alias_visits(0)
        seen, again, stack = self.seen, 0, [node]
        while stack:
            current = stack.pop()
            if id(current) in seen:
                again += 1
                if again > left:
                    files.alias_visits(again)
                    return False
            else:
                seen.add(id(current))
            if isinstance(current, yaml.SequenceNode):
                stack.extend(current.value)
            elif isinstance(current, yaml.MappingNode):
                for key, value in current.value:
                    stack.append(key)
                    stack.append(value)
        files.alias_visits(again)
        return True


def _alias_bomb() -> str:
    visits = amount(files.limits(), "max_yaml_aliases")
    return (
        f"YAML aliases in this file expand past {visits} node visits "
        f"({exceeded('max_yaml_aliases')}): a billion-laughs file; not read"
    )


def _construct(loader: Any, node: yaml.Node, aliases: _Aliases) -> tuple[Any, str | None]:
    if not aliases.within(node):
        return None, _alias_bomb()
    try:
        return loader.construct_document(node), None
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        return None, f"invalid YAML value: {clip(' '.join(str(exc).split()), 300)}"
    except RecursionError:
        return None, "YAML nested too deeply (or an alias that contains itself)"


def _pairs(loader: Any, root: yaml.Node) -> Iterator[Item]:
    """The interactions of a composed cassette, each with the line where it starts."""
    if not isinstance(root, yaml.MappingNode):
        yield 1, None, "a YAML cassette is a mapping of interactions; this document is not"
        return
    aliases = _Aliases()
    lists: dict[str, yaml.Node] = {}
    for key, value in root.value:
        if isinstance(key, yaml.ScalarNode) and isinstance(value, yaml.SequenceNode):
            lists[key.value] = value
    if "requests" in lists and not any(k in lists for k in _LIST_KEYS):
        responses = lists["responses"].value if "responses" in lists else []
        for i, node in enumerate(lists["requests"].value):
            request, why = _construct(loader, node, aliases)
            response, why2 = (None, None)
            if i < len(responses):
                response, why2 = _construct(loader, responses[i], aliases)
            yield node.start_mark.line + 1, {"request": request, "response": response}, why or why2
        for node in responses[len(lists["requests"].value) :]:
            yield node.start_mark.line + 1, None, "recorded response without its request"
        return
    key = next((k for k in _LIST_KEYS if k in lists), None)
    if key is None:
        yield 1, None, "YAML cassette without an interactions list"
        return
    for node in lists[key].value:
        value, why = _construct(loader, node, aliases)
        yield node.start_mark.line + 1, value, why


def _item_starts(lines: list[str]) -> list[int]:
    """0-based lines where the interactions of a YAML cassette start, from the text alone: the
    `- ` items of the block list under the interactions key."""
    at = next((i for i, line in enumerate(lines) if _YAML_LIST.match(line)), None)
    if at is None:
        return []
    starts: list[int] = []
    indent: str | None = None
    for i in range(at + 1, len(lines)):
        line = lines[i]
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if indent is None:
            match = re.match(r"( *)- ", line)
            if match is None:
                return []
            indent = match.group(1)
        depth = len(line) - len(line.lstrip(" "))
        if line.startswith(indent + "- "):
            starts.append(i)
        elif depth <= len(indent) and line[depth] not in "\t-":
            break  # the next key at the list's level or above: the list is over
    return starts


def _one_by_one(text: str, error: yaml.YAMLError) -> Iterator[Item]:
    """A cassette that does not parse whole: each interaction parsed on its own."""
    lines = text.splitlines(keepends=True)
    starts = _item_starts(lines)
    broken_at = getattr(getattr(error, "problem_mark", None), "line", None)
    covered = False
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        chunk = lines[start:end]
        # The last interaction runs to the next top-level key, not to the end of the file.
        if n + 1 == len(starts):
            for j, line in enumerate(chunk[1:], 1):
                if _YAML_KEY.match(line):
                    chunk = chunk[:j]
                    break
        width = len(chunk[0]) - len(chunk[0].lstrip(" "))
        body = "".join(line[width:] if line[:width].strip() == "" else line for line in chunk)
        # Composed, then checked against the file's alias budget, then constructed: what
        # yaml.load does in one step, with the budget in between.
        loader = _Loader(body)  # a safe loader: no Python objects
        try:
            node = loader.get_single_node()
            if node is not None and not _Aliases().within(node):
                yield start + 1, None, _alias_bomb()
                continue
            value = loader.construct_document(node) if node is not None else None
        except yaml.YAMLError as exc:
            covered = True  # the parse error of the whole file is (at least) this one
            yield start + 1, None, f"invalid YAML: {clip(' '.join(str(exc).split()), 300)}"
            continue
        except RecursionError:
            yield start + 1, None, "YAML nested too deeply"
            continue
        finally:
            loader.dispose()
        if isinstance(value, list) and len(value) == 1:
            yield start + 1, value[0], None
        else:
            yield start + 1, None, "not one interaction (a list item of the cassette)"
    if not covered:
        at = (broken_at + 1) if broken_at is not None else 1
        yield at, None, f"invalid YAML: {clip(' '.join(str(error).split()), 300)}"


def _yaml_items(text: str) -> Iterator[Item]:
    loader = _Loader(text)
    try:
        try:
            root = loader.get_single_node()
        except yaml.YAMLError as exc:
            yield from _one_by_one(text, exc)
            return
        except RecursionError:
            yield 1, None, "YAML nested too deeply"
            return
        if root is None:
            return
        yield from _pairs(loader, root)
    finally:
        loader.dispose()


# --- JSON ------------------------------------------------------------------------------------


def _json_items(text: str, path: Path, collector: Collector) -> Iterator[Item]:
    line_of = jsonwalk.LineCounter(text)
    found: list[Item] = []
    last_end = 0

    def interactions(text: str, pos: int) -> tuple[None, int]:
        nonlocal last_end
        end = jsonwalk.skip_ws(text, pos + 1)
        for start, item, end in jsonwalk.elements(text, pos):
            if isinstance(item, jsonwalk.Unreadable):
                found.append((line_of(start), None, f"interaction not read: {item.reason}"))
            else:
                found.append((line_of(start), item, None))
            last_end = end
        return None, jsonwalk.skip_ws(text, end) + 1

    walkers: dict[str, jsonwalk.Walker] = {key: interactions for key in _LIST_KEYS}
    try:
        _, end = jsonwalk.obj(text, jsonwalk.skip_ws(text, 0), walkers)
        yield from found
        reject_trailing(collector, str(path), text, end, line_of, FORMAT)
    except jsonwalk.WalkError as exc:
        yield from found
        where = jsonwalk.skip_ws(text, last_end)
        if text.startswith(",", where):
            where = jsonwalk.skip_ws(text, where + 1)
        where = min(where, exc.pos)
        yield (
            line_of(where),
            None,
            f"invalid JSON at line {line_of(exc.pos)}: {exc.msg}; the rest of the cassette "
            "was not read",
        )


# --- the file --------------------------------------------------------------------------------


def ingest(path: Path, collector: Collector) -> int:
    text = files.read_text(path)
    if text.startswith("\ufeff"):
        text = text[1:]
    reader = capture.Reader(path, collector, FORMAT)
    is_json = text.lstrip(" \t\r\n").startswith("{")
    items = _json_items(text, path, collector) if is_json else _yaml_items(text)
    seen = 0
    for line, item, why in items:
        seen += 1
        if why is not None:
            reader.reject(line, why)
            continue
        if not isinstance(item, dict):
            reader.reject(line, "interaction is not a mapping", capture.excerpt(item))
            continue
        if not isinstance(item.get("request"), dict) and not isinstance(item.get("response"), dict):
            keys = ", ".join(sorted(map(str, item))[:8])
            reader.reject(line, f"not a recorded HTTP request/response (keys: {keys})")
            continue
        with isolated(collector, str(path), line, FORMAT):
            try:
                ex = interaction_exchange(item)
            except BadBody as exc:
                reader.reject(line, f"{_where(item)}: {exc}", capture.excerpt(item))
                continue
            try:
                reader.link(exchange.build(ex, line), item)
            except NotACall as exc:
                reader.reject(line, str(exc), _where(item))
    if seen == 0:
        collector.note(str(path), "cassette with no recorded interactions")
    return reader.finish()


SPECS = (
    FormatSpec(
        name=FORMAT,
        description="HTTP cassettes (vcrpy, Ruby VCR, go-vcr) of LLM API calls",
        detection="a YAML or JSON document whose interactions / http_interactions list holds "
        "recorded HTTP exchanges",
        sniff=sniff,
        ingest=ingest,
        # Before the sidecar sniffer, whose small status objects a lone API body could
        # resemble; YAML as often as JSON, so before the text scanner takes it.
        priority=700,
        columns=capture.EXCHANGE_COLUMNS,
        # Ruby VCR's recorded_at, else a Date header the server sent and the recorder kept.
        extra_columns=frozenset({"request_time"}),
        benchmark=False,
        artifact="capture",
        rerun=None,
        seeds={
            "cassette_yaml": "tests/data/cassettes/synthetic/vcrpy_agent_loop.yaml",
            "cassette_json": "tests/data/cassettes/synthetic/ruby_vcr_ollama.json",
            "cassette_bedrock_stream": "tests/data/cassettes/real/"
            "pydantic_ai_test_bedrock_model_stream.yaml",
        },
    ),
)
