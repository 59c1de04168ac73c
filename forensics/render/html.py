"""The self-contained HTML report: Jinja2 templates from reports/, everything escaped.

Static HTML carries the verdict, causes, fixes, validation plan, charts and coverage. The
trajectory explorer is a small inline script that renders pages of trajectories from a JSON
data island, so a report of thousands of trajectories stays one light DOM. The page allows
exactly that one script (by its sha256 in the CSP) and nothing from the network.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from importlib import metadata
from pathlib import Path
from typing import Any

import jinja2
import polars as pl
from markupsafe import Markup, escape

from forensics import markers
from forensics.pipeline import ScanResult
from forensics.render import charts

PAGE_SIZE = 20
TURN_CHARS = 4000  # per turn text in the data island, before the budget shrinks it
MIN_TURN_CHARS = 400
FLAGGED_TURN_CHARS = 2000  # turns with findings keep at least this much: they are the evidence
SYSTEM_CHARS = 20000
ARG_CHARS = 2000
# Total text the data island may carry (~ this many bytes): beyond it every turn is clipped
# shorter, head and tail kept, so a scan of thousands of trajectories stays openable.
DATA_BUDGET_CHARS = 24_000_000
MAX_REJECT_ROWS = 500

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
    here = Path(__file__).resolve().parent.parent
    for candidate in (here.parent / "reports", here / "_data" / "reports"):
        if candidate.is_dir():
            return candidate
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
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for raw, esc in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, esc)
    return Markup(text)


def _clip(text: str | None, limit: int) -> dict[str, Any]:
    """Head and tail of a long text: a cut-off turn shows how it began and where it stopped."""
    if not text:
        return {}
    if len(text) <= limit:
        return {"t": text}
    head = limit * 3 // 5
    return {"t": text[:head], "t2": text[len(text) - (limit - head) :], "n": len(text)}


def _turn_limit(n_turns: int) -> int:
    if not n_turns:
        return TURN_CHARS
    return max(MIN_TURN_CHARS, min(TURN_CHARS, DATA_BUDGET_CHARS // n_turns))


def explorer_data(result: ScanResult, model: dict[str, Any]) -> dict[str, Any]:
    """Everything the explorer shows, compact: one entry per trajectory, turns inside.

    Trajectories come most findings first; `k` (1-based position) is the handle the page's
    links use (#traj-K, #turn-K-I).
    """
    rules = [
        {"id": r["id"], "title": r["title"], "severity": r["severity"]} for r in model["rules"]
    ]
    rule_ix = {r["id"]: i for i, r in enumerate(rules)}
    for rid in sorted(set(result.findings["rule"].to_list()) - set(rule_ix)):
        rule_ix[rid] = len(rules)
        rules.append({"id": rid, "title": rid, "severity": "info"})
    causes = [{"id": c["id"], "rank": c["rank"], "title": c["title"]} for c in model["causes"]]
    cause_of: dict[str, list[int]] = {}
    for i, c in enumerate(model["causes"]):
        for tid in c["trajectory_ids"]:
            cause_of.setdefault(tid, []).append(i)
    variants = [
        {"variant": v["variant"], "agent_model": v["agent_model"]}
        for v in model["summary"]["by_variant"]
    ]
    variant_ix = {(v["variant"], v["agent_model"]): i for i, v in enumerate(variants)}

    marks: dict[tuple[str, int], list[list[Any]]] = {}
    counts: dict[str, int] = {}
    rules_of: dict[str, set[int]] = {}
    for tid, idx, rule, message in result.findings.select(
        "trajectory_id", "turn_index", "rule", "message"
    ).iter_rows():
        marks.setdefault((tid, idx), []).append([rule_ix[rule], message])
        counts[tid] = counts.get(tid, 0) + 1
        rules_of.setdefault(tid, set()).add(rule_ix[rule])

    paths: dict[str, int] = {}
    strings: dict[str, int] = {}

    def path_ix(p: str | None) -> int | None:
        if p is None:
            return None
        return paths.setdefault(p, len(paths))

    limit = _turn_limit(result.turns.height)
    turns = result.turns.sort(["trajectory_id", "turn_index"])
    by_traj: dict[str, list[dict[str, Any]]] = {}
    for u in turns.select(
        "trajectory_id",
        "turn_index",
        "role",
        "actor",
        "content",
        "reasoning",
        "tool_calls",
        "finish_reason",
        "finish_reason_raw",
        "input_tokens",
        "output_tokens",
        "reasoning_tokens",
        "max_output_tokens",
        "model",
        "http_status",
        "error",
        "source_path",
        "source_line",
    ).iter_rows(named=True):
        f = marks.get((u["trajectory_id"], u["turn_index"]), [])
        row: dict[str, Any] = {
            "i": u["turn_index"],
            "role": u["role"],
            "actor": u["actor"],
            "p": path_ix(u["source_path"]),
            "l": u["source_line"],
        }
        if u["role"] == "system" and u["content"]:
            row["s"] = strings.setdefault(u["content"][:SYSTEM_CHARS], len(strings))
            row["sn"] = len(u["content"])
        else:
            if c := _clip(u["content"], max(limit, FLAGGED_TURN_CHARS) if f else limit):
                row["c"] = c
            if r := _clip(u["reasoning"], max(limit, FLAGGED_TURN_CHARS) if f else limit):
                row["r"] = r
        if u["tool_calls"]:
            row["tc"] = [
                [call["name"], (call["arguments"] or "")[:ARG_CHARS]] for call in u["tool_calls"]
            ]
        if u["finish_reason"] or u["finish_reason_raw"]:
            row["fr"] = u["finish_reason"]
            if u["finish_reason_raw"] and u["finish_reason_raw"] != u["finish_reason"]:
                row["frr"] = u["finish_reason_raw"]
        tokens = [u[k] for k in ("input_tokens", "output_tokens", "reasoning_tokens")]
        if any(t is not None for t in tokens):
            row["tk"] = tokens
        if u["max_output_tokens"] is not None:
            row["cap"] = u["max_output_tokens"]
        if u["model"]:
            row["m"] = u["model"]
        if u["http_status"] is not None:
            row["hs"] = u["http_status"]
        if u["error"]:
            row["e"] = u["error"][:ARG_CHARS]
        if f:
            row["f"] = f
        by_traj.setdefault(u["trajectory_id"], []).append(row)

    trajs = result.trajectories.with_columns(
        pl.col("trajectory_id").replace_strict(counts, default=0, return_dtype=pl.Int64).alias("_n")
    ).sort(["_n", "trajectory_id"], descending=[True, False])
    out = []
    for k, t in enumerate(trajs.iter_rows(named=True), 1):
        tid = t["trajectory_id"]
        out.append(
            {
                "k": k,
                "id": tid,
                "run": t["run_id"],
                "task": t["task_id"],
                "trial": t["trial"],
                "variant": t["variant"],
                "am": t["agent_model"],
                "um": t["user_model"],
                "reward": t["reward"],
                "term": t["termination_reason"],
                "err": (t["error"] or "")[:ARG_CHARS] or None,
                "p": path_ix(t["source_path"]),
                "l": t["source_line"],
                "nf": counts.get(tid, 0),
                "rules": sorted(rules_of.get(tid, ())),
                "causes": cause_of.get(tid, []),
                "vi": variant_ix.get((t["variant"] or "(none)", t["agent_model"] or "?")),
                "turns": by_traj.get(tid, []),
            }
        )
    return {
        "rules": rules,
        "causes": causes,
        "variants": variants,
        "paths": list(paths),
        "strings": list(strings),
        "markup": MARKUP_SOURCE,
        "page_size": PAGE_SIZE,
        "turn_chars": limit,
        "trajectories": out,
    }


def _script_hash(script: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()


def _version() -> str:
    try:
        return metadata.version("forensics")
    except metadata.PackageNotFoundError:
        return "dev"


def render(model: dict[str, Any], result: ScanResult, templates: Path | None = None) -> str:
    """The report page for a scan: one file, no network, one hashed inline script."""
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
    data = explorer_data(result, model)
    handle = {t["id"]: t["k"] for t in data["trajectories"]}
    turn_rows = {
        t["id"]: [
            {
                "turn_index": u["i"],
                "role": u["role"],
                "actor": u["actor"],
                "rules": [data["rules"][f[0]]["id"] for f in u.get("f", [])],
            }
            for u in t["turns"]
        ]
        for t in data["trajectories"][: charts.MAX_TIMELINE_ROWS]
    }
    figures = [
        ("lengths", "Output length per turn against the cap", charts.output_lengths(result)),
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
    return env.get_template("report.html.j2").render(
        m=model,
        handle=handle,
        figures=[(fid, title, chart) for fid, title, chart in figures if chart is not None],
        data=json_island(data),
        script=Markup(script),
        script_hash=_script_hash(script),
        page_size=PAGE_SIZE,
        turn_chars=data["turn_chars"],
        max_rejects=MAX_REJECT_ROWS,
        version=_version(),
    )
