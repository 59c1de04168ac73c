"""One episode on the terminal (`forensics show`): a header, then turn by turn its text, tool
calls and the findings on it.

Everything here is log text: each line of it passes through safe.visible (controls, bidi and
escape sequences shown, not obeyed) and every printed line through the Style's guard. Long
texts are clipped, head and tail kept, unless the whole is asked for.
"""

from __future__ import annotations

from typing import Any

from forensics.report.render.labels import episode_label
from forensics.report.render.safe import visible as v
from forensics.report.render.text import PLAIN, Style

TURN_CHARS = 1200
SYSTEM_CHARS = 300
ROLE_COLOUR = {"assistant": "34", "user": "32", "tool": "33", "system": "2"}
SEVERITY_COLOUR = {"critical": "1;31", "high": "31", "medium": "33", "low": "36", "info": "2"}


def _clip(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    head = limit * 3 // 5
    gap = f"\n[… {len(text) - limit:,} of {len(text):,} chars not shown (--full shows them) …]\n"
    return text[:head] + gap + text[len(text) - (limit - head) :]


def _block(text: str, indent: str) -> list[str]:
    """Log text as lines of its own: its newlines kept, everything else made visible."""
    return [indent + v(line.replace("\t", "    ")) for line in text.split("\n")]


def _meta(u: dict[str, Any]) -> list[str]:
    """What the source recorded about the turn; nothing for what it did not."""
    out = []
    if u["model"]:
        out.append(v(u["model"]))
    if u["finish_reason"] or u["finish_reason_raw"]:
        raw = u["finish_reason_raw"]
        shown = u["finish_reason"] or raw
        out.append(f"finish {v(shown)}" + (f" ({v(raw)})" if raw and raw != shown else ""))
    tokens = [
        f"{label} {u[key]:,}"
        for key, label in (
            ("input_tokens", "in"),
            ("output_tokens", "out"),
            ("reasoning_tokens", "reasoning"),
        )
        if u[key] is not None
    ]
    if tokens:
        out.append(" · ".join(tokens) + " tokens")
    if u["max_output_tokens"] is not None:
        out.append(f"cap {u['max_output_tokens']:,}")
    if u["http_status"] is not None:
        out.append(f"HTTP {u['http_status']}")
    return out


def render(view: dict[str, Any], style: Style = PLAIN, full: bool = False) -> str:
    """The episode of show.episode() as terminal text."""
    e = view["episode"]
    head = [episode_label(e["task_id"], e["trial"], e["trajectory_id"])]
    if e["task_id"] is not None:
        head.append(e["trajectory_id"])
    for key, label in (("variant", ""), ("agent_model", "agent "), ("user_model", "user ")):
        if e[key]:
            head.append(label + str(e[key]))
    if e["reward"] is not None:
        head.append(f"reward {e['reward']:g}")
    if e["termination_reason"]:
        head.append(f"ended {e['termination_reason']}")
    n = len(view["turns"])
    head.append(f"{n:,} turn{'' if n == 1 else 's'}")
    f = view["findings"]
    head.append(f"{f:,} finding{'' if f == 1 else 's'}")
    lines = [style.paint(" · ".join(v(h) for h in head), "1")]
    if e["source_path"]:
        where = v(e["source_path"]) + (f":{e['source_line']}" if e["source_line"] else "")
        lines.append(f"source: {where}")
    if e["error"]:
        lines.append(style.paint(f"episode error: {v(e['error'])}", "31"))
    for item in view["episode_findings"]:
        lines.append(_finding(item, style, ""))
    for u in view["turns"]:
        lines.append("")
        actor = u["actor"] if u["actor"] and u["actor"] != u["role"] else None
        who = v(u["role"]) + (f"/{v(actor)}" if actor else "")
        title = style.paint(f"#{u['turn_index']} {who}", ROLE_COLOUR.get(u["role"] or "", "1"))
        src = ""
        if u["source_path"]:
            src = v(u["source_path"]) + (f":{u['source_line']}" if u["source_line"] else "")
        lines.append("  ·  ".join([title, *_meta(u), *([src] if src else [])]))
        for item in u["findings"]:
            lines.append(_finding(item, style, "   "))
        limit = None if full else SYSTEM_CHARS if u["role"] == "system" else TURN_CHARS
        if u["reasoning"]:
            lines.append(style.paint(f"   reasoning ({len(u['reasoning']):,} chars):", "2"))
            lines += _block(_clip(u["reasoning"], limit), "   │ ")
        if u["content"]:
            lines += _block(_clip(u["content"], limit), "   ")
        elif not u["tool_calls"] and not u["reasoning"]:
            lines.append(style.paint("   (empty content)", "2"))
        for call in u["tool_calls"]:
            args = _clip(call["arguments"] or "", None if full else TURN_CHARS)
            lines += _block(f"→ {call['name']}({args})", "   ")
        if u["error"]:
            lines.append(style.paint(f"   error: {v(u['error'])}", "31"))
    return style.lines("\n".join(lines)) + "\n"


def _finding(item: dict[str, Any], style: Style, indent: str) -> str:
    tag = style.paint(
        f"✗ {v(item['rule'])} [{v(item['severity'])}]", SEVERITY_COLOUR.get(item["severity"])
    )
    return f"{indent}{tag}: {v(item['message'])}"
