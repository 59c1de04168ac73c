"""The Markdown summary: verdict, causes, fixes and validation plan, to paste into an issue or PR.

Model text is untrusted here too. Inline text is escaped so it can not become HTML, a link, an
image (which the viewer would fetch), a mention or block structure (a heading, list, quote or
table of its own); excerpts go into fenced code blocks whose fence is longer than any backtick
run inside them. Control and bidi characters are shown escaped (safe.visible), as on the
terminal. Secrets never get here: they are masked at ingest.
"""

from __future__ import annotations

import re

from forensics import linear
from forensics.report.render.labels import episode_label
from forensics.report.render.safe import visible
from forensics.report.types import Evidence, Report, cause_evidence

EXCERPT_CHARS = 400
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_SPACE = re.compile(r"\s+")
# Inline punctuation that can start emphasis, code, links or images, strike-through, math
# (GitHub renders $…$) or an escape; `|` splits a table row wherever the line sits. A `_`
# between two letters or digits can neither open nor close emphasis and stays readable
# (max_tokens); next to another `_` it can (`___`), so there it is escaped.
_MD_SPECIAL = re.compile(r"([\\`*\[\]~$|]|(?<![^\W_])_|_(?![^\W_]))")
# Block syntax a value could open where it starts a line or a list item's content (`1. {step}`,
# `- {keep}`, the indented line under a fix): an ATX heading, a bullet or ordered list item, a
# setext underline or a thematic break. Its marker is backslash-escaped (`--flag` or `#W123`
# open nothing and stay as they are); `>` and `<` are entities already, `*`, `_`, `` ` ``, `~`
# and `|` escaped everywhere.
_BLOCK_START = re.compile(
    r"^ ?(?:(#)#{0,5}(?=\s|$)|([-+])(?=\s|$)|\d{1,9}([.)])(?=\s|$)|([-=])[-= ]*$)"
)
# GitHub turns some text into links by itself, outside any link syntax (GFM "extended
# autolinks": http://, https://, ftp:// and www. addresses, e-mail addresses, mailto: and xmpp:).
# A word of log text that holds `://`, `//host`, `www.` or `x@y.z` goes into a code
# span instead: GitHub links nothing inside code, the address stays intact to copy, and the
# reader sees it verbatim. Defanging (`https[:]//`) would also work but garbles what the log
# said. An autolink never spans whitespace, so the whole word is taken, less the punctuation
# around it that can not begin or end one.
# RE2 (with Python's \w and \s): under `re`, `\S@\S*` ran to the word's end from every `@` of
# a long word (quadratic).
_NOT_SPACE = f"[^{linear.SPACE_CHARS}]"
_LINKISH = linear.compile(
    rf"(?i)://|//{linear.WORD}|www\.|{_NOT_SPACE}@{_NOT_SPACE}*\.{linear.WORD}"
)
_WORD = re.compile(r"\S+")
_OPENERS = "([{<\"'"
_CLOSERS = ".,:;!?)]}>\"'*_~"


