"""The Markdown summary: verdict, causes, fixes and validation plan, to paste into an issue or PR.

Model text is untrusted here too. Inline text is escaped so it can not become HTML, a link, an
image (which the viewer would fetch) or a mention; excerpts go into fenced code blocks whose
fence is longer than any backtick run inside them. Secrets are masked once more at the end.
"""

from __future__ import annotations

import re
from typing import Any

EXCERPT_CHARS = 400
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_SPACE = re.compile(r"\s+")
# Inline punctuation that can start emphasis, code, links or images, strike-through or an
# escape. Text is collapsed to one line after our own prefix, so line-start syntax (#, -, >, 1.)
# never applies; `_` inside a word can not open emphasis and stays readable.
_MD_SPECIAL = re.compile(r"([\\`*\[\]~]|(?<!\w)_|_(?!\w))")


def _plain(text: str, in_table: bool = False) -> str:
    text = _SPACE.sub(" ", str(text))
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    if in_table:
        text = text.replace("|", "\\|")
    # A zero-width space after @ keeps a copied log line from mentioning a GitHub user.
    return text.replace("@", "@\u200b")


def _code(text: str, in_table: bool = False) -> str:
    text = " ".join(str(text).split())
    if in_table:
        text = text.replace("|", "\\|")
    ticks = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (ticks + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def inline(text: str | None) -> str:
    """Escape prose; keep its `backticked` parts (flags, commands) as code spans."""
    if not text:
        return ""
    out, pos = [], 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_plain(text[pos : m.start()]))
        out.append(_code(m.group(1)))
        pos = m.end()
    out.append(_plain(text[pos:]))
    return "".join(out)


def fenced(text: str, indent: str = "") -> str:
    ticks = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, ticks + 1)
    lines = [f"{fence}text", *text.splitlines(), fence]
    return "\n".join(indent + line if line else line for line in lines)


