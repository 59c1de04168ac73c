"""The self-contained HTML report: Jinja2 templates from reports/, everything escaped.

Static HTML carries the verdict, causes, fixes, validation plan, charts and coverage. The
trajectory explorer is a small inline script that renders pages of trajectories from a JSON
data island, so a report of thousands of trajectories stays one light DOM. The page allows
exactly that one script (by its sha256 in the CSP) and nothing from the network.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import re
from importlib import metadata
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape

from forensics import markers
from forensics.content import content_dir
from forensics.report.render import charts, jsonout
from forensics.report.types import Report, cause_evidence

PAGE_SIZE = 20
MAX_REJECT_ROWS = 500
# A data island larger than this goes into the page gzipped (base64), and the page inflates it
# with the browser's own DecompressionStream: a large scan's turns are repetitive JSON that
# shrinks several times over. Smaller islands stay plain JSON, readable in the page source.
COMPRESS_ABOVE = 2_000_000
MIN_TURN_JSON = len('{"i":0,"a":0},')

# Markup worth seeing at a glance in model text: reasoning tags (markers.py) and the tool-call
# markup of the common parsers (failure-catalogue §1), literal, plus the XML-ish call headers.
TOOL_CALL_MARKUP = [
    "<tool_call>",
    "</tool_call>",
    "<tool_calls>",
    "</tool_calls>",
    "<seed:tool_call>",
    "</seed:tool_call>",
    "<minimax:tool_call>",
    "</minimax:tool_call>",
    "<longcat_tool_call>",
    "</longcat_tool_call>",
    "<|tool_call>",
    "<tool_call|>",
    "<|python_tag|>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "</function>",
    "</parameter>",
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
]
_MARKUP_LITERALS = sorted(
    {t for pair in markers.REASONING_TAGS for t in pair} | set(TOOL_CALL_MARKUP),
    key=lambda t: (-len(t), t),
)
_MARKUP_PATTERNS = [r"<function=[^>\n]{1,80}>", r"<parameter=[^>\n]{1,80}>"]


def _regex_literal(text: str) -> str:
    """Escape for a regex that both Python `re` and JavaScript `RegExp` read the same way."""
    return re.sub(r"([\\^$.|?*+()\[\]{}/])", r"\\\1", text)


MARKUP_SOURCE = "|".join([*(_regex_literal(t) for t in _MARKUP_LITERALS), *_MARKUP_PATTERNS])
_MARKUP = re.compile(MARKUP_SOURCE)
_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def default_reports_dir() -> Path:
    found = content_dir("reports")
    if found is not None:
        return found
    raise FileNotFoundError("the report templates are missing from this installation")


def highlight(text: str | None) -> Markup:
    """Escape untrusted text and wrap reasoning / tool-call markup in <mark>."""
    if not text:
        return Markup("")
    out, pos = [], 0
    for m in _MARKUP.finditer(text):
        out.append(str(escape(text[pos : m.start()])))
        out.append(f"<mark>{escape(m.group(0))}</mark>")
        pos = m.end()
    out.append(str(escape(text[pos:])))
    return Markup("".join(out))


def code_spans(text: str | None) -> Markup:
    """Escape text, then show `backticked` parts (commands, flags) as code."""
    if not text:
        return Markup("")
    out, pos = [], 0
    for m in _CODE_SPAN.finditer(text):
        out.append(str(escape(text[pos : m.start()])))
        out.append(f"<code>{escape(m.group(1))}</code>")
        pos = m.end()
    out.append(str(escape(text[pos:])))
    return Markup("".join(out))


def json_island(data: Any) -> Markup:
    """JSON safe inside <script type="application/json">: no '<', '>' or '&' survives raw.

    The escapes are JSON string escapes, so JSON.parse gives back the exact text, while the
    HTML parser never sees a `</script>` or `<!--` that could end the element early.
    """
    text = jsonout.dumps(data, indent=False, allow_nan=True)
    for raw, esc in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, esc)
    return Markup(text)


# One letter per role in a trajectory's strip of turns (upper case: the turn has findings).
_ROLE_LETTER = {"system": "s", "user": "u", "assistant": "a", "tool": "t"}


def packed_island(data: dict[str, Any]) -> str:
    """The explorer's data gzipped (no timestamp: the same scan gives the same bytes), base64,
    as two parts separated by a space.

    The first is the index: the data without the turns, each trajectory with its turn count
    (`nt`) and its strip of turns (`st`) beside its count per rule (`rc`), all the list of cards
    needs. The second is the turns, each trajectory's on a JSON line of
    its own, in order. The page shows the index first and parses a trajectory's turns only when
    it shows them: parsing hundreds of thousands of turn objects up front is what made a large
    report slow to open. Compact JSON never holds a raw newline.
    """
    trajectories = data["trajectories"]
    index = {**data, "trajectories": [_header(t, data["ra"]) for t in trajectories]}
    turns = "\n".join(_json(t["turns"]) for t in trajectories)
    return f"{_packed(_json(index))} {_packed(turns)}"


def _header(t: dict[str, Any], role_actor: list[list[str]]) -> dict[str, Any]:
    strip = []
    for u in t["turns"]:
        letter = _ROLE_LETTER.get(role_actor[u["a"]][0], "x")
        strip.append(letter.upper() if u.get("f") else letter)
    header = {k: v for k, v in t.items() if k != "turns"}
    return header | {"nt": len(t["turns"]), "st": "".join(strip)}


def _packed(text: str) -> str:
    return base64.b64encode(gzip.compress(text.encode(), compresslevel=6, mtime=0)).decode()


def _json(value: Any) -> str:
    return jsonout.dumps(value, indent=False, allow_nan=True)


def _script_hash(script: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()


def _version() -> str:
    try:
        return metadata.version("forensics")
    except metadata.PackageNotFoundError:
        return "dev"


def render(
    model: Report, templates: Path | None = None, compress_above: int = COMPRESS_ABOVE
) -> str:
    """The report page for a scan: one file, no network, one hashed inline script."""
    import jinja2  # here: a scan without a report (--no-report) never needs it

    folder = templates or default_reports_dir()
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(folder)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["highlight"] = highlight
    env.filters["code"] = code_spans
    script = (folder / "explorer.js").read_text(encoding="utf-8")
    if re.search(r"</script|<!--", script, re.IGNORECASE):
        raise ValueError("explorer.js must not contain '</script' or '<!--'")
    data = model["page"]["explorer"] | {"markup": MARKUP_SOURCE, "page_size": PAGE_SIZE}
    handle = {t["id"]: t["k"] for t in data["trajectories"]}
    turn_rows = {
        t["id"]: [
            {
                "turn_index": u["i"],
                "role": data["ra"][u["a"]][0],
                "actor": data["ra"][u["a"]][1],
                "rules": [data["rules"][f[0]]["id"] for f in u.get("f", [])],
            }
            for u in t["turns"]
        ]
        for t in data["trajectories"][: charts.MAX_TIMELINE_ROWS]
    }
    figures = [
        (
            "lengths",
            "Output length per turn against the cap",
            charts.output_lengths(model["page"]["output_lengths"]),
        ),
        ("per-rule", "Findings per rule", charts.findings_per_rule(model)),
        (
            "per-variant",
            "Findings per variant and model",
            charts.findings_per_variant(model),
        ),
        (
            "timeline",
            "Timeline per trajectory",
            charts.timeline(data["trajectories"], turn_rows),
        ),
    ]
    # Every turn takes at least MIN_TURN_JSON bytes of the island: past the threshold by that
    # count alone, the plain island is not built just to be measured.
    turns = sum(len(t["turns"]) for t in data["trajectories"])
    island = None if turns * MIN_TURN_JSON > compress_above else json_island(data)
    packed = island is None or len(island) > compress_above
    return env.get_template("report.html.j2").render(
        m=model,
        evidence=cause_evidence(model),
        handle=handle,
        figures=[(fid, title, chart) for fid, title, chart in figures if chart is not None],
        data=Markup(packed_island(data)) if packed else island,
        packed=packed,
        script=Markup(script),
        script_hash=_script_hash(script),
        page_size=PAGE_SIZE,
        turn_chars=data["turn_chars"],
        max_rejects=MAX_REJECT_ROWS,
        version=_version(),
    )