def _escape(text: str) -> str:
    """Prose (already one line, no link-like words) as literal Markdown text."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    # A zero-width space after @ keeps a copied log line from mentioning a GitHub user.
    return text.replace("@", "@\u200b")


def _block_safe(text: str) -> str:
    """A leading block marker escaped: `# x` -> `\\# x`, `- x` -> `\\- x`, `1. x` -> `1\\. x`."""
    m = _BLOCK_START.match(text)
    if not m:
        return text
    mark = next(m.start(g) for g in range(1, 5) if m.group(g))
    return f"{text[:mark]}\\{text[mark:]}"


def _links_apart(text: str) -> list[tuple[str, str]]:
    """Prose split into ("prose", text) and ("link", word) runs."""
    runs, pos = [], 0
    for m in _WORD.finditer(text):
        word = m.group()
        if not _LINKISH.search(word):
            continue
        lead = len(word) - len(word.lstrip(_OPENERS))
        core = word[lead:].rstrip(_CLOSERS)
        if not _LINKISH.search(core):
            lead, core = 0, word
        at = m.start() + lead
        runs += [("prose", text[pos:at]), ("link", core)]
        pos = at + len(core)
    runs.append(("prose", text[pos:]))
    return runs


def _runs(text: str, spans: bool) -> list[tuple[str, str]]:
    """text as prose, code (its `backticked` parts, when spans) and link runs. A link run that
    touches a code run is merged with it: two code spans that touch parse as one, with the
    wrong fence, and would let the rest out as Markdown."""
    runs, pos = [], 0
    for m in _CODE_SPAN.finditer(text) if spans else ():
        runs += _links_apart(text[pos : m.start()])
        runs.append(("code", m.group(1)))
        pos = m.end()
    runs += _links_apart(text[pos:])
    merged: list[tuple[str, str]] = []
    for kind, raw in runs:
        if not raw:
            continue
        if merged and "prose" not in (kind, merged[-1][0]) and "link" in (kind, merged[-1][0]):
            merged[-1] = ("link", merged[-1][1] + raw)
        else:
            merged.append((kind, raw))
    return merged


def _render(runs: list[tuple[str, str]], in_table: bool) -> str:
    out = []
    for i, (kind, raw) in enumerate(runs):
        if kind != "prose":
            out.append(_code(raw, in_table))
            continue
        text = _escape(visible(_SPACE.sub(" ", raw)))
        if i == 0:  # where the value starts, it may start a line: no block syntax
            text = _block_safe(text)
        out.append(text)
    return "".join(out)


def _plain(text: object, in_table: bool = False) -> str:
    """Log text as literal Markdown text (link-like words as code)."""
    return _render(_runs(str(text).strip(), spans=False), in_table)


def _code(text: object, in_table: bool = False) -> str:
    text = visible(" ".join(str(text).split()))
    if not text:
        return ""  # a lone fence would pair with a later one and swallow what lies between
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
    # Edge whitespace would keep `**{action}**` from closing its emphasis.
    return _render(_runs(text.strip(), spans=True), in_table=False)


def fenced(text: str, indent: str = "") -> str:
    # Line breaks and tabs are the excerpt's layout; every other control character is shown.
    text = visible(text, keep="\n\r\t")
    ticks = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, ticks + 1)
    lines = [f"{fence}text", *text.splitlines(), fence]
    return "\n".join(indent + line if line else line for line in lines)


def _excerpt(ev: Evidence) -> str:
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


def _verdict(m: Report) -> list[str]:
    s, p = m["summary"], m["primary"]
    if not p:
        text = f"**No findings** in {s['trajectories']:,} trajectories."
        cover = m["coverage"]
        if cover["not_run"]:
            rules = cover["not_run"]
            text += (
                f" {len(rules)} rule(s) could not run on this data "
                f"({', '.join(_code(r) for r in rules)}): their 0 is not a pass."
            )
        if cover["partly_run"]:
            rules = cover["partly_run"]
            text += (
                f" {len(rules)} rule(s) could not run on some of the files "
                f"({', '.join(_code(r) for r in rules)}): their 0 there is not a pass."
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


def _headline(m: Report) -> list[str]:
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
    if len(s["runs"]) > 1:
        lines += [
            "",
            "| run | domain | started | agent model | variant | trajectories | findings | "
            "mean reward |",
            "|---|---|---|---|---|---:|---:|---:|",
        ]
        for r in s["runs"]:
            cells = [_code(r[k] or "", True) for k in ("run_id", "domain", "started")]
            cells += [_code(r[k] or "", True) for k in ("agent_model", "variant")]
            lines.append(
                f"| {' | '.join(cells)} | {r['trajectories']} | {r['findings']:,} | "
                f"{_reward(r['mean_reward'])} |"
            )
    if s["disagreements"]:
        lines.append("")
        lines += [
            f"- sources disagree: {_code(d['trajectory_id'], True)}: {inline(d['disagreements'])}"
            for d in s["disagreements"]
        ]
    return lines


def _score_split(m: Report) -> list[str]:
    """Is this score about the model: the failed episodes by whose failure they were."""
    split = m.get("score_split")
    if not split:
        return []
    lines = ["## Is this score about the model?", "", inline(split["text"]), ""]
    if split["penalised"]:
        lines += [
            "| failed or penalised episodes | episodes | reward lost | share | causes |",
            "|---|---:|---:|---:|---|",
        ]
        for g in split["groups"]:
            if g["episodes"]:
                causes = ", ".join(_code(c) for c in g["causes"]) or "—"
                lines.append(
                    f"| {g['label']} | {g['episodes']} | {g['reward_lost']:g} | "
                    f"{_pct(g['share'])} | {causes} |"
                )
        lines.append("")
    return lines


def _causes(m: Report) -> list[str]:
    lines = ["## Causes, ranked", ""]
    if not m["causes"]:
        return [*lines, "No findings: nothing to diagnose.", ""]
    quoted = cause_evidence(m)
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
        if quoted[c["id"]]:
            lines += ["", "Evidence:", ""]
            for ev in quoted[c["id"]]:
                where = f"{ev['source']['path']}:{ev['source']['line']}"
                episode = episode_label(ev["task_id"], None, ev["trajectory_id"])
                if ev["turn_index"] is not None:
                    episode += f", turn {ev['turn_index']}"
                lines.append(
                    f"- {_code(where)} — {inline(episode)} ({inline(ev['actor'] or 'episode')}), "
                    f"{_code(ev['rule'])}: {inline(ev['message'])}"
                )
                lines += ["", fenced(_excerpt(ev), "  "), ""]
        lines.append("")
    return lines


def _fixes(m: Report) -> list[str]:
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


def _validation(m: Report) -> list[str]:
    lines = ["## Validation plan", ""]
    if not m["validation"] and not m["validation_checks"]:
        return [*lines, "Nothing to validate.", ""]
    lines += [f"{i}. {inline(step)}" for i, step in enumerate(m["validation"], 1)]
    if m["validation_checks"]:
        lines += ["", "The next scan must show:", ""]
        for v in m["validation_checks"]:
            line = f"- [ ] {_code(v['rule'])}: {v['now']:,} → {v['target']}"
            if v["not_checked_for_lack_of"]:
                missing = _plain(" or ".join(v["not_checked_for_lack_of"]))
                n, of = v["not_checked_files"], v["of_files"]
                if n < of:
                    line += f" (not checked on {n} of {of} files: no {missing}; a 0 there proves "
                    line += "nothing)"
                else:
                    where = "any input" if of == 1 else f"any of the {of} files"
                    line += f" (not checked on {where}: no {missing}; its 0 proves nothing)"
            lines.append(line)
    lines.append("")
    return lines


def render(model: Report) -> str:
    """The report model as Markdown: verdict, causes, fixes, validation plan."""
    s = model["summary"]
    title = model["primary"]["title"] if model["primary"] else "no findings"
    lines = [f"# forensics: {inline(title)}", ""]
    lines += [*_verdict(model), "", *_headline(model), ""]
    lines += _score_split(model)
    lines += _causes(model) + _fixes(model) + _validation(model)
    formats = ", ".join(f"{n} {_code(f)}" for f, n in s["files_by_format"].items())
    lines.append(
        f"<sub>forensics · {s['files']} file(s) ({formats}) · {s['rejects']:,} rejects · "
        "every finding with file and line is in the HTML report and the JSON output</sub>"
    )
    return "\n".join(lines) + "\n"