def _excerpt(ev: dict[str, Any]) -> str:
    head = ev.get("turn_head") or ""
    tail = ev["evidence"] or ""
    if head:
        head = head[:EXCERPT_CHARS]
        tail = tail.lstrip("… ")
        return f"{head}\n[… {ev.get('turn_chars', 0):,} chars in all …]\n{tail[-EXCERPT_CHARS:]}"
    return tail[:EXCERPT_CHARS]


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def _reward(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def _verdict(m: dict[str, Any]) -> list[str]:
    s, p = m["summary"], m["primary"]
    if not p:
        text = f"**No findings** in {s['trajectories']:,} trajectories."
        if m["not_checked"]:
            rules = sorted({n["rule"] for n in m["not_checked"]})
            text += (
                f" {len(rules)} rule(s) could not run on this data "
                f"({', '.join(_code(r) for r in rules)}): their 0 is not a pass."
            )
        return [text]
    text = (
        f"**Primary cause: {inline(p['title'])}.** It touches {p['trajectories']} of "
        f"{p['of_trajectories']} trajectories ({_pct(p['share'])}) with {p['findings']:,} findings"
    )
    if p["reward_lost_share"] is not None:
        text += (
            f"; those trajectories lost {p['reward_lost']:g} of the {s['reward_lost']:g} reward "
            f"lost in this scan ({_pct(p['reward_lost_share'])})"
        )
    text += "."
    if len(m["causes"]) > 1:
        also = "; ".join(
            f"{inline(c['title'].lower())} ({c['trajectories']} trajectories)"
            for c in m["causes"][1:4]
        )
        more = len(m["causes"]) - 4
        text += f" Also: {also}" + (f"; and {more} more." if more > 0 else ".")
    return [text]


def _headline(m: dict[str, Any]) -> list[str]:
    s = m["summary"]
    lines = [
        "| trajectories | turns | findings | mean reward | rejects |",
        "|---:|---:|---:|---:|---:|",
        f"| {s['trajectories']:,} | {s['turns']:,} | {s['findings']:,} in "
        f"{s['trajectories_with_findings']} trajectories | {_reward(s['mean_reward'])} | "
        f"{s['rejects']:,} |",
    ]
    if s["by_variant"]:
        lines += [
            "",
            "| variant | agent model | trajectories | with findings | findings | mean reward |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for v in s["by_variant"]:
            lines.append(
                f"| {_code(v['variant'], True)} | {_code(v['agent_model'], True)} | "
                f"{v['trajectories']} | {v['trajectories_with_findings']} | {v['findings']:,} | "
                f"{_reward(v['mean_reward'])} |"
            )
    return lines


def _causes(m: dict[str, Any]) -> list[str]:
    lines = ["## Causes, ranked", ""]
    if not m["causes"]:
        return [*lines, "No findings: nothing to diagnose.", ""]
    for c in m["causes"]:
        lines += [
            f"### {c['rank']}. {inline(c['title'])}",
            "",
            f"*{c['severity']} severity, {c['confidence']} evidence — {c['trajectories']} of "
            f"{m['summary']['trajectories']} trajectories, {c['findings']:,} findings, reward "
            f"lost {c['reward_lost']:g}; rules {', '.join(_code(r) for r in c['rules'])}*",
            "",
            f"**Why rank {c['rank']}:** {inline(c['why_ranked'])}.",
        ]
        if c["explains_detail"]:
            explained = "; ".join(
                f"{_code(e['rule'])} ({e['findings']} findings in {e['trajectories']} trajectories)"
                for e in c["explains_detail"]
            )
            lines += ["", f"**Explains downstream:** {explained}."]
        if c["evidence"]:
            lines += ["", "Evidence:", ""]
            for ev in c["evidence"]:
                where = f"{ev['source']['path']}:{ev['source']['line']}"
                lines.append(
                    f"- {_code(where)} — task {inline(str(ev['task_id']))}, turn "
                    f"{ev['turn_index']} ({inline(ev['actor'])}), {_code(ev['rule'])}: "
                    f"{inline(ev['message'])}"
                )
                lines += ["", fenced(_excerpt(ev), "  "), ""]
        lines.append("")
    return lines


def _fixes(m: dict[str, Any]) -> list[str]:
    lines = ["## Fixes, in priority order", ""]
    if not m["fix_plan"]:
        lines += ["Nothing to fix.", ""]
    for f in m["fix_plan"]:
        lines.append(f"{f['n']}. **{inline(f['action'])}** (cause {f['cause_rank']})  ")
        lines.append(f"   {inline(f['detail'])}")
    if m["fix_plan"]:
        lines.append("")
    if m["parameters"]:
        lines += [
            "**Parameters, from the data**",
            "",
            "| parameter | value | cause |",
            "|---|---|---|",
        ]
        for p in m["parameters"]:
            label, value = _plain(p["label"], True), _code(p["value"], True)
            lines.append(f"| {label} | {value} | {p['cause_rank'] or ''} |")
        lines.append("")
    if m["keep"]:
        lines += ["**Keep as it is**", ""]
        lines += [f"- {inline(k)}" for k in m["keep"]]
        lines.append("")
    return lines


def _validation(m: dict[str, Any]) -> list[str]:
    lines = ["## Validation plan", ""]
    if not m["validation"] and not m["validation_checks"]:
        return [*lines, "Nothing to validate.", ""]
    lines += [f"{i}. {inline(step)}" for i, step in enumerate(m["validation"], 1)]
    if m["validation_checks"]:
        lines += ["", "The next scan must show:", ""]
        for v in m["validation_checks"]:
            line = f"- [ ] {_code(v['rule'])}: {v['now']:,} → {v['target']}"
            if v["not_checked_for_lack_of"]:
                missing = " or ".join(v["not_checked_for_lack_of"])
                line += f" (not checked on some input: no {missing}; a 0 there proves nothing)"
            lines.append(line)
    lines.append("")
    return lines


def render(model: dict[str, Any]) -> str:
    """The report model as Markdown: verdict, causes, fixes, validation plan."""
    s = model["summary"]
    title = model["primary"]["title"] if model["primary"] else "no findings"
    lines = [f"# forensics: {inline(title)}", ""]
    lines += [*_verdict(model), "", *_headline(model), ""]
    lines += _causes(model) + _fixes(model) + _validation(model)
    formats = ", ".join(f"{n} {_code(f)}" for f, n in s["files_by_format"].items())
    lines.append(
        f"<sub>forensics · {s['files']} file(s) ({formats}) · {s['rejects']:,} rejects · "
        "every finding with file and line is in the HTML report and the JSON output</sub>"
    )
    return "\n".join(lines) + "\n"
