"""Charts of the HTML report as inline SVG, drawn here in Python: no chart library, no network.

Every piece of text that reaches an SVG passes through `escape`; numbers are formatted here.
Charts are plain data pictures with a caption that states in words what the picture shows, so
the claim survives a screen reader or a text search.

Each chart is drawn twice: WIDTH wide for a desktop, and NARROW wide, laid out for a phone (labels
above their bars, one panel a row), which the page shows under 720 px. Scaling the wide drawing
down would shrink its text below reading size; showing it at full size in a box that scrolls
sideways leaves its labels off-screen.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from forensics.report.render.labels import episode_label
from forensics.report.types import Report
from forensics.wording import agree

ACTOR_COLOURS = {
    "agent": "#3f6ad8",
    "user_sim": "#2e9d4f",
    "env": "#a1887f",
    "system": "#b6bcc6",
}
ROLE_COLOURS = {"assistant": "#3f6ad8", "user": "#2e9d4f", "tool": "#a1887f", "system": "#b6bcc6"}
FINDING_COLOUR = "#c62828"
SEVERITY_COLOURS = {
    "critical": "#8e0000",
    "high": "#c62828",
    "medium": "#e69500",
    "low": "#6b8fd6",
    "info": "#90a4ae",
}
ACTOR_NAMES = {"agent": "agent", "user_sim": "user simulator", "env": "tool", "system": "system"}
WIDTH = 1040
NARROW = 360
MAX_BARS = 240  # beyond this, a panel shows evenly spaced quantiles of the sorted lengths
MAX_PANELS = 6
MAX_TIMELINE_ROWS = 40


def _n(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 10 or x == int(x) else f"{x:,.2f}"


def _svg(width: int, height: int, label: str, body: list[str]) -> Markup:
    return Markup(
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">'
        + "".join(body)
        + "</svg>"
    )


def _text(x: float, y: float, text: str, cls: str = "", anchor: str = "start") -> str:
    c = f' class="{cls}"' if cls else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{c}>{escape(text)}</text>'


# Widest glyph advance of the chart font per px of font size, averaged over ids and digits
# (system-ui at 11.5 px runs ~6.3 px a character): an upper bound, so a fitted label fits.
_CHAR_EM = 0.6


def _fit(text: str, room: float, size: float = 11.5) -> str:
    """text, cut in the middle (head and tail kept, as ids differ at both ends) to fit `room`
    px at font `size`: a label never runs past its space into the next or off the picture."""
    most = max(4, int(room / (size * _CHAR_EM)))
    if len(text) <= most:
        return text
    head = (most - 1) * 2 // 3
    return text[:head] + "…" + text[len(text) - (most - 1 - head) :]


def _label(x: float, y: float, text: str, room: float, cls: str, anchor: str = "start") -> str:
    """A fitted label; when cut, the whole text is its tooltip."""
    size = 11.5 if "rlabel" in cls or "ptitle" in cls else 10.5
    shown = _fit(text, room, size)
    if shown == text:
        return _text(x, y, text, cls, anchor)
    c = f' class="{cls}"' if cls else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{c}>'
        f"<title>{escape(text)}</title>{escape(shown)}</text>"
    )


def _nice_top(value: float) -> tuple[float, float]:
    """A round axis maximum at or above value, and its tick step (1-2-5 steps, 2-5 ticks)."""
    if value <= 0:
        return 1.0, 1.0
    step = 10 ** math.floor(math.log10(value))
    for m in (1, 2, 5, 10):
        if value / (m * step) <= 5:
            step *= m
            break
    return math.ceil(value / step) * step, step


@dataclass
class Chart:
    svg: Markup
    caption: str
    # The same data laid out NARROW wide, for a phone.
    narrow: Markup


# --- output length per turn against the cap


def output_lengths(data: dict[str, Any] | None) -> Chart | None:
    """Model-written turns per actor and model, sorted by length, against the output cap.

    Sorted ascending, a fixed cap shows as a flat plateau where the longest turns all stop at
    the same length: the wall. Without token counts the length is content + reasoning chars,
    and the cap is drawn at ~4 chars per token.
    """
    if not data:
        return None
    by_tokens = data["by_tokens"]
    unit = "output tokens" if by_tokens else "chars"
    groups = [(g["actor"], g["model"], g) for g in data["groups"]]
    shown = groups[:MAX_PANELS]
    sentences = [
        _length_sentence(f"{ACTOR_NAMES.get(actor, actor)} · {model}", g, unit)
        for actor, model, g in shown
    ]
    if len(groups) > len(shown):
        sentences.append(f"{len(groups) - len(shown)} smaller actor/model groups not drawn")
    note = (
        "Output tokens per turn, sorted shortest to longest, against the requested cap (dashed)"
        if by_tokens
        else "The source has no token counts: length in chars (content, reasoning, tool-call "
        "arguments) per turn, sorted shortest to longest, against the requested cap at ~4 chars "
        "per token (dashed)"
    )
    caption = f"{note}. " + "; ".join(sentences) + "."
    caption = agree(caption)
    return Chart(
        _lengths_svg(shown, unit, WIDTH, caption),
        caption,
        _lengths_svg(shown, unit, NARROW, caption),
    )


def _lengths_svg(
    shown: list[tuple[str, str, dict[str, Any]]], unit: str, width: int, caption: str
) -> Markup:
    """The panels two a row (one on a narrow drawing, or when there is one)."""
    cols = 1 if len(shown) == 1 or width < WIDTH else 2
    pw, ph, gap = (width if cols == 1 else (width - 20) // 2), 170, 20
    rows = math.ceil(len(shown) / cols)
    body: list[str] = []
    for i, (actor, model, g) in enumerate(shown):
        ox, oy = (i % cols) * (pw + gap), (i // cols) * (ph + gap)
        body.append(f'<g transform="translate({ox},{oy})">')
        body += _length_panel(actor, model, g, unit, pw, ph)
        body.append("</g>")
    height = rows * ph + (rows - 1) * gap
    return _svg(width, height, caption, body)


def _length_sentence(name: str, g: dict[str, Any], unit: str) -> str:
    """What one panel shows, in words: how many turns end at their own cap."""
    near, n, cut = g["near_cap"], len(g["turns"]), g["cut"]
    if near or cut:
        s = f"{name}: {near} of {n} turns end at or near their cap"
        s += f", {cut} flagged as cut off (red)" if cut else ""
        return s + (" — the wall" if n >= 3 and near >= n / 2 else "")
    longest = g["longest"]
    s = f"{name}: {n} turn{'s' if n != 1 else ''}, the longest {longest:,} {unit}"
    if g["well_under_cap"]:
        s += ", well under the cap"
    return s


def _length_panel(
    actor: str, model: str, g: dict[str, Any], unit: str, pw: int, ph: int
) -> list[str]:
    left, top, bottom = 46, 22, 16
    plot_w, plot_h = pw - left - 6, ph - top - bottom
    turns = g["turns"]
    values, cut, caps = [t[0] for t in turns], [t[1] for t in turns], [t[2] for t in turns]
    raw_caps = g["caps"]
    n = len(values)
    if n > MAX_BARS:
        idx = [round(j * (n - 1) / (MAX_BARS - 1)) for j in range(MAX_BARS)]
        values, cut, caps = [values[k] for k in idx], [cut[k] for k in idx], [caps[k] for k in idx]
    known = [c for c in caps if c]
    y_max, step = _nice_top(max([*values, *(c * 1.05 for c in known), 1]))
    out = [
        _label(0, 12, f"{ACTOR_NAMES.get(actor, actor)} · {model}", pw - 80, "ptitle"),
        _text(pw - 6, 12, f"{n:,} turn{'s' if n != 1 else ''}", "muted", "end"),
    ]
    tick = 0.0
    while tick <= y_max + 1e-9:
        y = top + plot_h - tick / y_max * plot_h
        out.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
        )
        out.append(_text(left - 4, y + 3, _n(tick), "axis", "end"))
        tick += step
    # A few turns would make slabs: bars keep a readable width, left-aligned.
    bw = min(plot_w / len(values), 40.0)
    colour = ACTOR_COLOURS.get(actor, "#777")
    one_cap = len(raw_caps) == 1 and len(known) == len(values)
    for j, (v, c, cap_y) in enumerate(zip(values, cut, caps, strict=True)):
        h = v / y_max * plot_h
        x = left + j * bw
        w = max(bw - (1 if bw > 3 else 0), 0.6)
        out.append(
            f'<rect x="{x:.2f}" y="{top + plot_h - h:.2f}" width="{w:.2f}" height="{h:.2f}" '
            f'fill="{FINDING_COLOUR if c else colour}"/>'
        )
        if cap_y and not one_cap:
            # Caps differ between turns: each bar gets a tick at its own cap.
            y = top + plot_h - cap_y / y_max * plot_h
            out.append(
                f'<line x1="{x:.2f}" x2="{x + w:.2f}" y1="{y:.1f}" y2="{y:.1f}" class="cap"/>'
            )
    if one_cap:
        cap, cap_y = raw_caps[0], known[0]
        y = top + plot_h - cap_y / y_max * plot_h
        label = f"cap {cap:,}" + (" tok" if unit != "chars" else f" tok ≈ {cap_y:,.0f} chars")
        out.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" class="cap"/>'
        )
        out.append(_text(left + 4, y - 4, label, "caplabel"))
    elif known:
        out.append(_text(pw - 6, ph - 3, "caps differ: a tick per turn", "axis", "end"))
    out.append(_text(left, ph - 3, f"turns, shortest → longest ({unit})", "axis"))
    return out


# --- findings per rule, per variant


def findings_per_rule(model: Report) -> Chart:
    """A bar per rule that found something, coloured by severity, most findings first.

    The rules that found nothing are named in the caption, split into those that ran and those
    that could not run for lack of data: a 0 from a rule that never ran is not a pass.
    """
    counts = model["summary"]["findings_by_rule"]
    unchecked = {n["rule"] for n in model["not_checked"]}
    severity = {r["id"]: r["severity"] for r in model["rules"]}
    found = sorted(((n, rid) for rid, n in counts.items() if n), key=lambda x: (-x[0], x[1]))
    clean = [
        r["id"] for r in model["rules"] if not counts.get(r["id"]) and r["id"] not in unchecked
    ]
    blind = [r["id"] for r in model["rules"] if not counts.get(r["id"]) and r["id"] in unchecked]
    caption = "Findings per rule, coloured by severity: " + (
        ", ".join(f"{rid} {n:,}" for n, rid in found) if found else "none"
    )
    caption += ". Ran and found nothing: " + (", ".join(clean) or "none")
    lacking = Counter(n["rule"] for n in model["not_checked"])  # files each could not run on
    nowhere = {r for r, n in lacking.items() if n >= model["coverage"]["files"]}
    if none := [r for r in blind if r in nowhere]:
        caption += (
            ". Could not run on this data (see coverage), so their 0 is not a pass: "
            + ", ".join(none)
        )
    if some := [r for r in blind if r not in nowhere]:
        caption += (
            ". Could not run on some of the files for lack of data (see coverage), so their 0 "
            "there is not a pass: " + ", ".join(some)
        )
    caption += "."
    caption = agree(caption)
    wide = _bars(found, severity, WIDTH, caption, label_w=190, right=120)
    return Chart(wide, caption, _bars(found, severity, NARROW, caption, label_w=0, right=90))


def _bars(
    found: list[tuple[int, str]],
    severity: dict[str, str],
    width: int,
    caption: str,
    label_w: int,
    right: int,
) -> Markup:
    """A bar per rule; its label left of it, or above it when there is no room (label_w 0)."""
    above = label_w == 0
    row_h = 34 if above else 22
    plot_w = width - label_w - right
    top = max([n for n, _ in found] + [1])
    body = []
    for i, (n, rid) in enumerate(found):
        y = i * row_h
        bar_y = y + (16 if above else 4)
        w = n / top * plot_w
        sev = severity.get(rid, "info")
        if above:
            body.append(_label(0, y + 12, rid, width, "rlabel"))
        else:
            body.append(_label(label_w - 8, y + 15, rid, label_w - 8, "rlabel", "end"))
        body.append(
            f'<rect x="{label_w}" y="{bar_y}" width="{max(w, 1.5):.1f}" height="14" '
            f'fill="{SEVERITY_COLOURS.get(sev, "#777")}"/>'
        )
        body.append(_text(label_w + w + 6, bar_y + 11, f"{n:,} · {sev}", "muted"))
    if not found:
        body.append(_text(label_w, 15, "no rule found anything", "muted"))
    return _svg(width, max(1, len(found)) * row_h + 4, caption, body)


def _shade(fraction: float) -> str:
    """White to the finding red, by the share of the largest cell."""
    r0, g0, b0 = 0xFF, 0xFF, 0xFF
    r1, g1, b1 = 0xC6, 0x28, 0x28
    f = 0.12 + 0.88 * fraction
    return "#" + "".join(f"{round(a + (b - a) * f):02x}" for a, b in ((r0, r1), (g0, g1), (b0, b1)))


def findings_per_variant(model: Report) -> Chart | None:
    """A matrix: variant / agent model by rule, cells shaded by finding count, reward at right."""
    rows = model["summary"]["by_variant"]
    if not rows:
        return None
    rules = sorted({rule for r in rows for rule in r["findings_by_rule"]})
    top = max([n for r in rows for n in r["findings_by_rule"].values()] + [1])
    sentences = [
        agree(
            f"{r['variant']} / {r['agent_model']}: {r['findings']} findings in "
            f"{r['trajectories_with_findings']} of {r['trajectories']} trajectories"
            + (f", mean reward {r['mean_reward']:.2f}" if r["mean_reward"] is not None else "")
        )
        for r in rows
    ]
    caption = "Findings per variant and agent model, by rule: " + "; ".join(sentences) + "."
    caption = agree(caption)
    return Chart(_matrix(rows, rules, top, caption), caption, _matrix_narrow(rows, top, caption))


def _matrix(rows: list[Any], rules: list[str], top: int, caption: str) -> Markup:
    label_w, row_h, head_h, tail_w = 250, 28, 22, 230
    col_w = min(130.0, (WIDTH - label_w - tail_w) / max(1, len(rules)))
    body = []
    for j, rule in enumerate(rules):
        x = label_w + j * col_w + col_w / 2
        body.append(_label(x, 14, rule, col_w - 4, "axis", "middle"))
    x_tail = label_w + len(rules) * col_w + 12
    body.append(_text(x_tail, 14, "with findings", "axis"))
    body.append(_text(x_tail + 110, 14, "mean reward", "axis"))
    for i, r in enumerate(rows):
        y = head_h + i * row_h
        body.append(_label(label_w - 8, y + 12, r["variant"], label_w - 8, "rlabel", "end"))
        body.append(_label(label_w - 8, y + 24, r["agent_model"], label_w - 8, "axis", "end"))
        for j, rule in enumerate(rules):
            n = r["findings_by_rule"].get(rule, 0)
            x = label_w + j * col_w
            fill = _shade(n / top) if n else "#f5f6f8"
            body.append(
                f'<rect x="{x + 1:.1f}" y="{y + 1}" width="{col_w - 2:.1f}" height="{row_h - 2}" '
                f'fill="{fill}"/>'
            )
            cls = "cellnum light" if n and n / top > 0.45 else "cellnum"
            body.append(_text(x + col_w / 2, y + 18, f"{n:,}" if n else "·", cls, "middle"))
        body.append(
            _text(x_tail, y + 18, f"{r['trajectories_with_findings']} of {r['trajectories']}", "")
        )
        if r["mean_reward"] is not None:
            body.append(_text(x_tail + 110, y + 18, f"{r['mean_reward']:.2f}", ""))
    return _svg(WIDTH, head_h + len(rows) * row_h + 4, caption, body)


def _matrix_narrow(rows: list[Any], top: int, caption: str) -> Markup:
    """The matrix for a phone: a block per variant (its name, its counts), then a row per rule
    that found something there, shaded as the matrix cells are."""
    label_w = 200
    body = []
    y = 0
    for r in rows:
        body.append(_label(0, y + 12, f"{r['variant']} · {r['agent_model']}", NARROW, "rlabel"))
        tail = f"with findings: {r['trajectories_with_findings']} of {r['trajectories']}"
        if r["mean_reward"] is not None:
            tail += f" · mean reward {r['mean_reward']:.2f}"
        body.append(_text(0, y + 26, tail, "axis"))
        y += 32
        for rule, n in sorted(r["findings_by_rule"].items(), key=lambda x: (-x[1], x[0])):
            if not n:
                continue
            body.append(_label(label_w - 8, y + 13, rule, label_w - 8, "axis", "end"))
            cell_w = NARROW - label_w
            body.append(
                f'<rect x="{label_w}" y="{y + 1}" width="{cell_w}" height="16" '
                f'fill="{_shade(n / top)}"/>'
            )
            cls = "cellnum light" if n / top > 0.45 else "cellnum"
            body.append(_text(label_w + cell_w / 2, y + 14, f"{n:,}", cls, "middle"))
            y += 18
        y += 10
    return _svg(NARROW, max(y, 1), caption, body)


# --- timeline per trajectory


def timeline(
    trajectories: list[dict[str, Any]], turn_rows: dict[str, list[dict[str, Any]]]
) -> Chart | None:
    """One row per trajectory, one cell per turn coloured by role; turns with findings in red.

    `trajectories` come in explorer order with their handle `k`; each cell links to its turn.
    """
    shown = trajectories[:MAX_TIMELINE_ROWS]
    if not shown:
        return None
    flagged_rows = sum(1 for t in shown if t["nf"])
    caption = (
        agree(f"Timeline of {len(shown)} of {len(trajectories)} trajectories")
        + " (most findings first): "
        f"{flagged_rows} with findings. Cells are turns coloured by role; red marks a turn with a "
        "finding. Click a cell to open the turn."
    )
    caption = agree(caption)
    return Chart(
        _timeline_svg(shown, turn_rows, WIDTH, caption),
        caption,
        _timeline_svg(shown, turn_rows, NARROW, caption),
    )


def _timeline_svg(
    shown: list[dict[str, Any]],
    turn_rows: dict[str, list[dict[str, Any]]],
    width: int,
    caption: str,
) -> Markup:
    """A row per trajectory, its label left of its cells (above them on a narrow drawing)."""
    above = width < WIDTH
    label_w, row_h, cells_y = (0, 30, 16) if above else (200, 16, 0)
    longest = max(len(turn_rows[t["id"]]) for t in shown) or 1
    cell = max(1.5, min(14.0, (width - label_w - 4) / longest))
    body = []
    for i, t in enumerate(shown):
        y = i * row_h + 4
        label = f"T{t['k']} · " + episode_label(t["task"], t["trial"], t["id"])
        if t["reward"] is not None:
            label += f" · reward {t['reward']:g}"
        text = (
            _label(0, y + 10, label, width, "rlabel")
            if above
            else _label(label_w - 8, y + 10, label, label_w - 8, "rlabel", "end")
        )
        body.append(f'<a href="#traj-{t["k"]}">{text}</a>')
        y += cells_y
        for j, u in enumerate(turn_rows[t["id"]]):
            x = label_w + j * cell
            fill = ROLE_COLOURS.get(u["role"], "#999")
            flagged = bool(u["rules"])
            title = f"T{t['k']} turn {u['turn_index']} · {u['role']}/{u['actor']}" + (
                " · " + ", ".join(u["rules"]) if flagged else ""
            )
            w = max(cell - (1 if cell > 3 else 0), 1)
            body.append(
                f'<a href="#turn-{t["k"]}-{u["turn_index"]}"><rect x="{x:.2f}" y="{y}" '
                f'width="{w:.2f}" height="11" fill="{fill}">'
                f"<title>{escape(title)}</title></rect>"
                + (
                    f'<rect x="{x:.2f}" y="{y + 12}" width="{w:.2f}" height="2.5" '
                    f'fill="{FINDING_COLOUR}"/>'
                    if flagged
                    else ""
                )
                + "</a>"
            )
    legend_y = len(shown) * row_h + 10
    x = float(label_w)
    for name, colour in [*ROLE_COLOURS.items(), ("finding", FINDING_COLOUR)]:
        body.append(f'<rect x="{x:.1f}" y="{legend_y}" width="10" height="10" fill="{colour}"/>')
        body.append(_text(x + 14, legend_y + 9, name, "axis"))
        x += 30 + 6.5 * len(name)
    return _svg(width, legend_y + 16, caption, body)
