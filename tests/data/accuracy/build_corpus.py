"""Build the labelled accuracy corpus: tests/data/accuracy/corpus.jsonl.gz.

    python tests/data/accuracy/build_corpus.py        # rewrites corpus.jsonl.gz (deterministic)

Every case is one trajectory of real turns, read by forensics' own ingesters from the real runs
in sources/ and ../realdata/ (provenance in README.md):

- control: a real trajectory as it was recorded. Healthy ones expect no finding; the real
  defects some of them carry (qwen2.5-7b's empty and rejected messages, tool calls written as
  JSON text, the API captures' filter verdicts and MAX_TOKENS answers, …) are labelled by
  independent checks on the raw turns below (REAL_LABELS and _real_labels), not by the rules.
- planted: a real trajectory, cut after the turn a defect is planted into. The plant rewrites
  one real turn into the shape a failure report documents (failure catalogue §1–§5), built
  from that turn's own content and tool calls; a few plants add turns (retries, repeated
  calls, a simulator's stop message). Near misses are planted the same way and expect nothing
  from the rule they resemble.

`expect` lists every finding the full rule pack must produce on the case, as [rule, turn]:
the labels are the truth for all rules, so a rule that fires where it should not counts as a
false positive wherever it happens. `format` (tool-markup plants) is the parser the finding
must name.
"""

from __future__ import annotations

import copy
import gzip
import itertools
import json
import random
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

import polars as pl  # noqa: E402

from forensics import ingest, markers  # noqa: E402
from forensics.ingest.records import normalise_finish_reason  # noqa: E402

# Gzipped (mtime 0, so the bytes are stable): the text is 3 MB of repetitive JSON.
CORPUS = HERE / "corpus.jsonl.gz"
SOURCES = [
    ROOT / "tests/data/realdata/tool-calling-gpt-4.1-mini-retail.subset12.json",
    ROOT / "tests/data/realdata/historical_gpt-4o-airline.first12.json",
    HERE / "sources/tau2_telecom_gpt-4o.subset5.json",
    HERE / "sources/tau2_airline_gpt-4.1.subset6.json",
    HERE / "sources/tau2_telecom_solo_gpt-4.1.subset3.json",
    HERE / "sources/tau2_airline_qwen2.5-7b.subset7.json",
    HERE / "sources/tau2_airline_toolorchestra_trimmed.subset2.json",
    HERE / "sources/api_extracted_interactions.jsonl",
]
# Columns the evaluator fills per case (identity and location of the corpus line).
HELPER = {"source_path", "source_line", "run_id", "trajectory_id", "task_id", "trial", "turn_index"}
# Long system prompts and tool outputs are cut: no rule reads them, and they would make the
# corpus several megabytes.
TRIM = {"system": 400, "tool": 1200}
# A planted case keeps this many turns before the planted one (and the system prompt): enough
# history for every turn-level rule, and a corpus of a few megabytes instead of dozens.
WINDOW = 10
# Each plant round picks this many substrate trajectories at random (seeded).
PER_ROUND = 10
SEED = 20240611


# --- reading the real runs ------------------------------------------------------------------


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def load(path: Path) -> list[dict[str, Any]]:
    """The trajectories of one source file, in file order, as {source, real_id, episode, turns}."""
    data = ingest.ingest([str(path)])
    turns = pl.from_arrow(data.turns).sort("trajectory_id", "turn_index")
    out = []
    for episode in pl.from_arrow(data.trajectories).sort("source_line").iter_rows(named=True):
        rows = []
        for row in turns.filter(pl.col("trajectory_id") == episode["trajectory_id"]).iter_rows(
            named=True
        ):
            turn = {k: v for k, v in row.items() if v is not None and k not in HELPER}
            limit = TRIM.get(turn.get("role", ""))
            text = turn.get("content")
            if limit and isinstance(text, str) and len(text) > limit:
                turn["content"] = text[:limit] + f" […{len(text) - limit} chars trimmed]"
            turn["real_line"] = row["source_line"]
            rows.append(turn)
        out.append(
            {
                "source": _rel(path),
                "real_id": episode["trajectory_id"],
                "episode": {
                    "reward": episode["reward"],
                    "termination_reason": episode["termination_reason"],
                    "agent_model": episode["agent_model"],
                    "user_model": episode["user_model"],
                    "source_format": episode["source_format"],
                    "labels": {x["key"]: x["value"] for x in episode["labels"] or []},
                },
                "turns": rows,
            }
        )
    return out


def implied(traj: dict[str, Any]) -> set[tuple[str, int]]:
    """Findings the planted or real shape implies by the definition of the crisp hard rules.

    A plant aimed at one rule often also fits another rule's definition (an empty answer in a
    tau2 episode is one tau2 rejects; a turn cut at the cap is a max-tokens turn): the labels
    must hold every finding that is true of the case, whichever plant made it.
    """
    out = set()
    tau2 = (traj["episode"].get("source_format") or "").startswith("tau2")
    for i, t in enumerate(traj["turns"]):
        role, content = t.get("role"), t.get("content") or ""
        opened = len(re.findall(markers.OPEN_RE, content))
        closed = len(re.findall(markers.CLOSE_RE, content))
        visible = re.sub(markers.CLOSED_BLOCK_RE, "", content)
        visible = re.sub(markers.UNCLOSED_TAIL_RE, "", visible)
        visible = re.sub(markers.LEADING_TO_CLOSER_RE, "", visible, count=1).strip()
        finish = t.get("finish_reason") or normalise_finish_reason(t.get("finish_reason_raw"))
        calls = t.get("tool_calls") or []
        status = t.get("http_status")
        if role == "assistant" and opened > closed:
            out.add(("unclosed-think", i))
        if role in ("assistant", "user") and closed > 0:
            out.add(("reasoning-leak", i))
        cap, used = t.get("max_output_tokens"), t.get("output_tokens")
        if role == "assistant" and (
            finish == "max_tokens"
            or (finish is None and cap is not None and used is not None and used >= cap)
        ):
            out.add(("max-tokens", i))
        if (
            role == "assistant"
            and finish == "stop"
            and t.get("tools_attached")
            and not calls
            and not visible
        ):
            out.add(("stop-no-tool-calls", i))
        if (
            tau2
            and role == "assistant"
            and t.get("actor") == "agent"
            and not content.strip()
            and not calls
            and (status is None or 200 <= status < 300)
        ):
            out.add(("message-format-violation", i))
    out |= _unanswered_calls(traj["turns"])
    return out


def _unanswered_calls(turns: list[dict[str, Any]]) -> set[tuple[str, int]]:
    """Turns whose calls (with ids) get no result before the next assistant turn, in a
    conversation whose results carry call ids (a plant that copies a turn with parallel calls
    and only the first result, as the recorded tau2 run shows them, makes one)."""
    if not any(t.get("role") == "tool" and t.get("tool_call_id") for t in turns):
        return set()
    assistants = [i for i, t in enumerate(turns) if t.get("role") == "assistant"]
    out = set()
    for i, j in itertools.pairwise(assistants):
        ids = {c.get("id") for c in turns[i].get("tool_calls") or [] if c.get("id")}
        answered = {t.get("tool_call_id") for t in turns[i + 1 : j] if t.get("role") == "tool"}
        if ids - answered:
            out.add(("tool-call-ids", i))
    return out


def case(
    kind: str,
    name: str,
    traj: dict[str, Any],
    expect,
    plant: str = "",
    focus: int | None = None,
    **extra,
) -> dict:
    """One corpus line. Planted cases with a focus turn keep WINDOW turns of history before it."""
    turns = [{k: v for k, v in t.items() if k != "real_line"} for t in traj["turns"]]
    labels = set(map(tuple, expect)) | implied(traj)
    if focus is not None and traj["episode"]["reward"] is None and focus > WINDOW:
        keep = [i for i, t in enumerate(turns) if t.get("role") == "system" and i < focus - WINDOW]
        keep += list(range(focus - WINDOW, len(turns)))
        index = {old: new for new, old in enumerate(keep)}
        turns = [turns[i] for i in keep]
        labels = {(rule, index[i]) for rule, i in labels if i in index}
    episode = {k: v for k, v in traj["episode"].items() if v not in (None, {})}
    return {
        "case": name,
        "kind": kind,
        "source": f"{traj['source']}#{traj['real_id']}",
        "plant": plant,
        "trajectory": episode,
        "turns": turns,
        "expect": sorted([list(e) for e in labels]),
        **extra,
    }


# --- labels of the defects real runs carry (independent of the rules) -------------------------


def _text(turn: dict[str, Any]) -> str:
    return (turn.get("content") or "").strip()


def _real_labels(traj: dict[str, Any]) -> list[tuple[str, int]]:
    """Defects visible in the raw turns, checked directly (no forensics rule involved)."""
    labels = []
    episode = traj["episode"]
    tau2 = episode["source_format"].startswith("tau2")
    for i, t in enumerate(traj["turns"]):
        if t.get("role") != "assistant" or t.get("actor") != "agent":
            continue
        calls = t.get("tool_calls") or []
        empty = not _text(t) and not calls
        # tau2 keeps the harness' verdict on a message it rejected; a rejection the agent
        # corrected (valid stored message, episode went on) is history, not a defect.
        rejected = (t.get("error") or "").startswith("Invalid message format")
        last = i == max(j for j, x in enumerate(traj["turns"]) if x.get("actor") == "agent")
        ended = last and episode["termination_reason"] in ("agent_error", "user_error")
        if tau2 and (empty or (rejected and ((_text(t) and calls) or ended))):
            labels.append(("message-format-violation", i))
        if empty and t.get("finish_reason") == "stop" and t.get("tools_attached"):
            labels.append(("stop-no-tool-calls", i))
        # A call written out as JSON text ({"name": …, "arguments": …}) with no structured call.
        ok = t.get("http_status") is None or 200 <= t["http_status"] < 300
        if (
            ok
            and not calls
            and t.get("tools_attached")
            and re.search(r'\{\s*"name"\s*:\s*"\w+",\s*"arguments"', _text(t))
        ):
            labels.append(("tool-markup-leak", i))
    return labels


# Real defects that need reading, by (source, real trajectory id, real line of the turn): what
# the record shows, checked by hand against the raw file.
API = "tests/data/accuracy/sources/api_extracted_interactions.jsonl"
QWEN = "tests/data/accuracy/sources/tau2_airline_qwen2.5-7b.subset7.json"
AIRLINE = "tests/data/accuracy/sources/tau2_airline_gpt-4.1.subset6.json"
REAL_LINE_LABELS: dict[tuple[str, int], list[str]] = {
    # Vertex Model Armor blocked the prompt / the response: filter verdicts.
    (API, 5): ["content-filtered"],
    (API, 6): ["content-filtered"],
    # gemini-2.5-flash maxOutputTokens 5: partial text at the cap.
    (API, 7): ["max-tokens"],
    # gemini-2.5-pro maxOutputTokens 5: thoughts took the budget, no parts came back.
    (API, 8): ["max-tokens", "thinking-budget-exhausted"],
    (API, 9): ["content-filtered"],
    # gemini-3-flash called an undeclared function: UNEXPECTED_TOOL_CALL.
    (API, 16): ["malformed-tool-call"],
    # DeepSeek-R1 via HF router, max_tokens 100: cut inside its open <think>.
    (API, 18): ["max-tokens", "thinking-budget-exhausted", "unclosed-think"],
    # OpenRouter stream: 11 reasoning tokens over a cap of 10, then an error object in the stream.
    (API, 21): ["max-tokens", "thinking-budget-exhausted", "http-error"],
    # Groq 400 tool_use_failed: the generated call failed schema validation.
    (API, 24): ["http-error", "malformed-tool-call"],
}
# Heuristic rules on real tau2 runs, by (source, real id suffix, turn index): read and judged.
REAL_TURN_LABELS: dict[tuple[str, str, int], list[str]] = {
    # Both: the simulator answers the agent's offer of a transfer with "(Yes,) please transfer
    # me … ###TRANSFER###" before any transfer call was made; reward 0.
    (QWEN, "task-21/trial-0", 21): ["user-sim-early-stop"],
    # The simulator says "Yes, please transfer me … ###TRANSFER###" to the agent's offer, before
    # any transfer call; reward 0.
    (AIRLINE, "task-26/trial-0", 18): ["user-sim-early-stop"],
}


def real_expect(traj: dict[str, Any]) -> list[tuple[str, int]]:
    labels = _real_labels(traj)
    for i, t in enumerate(traj["turns"]):
        for rule in REAL_LINE_LABELS.get((traj["source"], t["real_line"]), []):
            if t.get("role") == "assistant":
                labels.append((rule, i))
        for (source, suffix, turn), rules in REAL_TURN_LABELS.items():
            if source == traj["source"] and traj["real_id"].endswith(suffix) and turn == i:
                labels.extend((rule, i) for rule in rules)
    return labels


# --- plant helpers --------------------------------------------------------------------------


def agent_turns(traj, calls: bool | None = None, text: bool | None = None) -> list[int]:
    out = []
    for i, t in enumerate(traj["turns"]):
        if t.get("actor") != "agent" or t.get("role") != "assistant":
            continue
        if calls is not None and bool(t.get("tool_calls")) != calls:
            continue
        if text is not None and bool(_text(t)) != text:
            continue
        out.append(i)
    return out


def cut(traj: dict[str, Any], k: int, reward: Any = None) -> dict[str, Any]:
    """A copy of traj ending at turn k; the episode's reward no longer applies (None)."""
    out = copy.deepcopy(traj)
    out["turns"] = out["turns"][: k + 1]
    out["episode"]["reward"] = reward
    out["episode"]["termination_reason"] = None
    return out


def reply(turn: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """The turn rewritten as a model response: no calls, no usage unless given."""
    keep = {
        k: turn[k] for k in ("role", "actor", "model", "endpoint", "tools_attached") if k in turn
    }
    keep.setdefault("tools_attached", True)
    keep.update({"content": None, "tool_calls": []})
    keep.update(fields)
    return {k: v for k, v in keep.items() if v is not None or k == "content"}


def args_of(call: dict[str, Any]) -> dict[str, Any]:
    try:
        value = json.loads(call.get("arguments") or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def previous_user(traj, k) -> str:
    for t in reversed(traj["turns"][:k]):
        if t.get("actor") == "user_sim" and _text(t):
            return _text(t)
    return "the request"


def thinking(traj, k, rng: random.Random, words: int) -> str:
    """A reasoning monologue about the real turn: its user message and its own reply or call."""
    user = previous_user(traj, k)[:220]
    turn = traj["turns"][k]
    calls = turn.get("tool_calls") or []
    plan = (
        f"I should call {calls[0]['name']} with {calls[0].get('arguments')}."
        if calls
        else f"I will answer: {_text(turn)[:300]}"
    )
    text = (
        f"Okay, the user said: {user} Let me think about what the policy requires here. "
        f"First I need to make sure the user is authenticated and that the request is allowed. "
        f"{plan} Before that, let me double-check the details of the request and whether any "
        f"confirmation is needed from the user, since write actions need an explicit yes."
    )
    tokens = text.split(" ")
    return " ".join(tokens[: min(len(tokens), words + rng.randint(0, 10))])


# --- tool-call markup per parser family (catalogue §1.2 shapes, filled with the real call) ----


def _kv(args: dict[str, Any]) -> list[tuple[str, str]]:
    return [(k, v if isinstance(v, str) else json.dumps(v)) for k, v in args.items()]


def render(fmt: str, name: str, args: dict[str, Any]) -> str:
    js = json.dumps(args)
    if fmt == "hermes":
        return f'<tool_call>\n{{"name": "{name}", "arguments": {js}}}\n</tool_call>'
    if fmt == "qwen3_coder":
        params = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in _kv(args))
        return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"
    if fmt == "glm45":
        pairs = "".join(
            f"<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n" for k, v in _kv(args)
        )
        return f"<tool_call>{name}\n{pairs}</tool_call>"
    if fmt == "glm47":
        pairs = "".join(f"<arg_key>{k}</arg_key><arg_value>{v}</arg_value>" for k, v in _kv(args))
        return f"<tool_call>{name}{pairs}</tool_call>"
    if fmt == "deepseek_v3":
        return (
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>"
            f"{name}\n```json\n{js}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        )
    if fmt == "deepseek_v31":
        return (
            f"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{js}"
            "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        )
    if fmt == "kimi_k2":
        return (
            f"<|tool_calls_section_begin|> <|tool_call_begin|> functions.{name}:0 "
            f"<|tool_call_argument_begin|> {js} <|tool_call_end|> <|tool_calls_section_end|>"
        )
    if fmt == "mistral":
        return f'[TOOL_CALLS] [{{"name": "{name}", "arguments": {js}}}]'
    if fmt in ("xlam", "mistral_stripped"):
        return f'[{{"name": "{name}", "arguments": {js}}}]'
    if fmt == "llama3_json":
        return f'{{"name": "{name}", "parameters": {js}}}'
    if fmt == "pythonic":
        params = ", ".join(f"{k}={v!r}" for k, v in args.items())
        return f"[{name}({params})]"
    if fmt == "minimax_m2":
        params = "".join(f'    <parameter name="{k}">{v}</parameter>\n' for k, v in _kv(args))
        return (
            f'<minimax:tool_call>\n  <invoke name="{name}">\n{params}  </invoke>\n'
            "</minimax:tool_call>"
        )
    if fmt == "openai":
        return f"<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{js}<|call|>"
    if fmt == "granite":
        return f'<|tool_call|>[{{"name": "{name}", "arguments": {js}}}]'
    if fmt == "unwrapped_json":
        return f'```json\n{{"name": "{name}", "arguments": {js}}}\n```'
    raise ValueError(fmt)


# The model each format comes from (the id settles xlam vs mistral).
FORMAT_MODELS = {
    "hermes": "Qwen/Qwen2.5-7B-Instruct",
    "qwen3_coder": "Qwen/Qwen3-Coder-30B-A3B-Instruct",
    "glm45": "zai-org/GLM-4.5-Air",
    "glm47": "zai-org/GLM-4.7",
    "deepseek_v3": "deepseek-ai/DeepSeek-V3-0324",
    "deepseek_v31": "deepseek-ai/DeepSeek-V3.1",
    "kimi_k2": "moonshotai/Kimi-K2-Instruct",
    "mistral": "mistralai/Mistral-7B-Instruct-v0.3",
    "mistral_stripped": "mistralai/Mistral-Small-3.1-24B-Instruct-2503",
    "xlam": "Salesforce/Llama-xLAM-2-8b-fc-r",
    "llama3_json": "meta-llama/Llama-3.1-8B-Instruct",
    "pythonic": "meta-llama/Llama-3.2-3B-Instruct",
    "minimax_m2": "MiniMaxAI/MiniMax-M2",
    "openai": "openai/gpt-oss-20b",
    "granite": "ibm-granite/granite-3.0-8b-instruct",
    "unwrapped_json": "Qwen/Qwen2.5-Coder-7B-Instruct",
}
EXPECTED_PARSER = {"mistral_stripped": "mistral"}
# Formats that are the whole message when a model emits them (no prose around them).
WHOLE_CONTENT = {"llama3_json", "pythonic", "xlam", "mistral_stripped"}


# --- the plants -----------------------------------------------------------------------------
# Each takes (rng, trajectory) and returns cases; a plant skips trajectories without the turn
# it needs. Expectations list every rule the planted shape triggers, by its definition.

Plant = Callable[[random.Random, dict[str, Any]], list[dict[str, Any]]]
# Token counts of a call: a planted copy of a call is a new call and does not keep them.
USAGE = {"input_tokens", "output_tokens", "reasoning_tokens"}


def plant_markup(rng, traj):
    out = []
    ks = agent_turns(traj, calls=True)
    if not ks:
        return out
    k = rng.choice(ks)
    call = traj["turns"][k]["tool_calls"][0]
    fmt = rng.choice(sorted(FORMAT_MODELS))
    t = cut(traj, k)
    prose = _text(traj["turns"][k])
    markup = render(fmt, call["name"], args_of(call))
    t["turns"][k] = reply(
        traj["turns"][k],
        content=(prose + "\n\n" + markup) if prose and fmt not in WHOLE_CONTENT else markup,
        finish_reason_raw="stop",
        model=FORMAT_MODELS[fmt],
    )
    parser = EXPECTED_PARSER.get(fmt, fmt)
    out.append(
        case(
            "planted",
            f"markup-{fmt}",
            t,
            [("tool-markup-leak", k)],
            f"{fmt} markup",
            format=parser,
            focus=k,
        )
    )
    # Near miss: the same text from an agent that attaches no tools (ReAct-style).
    n = copy.deepcopy(t)
    for turn in n["turns"]:
        if turn.get("actor") == "agent":
            turn["tools_attached"] = False
    out.append(
        case("planted", f"markup-{fmt}-no-tools", n, [], "same markup, no tools attached", focus=k)
    )
    return out


def plant_markup_elsewhere(rng, traj):
    ks = agent_turns(traj, calls=True)
    if not ks:
        return []
    k = rng.choice(ks)
    call = traj["turns"][k]["tool_calls"][0]
    args = args_of(call)
    out = []
    t = cut(traj, k)
    why = thinking(traj, k, rng, 40)
    t["turns"][k] = reply(
        traj["turns"][k],
        reasoning=why + "\n" + render("qwen3_coder", call["name"], args),
        finish_reason_raw="stop",
        model="Qwen/Qwen3.5-35B-A3B",
    )
    out.append(
        case(
            "planted",
            "markup-in-reasoning",
            t,
            [("tool-call-in-reasoning", k)],
            "call inside reasoning",
            format="qwen3_coder",
            focus=k,
        )
    )
    if not args:  # a call without arguments leaves nothing to split into the name
        return out
    t = cut(traj, k)
    pairs = "".join(f"<arg_key>{k_}</arg_key><arg_value>{v}</arg_value>" for k_, v in _kv(args))
    t["turns"][k] = reply(
        traj["turns"][k],
        tool_calls=[{"id": call.get("id"), "name": call["name"] + pairs, "arguments": "{}"}],
        finish_reason_raw="tool_calls",
        model="zai-org/GLM-5",
    )
    out.append(
        case(
            "planted",
            "markup-in-tool-name",
            t,
            [("tool-markup-leak", k)],
            "GLM-5 split by glm45",
            format="glm47",
            focus=k,
        )
    )
    return out


def plant_markup_prose(rng, traj):
    """Near miss: an agent that talks about tool-call tags without writing a call."""
    ks = agent_turns(traj, text=True)
    if not ks:
        return []
    k = rng.choice(ks)
    t = cut(traj, k)
    t["turns"][k]["content"] = (
        _text(traj["turns"][k]) + " (Internally my actions are sent as <tool_call> blocks or "
        "[TOOL_CALLS] lists, but you don't need to worry about that.)"
    )
    return [case("planted", "markup-prose-about-tags", t, [], "prose naming the tags", focus=k)]


def plant_budget(rng, traj):
    ks = agent_turns(traj)
    if not ks:
        return []
    k = rng.choice(ks)
    variant = rng.choice(["vllm_r1", "gemini", "inline", "tagless"])
    cap = rng.choice([256, 512, 1024, 4096])
    t = cut(traj, k)
    expect = [("thinking-budget-exhausted", k), ("max-tokens", k)]
    if variant == "vllm_r1":
        fields = dict(
            reasoning=thinking(traj, k, rng, 60),
            finish_reason_raw="length",
            output_tokens=cap,
            max_output_tokens=cap,
        )
    elif variant == "gemini":
        cap = rng.choice([256, 500, 1024])
        thoughts = cap - rng.randint(4, 30)
        fields = dict(
            content="",
            finish_reason_raw="MAX_TOKENS",
            reasoning_tokens=thoughts,
            output_tokens=thoughts + rng.randint(0, 3),
            max_output_tokens=cap,
            model="gemini-2.5-pro",
        )
    elif variant == "inline":
        fields = dict(
            content="<think>\n" + thinking(traj, k, rng, 60),
            finish_reason_raw="length",
            output_tokens=cap,
            max_output_tokens=cap,
        )
        expect.append(("unclosed-think", k))
    else:
        fields = dict(
            content="Thinking Process:\n\n1. **Analyze the request:** "
            + thinking(traj, k, rng, 50),
            finish_reason_raw="length",
            output_tokens=cap,
            max_output_tokens=cap,
            model="Qwen/Qwen3.5-9B",
        )
    t["turns"][k] = reply(traj["turns"][k], **fields)
    return [
        case("planted", f"budget-{variant}", t, expect, f"reasoning ate max_tokens={cap}", focus=k)
    ]


def plant_partial_answer(rng, traj):
    """Near miss for the budget rule: a visible answer cut at the cap (max-tokens only)."""
    ks = agent_turns(traj, text=True)
    ks = [k for k in ks if len(_text(traj["turns"][k])) > 120]
    if not ks:
        return []
    k = rng.choice(ks)
    text = _text(traj["turns"][k])
    t = cut(traj, k)
    t["turns"][k] = reply(
        traj["turns"][k],
        content=text[: rng.randint(60, len(text) - 20)],
        finish_reason_raw="length",
        output_tokens=128,
        max_output_tokens=128,
        reasoning_tokens=0,
    )
    return [
        case(
            "planted",
            "partial-answer-at-cap",
            t,
            [("max-tokens", k)],
            "visible answer cut at the cap",
            focus=k,
        )
    ]


def plant_answer_in_reasoning(rng, traj):
    ks = agent_turns(traj, calls=False, text=True)
    if not ks:
        return []
    k = rng.choice(ks)
    t = cut(traj, k)
    t["turns"][k] = reply(
        traj["turns"][k],
        reasoning=_text(traj["turns"][k]),
        content=rng.choice([None, ""]),
        finish_reason_raw="stop",
        model="Qwen/Qwen3-8B",
        output_tokens=len(_text(traj["turns"][k])) // 4,
    )
    near = cut(traj, k)
    near["turns"][k] = reply(
        traj["turns"][k],
        reasoning=thinking(traj, k, rng, 30),
        content=_text(traj["turns"][k]),
        finish_reason_raw="stop",
        model="Qwen/Qwen3-8B",
    )
    return [
        case(
            "planted",
            "answer-in-reasoning",
            t,
            [("answer-in-reasoning", k)],
            "reply in the reasoning field",
            focus=k,
        ),
        case(
            "planted",
            "reasoning-and-answer",
            near,
            [],
            "reasoning field and visible answer",
            focus=k,
        ),
    ]


def plant_filter(rng, traj):
    ks = agent_turns(traj)
    if not ks:
        return []
    k = rng.choice(ks)
    text = _text(traj["turns"][k])
    variant = rng.choice(
        ["gemini_safety", "openai_filter", "refusal", "prompt_blocked", "azure_400"]
    )
    expect = [("content-filtered", k)]
    if variant == "gemini_safety":
        fields = dict(
            finish_reason_raw=rng.choice(["SAFETY", "RECITATION", "PROHIBITED_CONTENT"]),
            model="gemini-2.5-flash",
        )
    elif variant == "openai_filter":
        fields = dict(
            content=text[: len(text) // 3] or None,
            finish_reason_raw="content_filter",
            model="gpt-4o",
        )
    elif variant == "refusal":
        fields = dict(content="", finish_reason_raw="refusal", model="claude-sonnet-4-5")
    elif variant == "prompt_blocked":
        fields = dict(
            finish_reason_raw="BLOCKLIST",
            error="prompt blocked (promptFeedback.blockReason BLOCKLIST)",
            model="gemini-2.5-pro",
        )
    else:
        fields = dict(
            http_status=400,
            error=(
                "The response was filtered due to the prompt triggering Azure OpenAI's content "
                "management policy. (content_filter)"
            ),
            model="gpt-4o",
        )
        expect.append(("http-error", k))
    t = cut(traj, k)
    t["turns"][k] = reply(traj["turns"][k], **fields)
    return [case("planted", f"filtered-{variant}", t, expect, variant, focus=k)]


def plant_malformed(rng, traj):
    ks = agent_turns(traj, calls=True)
    if not ks:
        return []
    k = rng.choice(ks)
    call = dict(traj["turns"][k]["tool_calls"][0])
    arguments = call.get("arguments") or "{}"
    variant = rng.choice(["truncated", "python_repr", "gemini_malformed", "undeclared", "groq"])
    t = cut(traj, k)
    expect = [("malformed-tool-call", k)]
    if variant == "truncated" and len(arguments) > 4:
        call["arguments"] = arguments[: rng.randint(2, len(arguments) - 2)]
        cap = rng.choice([256, 512])
        fields = dict(
            tool_calls=[call], finish_reason_raw="length", output_tokens=cap, max_output_tokens=cap
        )
        expect.append(("max-tokens", k))
    elif variant == "python_repr":
        call["arguments"] = repr(args_of(call)) if args_of(call) else "{'confirm': True}"
        fields = dict(tool_calls=[call], finish_reason_raw="tool_calls")
    elif variant == "gemini_malformed":
        fields = dict(finish_reason_raw="MALFORMED_FUNCTION_CALL", model="gemini-2.5-flash")
    elif variant == "undeclared":
        name = "list_" + call["name"].split("_")[-1] + "_history"
        fields = dict(
            tool_calls=[{"id": None, "name": name, "arguments": "{}"}],
            finish_reason_raw="UNEXPECTED_TOOL_CALL",
            error=f"Unexpected tool call: Model tried to call an undeclared function: {name}",
            model="gemini-3-flash-preview",
        )
    else:
        bad = dict(args_of(call), foo="bar")
        fields = dict(
            content=json.dumps({"name": call["name"], "arguments": bad}),
            http_status=400,
            error=(
                f"tool_use_failed: Tool call validation failed: parameters for tool "
                f"{call['name']} did not match schema: errors: [additionalProperties 'foo' not "
                f"allowed]"
            ),
            model="openai/gpt-oss-120b",
        )
        expect.append(("http-error", k))
    t["turns"][k] = reply(traj["turns"][k], **fields)
    return [case("planted", f"malformed-{variant}", t, expect, variant, focus=k)]


def plant_empty_calls(rng, traj):
    ks = agent_turns(traj, calls=True)
    if not ks:
        return []
    k = rng.choice(ks)
    t = cut(traj, k)
    variant = rng.choice(["required", "after_none"])
    fields = dict(finish_reason_raw="tool_calls", tool_choice="required")
    if variant == "after_none":
        fields = dict(
            finish_reason_raw="tool_calls",
            tool_choice="none",
            content="",
            reasoning=thinking(traj, k, rng, 30),
        )
    t["turns"][k] = reply(traj["turns"][k], **fields)
    return [
        case(
            "planted", f"empty-tool-calls-{variant}", t, [("empty-tool-calls", k)], variant, focus=k
        )
    ]


def plant_untyped(rng, traj):
    ks = agent_turns(traj, calls=True)
    if not ks:
        return []
    k = rng.choice(ks)
    t = cut(traj, k)
    calls = traj["turns"][k]["tool_calls"]
    t["turns"][k] = reply(
        traj["turns"][k],
        tool_calls=calls,
        finish_reason_raw="tool_calls",
        tool_calls_without_type=len(calls),
        model="mistral-large-latest",
    )
    n = cut(traj, k)
    for i in agent_turns(n, calls=True):
        n["turns"][i]["tool_calls_without_type"] = 0
    return [
        case(
            "planted",
            "tool-calls-without-type",
            t,
            [("tool-call-missing-type", k)],
            "Mistral shape",
            focus=k,
        ),
        case("planted", "tool-calls-typed", n, [], "every raw call typed", focus=k),
    ]


def request_keys(traj, k) -> list[str]:
    """The key paths of an OpenAI-shape request that replays turns 0..k-1."""
    keys = {"model", "messages", "tools", "tool_choice", "temperature", "max_tokens"}
    for t in traj["turns"][:k]:
        keys |= {"messages[].role", "messages[].content"}
        if t.get("tool_calls"):
            keys |= {
                f"messages[].tool_calls[].{p}"
                for p in ("id", "type", "function", "function.name", "function.arguments")
            }
            keys.add("messages[].tool_calls")
        if t.get("role") == "tool":
            keys |= {"messages[].tool_call_id", "messages[].name"}
    return sorted(keys)


def plant_request_fields(rng, traj):
    ks = [k for k in agent_turns(traj) if k > 2]
    if not ks:
        return []
    k = rng.choice(ks)
    keys = request_keys(traj, k)
    variant = rng.choice(["private_400", "private_ok", "foreign_400", "error_only"])
    t = cut(traj, k)
    expect = [("internal-fields-in-request", k)]
    failed = dict(http_status=400, content=None)
    if variant == "private_400":
        fields = dict(
            failed,
            request_keys=sorted([*keys, "messages[].metadata", "messages[].metadata._db_id"]),
            error=(
                "1 validation error for UserMessage metadata Extra inputs are not permitted "
                "[type=extra_forbidden, input_value={'_db_id': "
                "'7ce1f0b3-d29c-4342-af6f-2cb30f4dec8e'}, input_type=dict]"
            ),
        )
        expect.append(("http-error", k))
    elif variant == "private_ok":
        real = traj["turns"][k]
        fields = dict(
            content=real.get("content"),
            tool_calls=real.get("tool_calls") or [],
            http_status=200,
            request_keys=sorted([*keys, "_trace_id"]),
        )
    elif variant == "foreign_400":
        fields = dict(
            failed,
            request_keys=sorted(
                [*keys, "messages[].cache_control", "messages[].cache_control.type"]
            ),
            error="Bad Request: messages.3.cache_control: Extra inputs are not permitted",
        )
        expect.append(("http-error", k))
    else:
        fields = dict(
            failed,
            http_status=422,
            error=(
                "Extra inputs are not permitted: body.messages.2.assistant.reasoning_content "
                "(extra_forbidden)"
            ),
            model="mistral-large-latest",
        )
        expect.append(("http-error", k))
    t["turns"][k] = reply(traj["turns"][k], **fields)
    near = cut(traj, k)
    near["turns"][k] = dict(
        near["turns"][k], http_status=200, request_keys=sorted([*keys, "messages[].cache_control"])
    )
    return [
        case("planted", f"request-{variant}", t, expect, variant, focus=k),
        case("planted", "request-foreign-key-accepted", near, [], "foreign key, HTTP 200", focus=k),
    ]


HTTP_ERRORS = [
    (
        429,
        (
            "Rate limit reached for requests in organization org-x on requests per min (RPM): "
            "Limit 500. (rate_limit_exceeded)"
        ),
    ),
    (500, "Internal Server Error"),
    (502, "Bad Gateway"),
    (503, "The server is overloaded or not ready yet."),
    (
        401,
        (
            "Incorrect API key provided: sk-pr***. You can find your API key at "
            "https://platform.openai.com/account/api-keys."
        ),
    ),
    (404, "The model `gpt-4.1-mni` does not exist or you do not have access to it."),
    (0, "Connect call failed ('10.0.0.12', 8000)"),
]


def plant_http(rng, traj):
    ks = agent_turns(traj)
    if not ks:
        return []
    k = rng.choice(ks)
    t = cut(traj, k)
    if rng.random() < 0.25:
        t["turns"][k] = reply(
            traj["turns"][k],
            http_status=200,
            stream=True,
            stream_completed=True,
            finish_reason_raw="stop",
            error="error inside the stream: upstream provider error (502)",
        )
        name = "http-error-in-stream"
    else:
        status, error = rng.choice(HTTP_ERRORS)
        t["turns"][k] = reply(traj["turns"][k], http_status=status, error=error)
        name = f"http-error-{status}"
    near = cut(traj, k)
    near["turns"][k] = dict(near["turns"][k], http_status=200)
    return [
        case("planted", name, t, [("http-error", k)], "failed call", focus=k),
        case("planted", "http-200", near, [], "successful call", focus=k),
    ]


def plant_overflow(rng, traj):
    ks = agent_turns(traj)
    if len(ks) < 2:
        return []
    k = ks[-1]
    t = cut(traj, k)
    variant = rng.choice(["vllm", "anthropic", "gemini", "tau2"])
    expect = [("context-overflow", k)]
    if variant == "vllm":
        limit = rng.choice([8192, 16384, 32768])
        asked = limit + rng.randint(10, 3000)
        t["turns"][k] = reply(
            traj["turns"][k],
            http_status=400,
            error=(
                f"This model's maximum context length is {limit} tokens. However, you requested "
                f"{asked} tokens ({asked - 1024} in the messages, 1024 in the completion). "
                f"Please reduce the length of the messages or completion."
            ),
        )
    elif variant == "anthropic":
        text = _text(traj["turns"][k]) or "Your reservation"
        t["turns"][k] = reply(
            traj["turns"][k],
            content=text[: len(text) // 2],
            finish_reason_raw="model_context_window_exceeded",
            input_tokens=199_712,
        )
    elif variant == "gemini":
        t["turns"][k] = reply(
            traj["turns"][k],
            http_status=400,
            error=(
                "The input token count (1048612) exceeds the maximum number of tokens allowed "
                "(1048576)."
            ),
            model="gemini-2.5-pro",
        )
    else:
        if not t["episode"]["source_format"].startswith("tau2"):
            return []
        t["episode"]["termination_reason"] = "context_window_exceeded"
        t["episode"]["reward"] = 0.0
        # an exit status that names the context window: the run-exit rule reads it too
        expect.append(("run-exit-infra", k))
    near = cut(traj, k)
    near["turns"][k] = reply(
        traj["turns"][k],
        http_status=429,
        error=(
            "Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29000, "
            "Requested 4000."
        ),
    )
    return [
        case("planted", f"overflow-{variant}", t, expect, variant, focus=k),
        case(
            "planted",
            "rate-limit-not-overflow",
            near,
            [("http-error", k)],
            "429 on tokens per minute",
            focus=k,
        ),
    ]


def plant_crash(rng, traj):
    """The episode raised: tau-bench keeps only info.error and an empty traj (tau2 ≥1.0 a
    placeholder with messages: []). A context-window error belongs to context-overflow; an
    error on an episode that kept its turns is not a lost episode."""
    errors = [
        "litellm.APIConnectionError: Hosted_vllmException - Connection error.",
        "litellm.RateLimitError: OpenAIException - Rate limit reached for requests",
        "Expecting ',' delimiter: line 1 column 58 (char 57)",
        "litellm.AuthenticationError: OpenAIException - Incorrect API key provided: sk-proj-****",
        "'NoneType' object has no attribute 'split'",
    ]
    trace = '\nTraceback (most recent call last):\n  File "tau_bench/run.py", line 118, in _run'
    crashed = copy.deepcopy(traj)
    crashed["turns"] = []
    crashed["episode"].update(
        reward=0.0, termination_reason="error", error=rng.choice(errors) + trace
    )
    overflow = copy.deepcopy(crashed)
    overflow["episode"]["error"] = (
        "litellm.ContextWindowExceededError: This model's maximum context length is 32768 "
        "tokens. However, you requested 33012 tokens." + trace
    )
    kept = copy.deepcopy(traj)
    kept["episode"]["error"] = "too many tool errors"
    return [
        case("planted", "episode-crashed", crashed, [("episode-crashed", None)], "info.error"),
        case(
            "planted",
            "episode-lost-to-context",
            overflow,
            [("context-overflow", None)],
            "context error, no turns",
        ),
        case("planted", "error-but-turns-kept", kept, [], "error on an episode with turns"),
    ]


def plant_retries(rng, traj):
    ks = agent_turns(traj)
    if not ks:
        return []
    k = rng.choice(ks)
    base = cut(traj, k - 1) if k > 0 else cut(traj, 0)
    h = f"{rng.getrandbits(64):016x}"
    status, error = rng.choice([*HTTP_ERRORS[:4], (400, "'gpt-4.1-mni' is not a valid model ID")])
    template = traj["turns"][k]
    out = []
    n = rng.choice([3, 4, 5])
    t = copy.deepcopy(base)
    empty = rng.random() < 0.3
    for _ in range(n):
        if empty:
            t["turns"].append(
                reply(
                    template,
                    content="",
                    http_status=200,
                    finish_reason_raw="stop",
                    request_hash=h,
                    output_tokens=0,
                )
            )
        else:
            t["turns"].append(reply(template, http_status=status, error=error, request_hash=h))
    first = len(base["turns"])
    per_turn = "stop-no-tool-calls" if empty else "http-error"
    expect = [("retry-storm", first)] + [(per_turn, first + i) for i in range(n)]
    out.append(
        case(
            "planted", f"retry-storm-{n}", t, expect, f"{n} identical failing requests", focus=first
        )
    )
    # Near miss: the same failures, but the third attempt succeeds / differs.
    m = copy.deepcopy(base)
    for i in range(3):
        if i == 2:
            m["turns"].append(dict(copy.deepcopy(template), request_hash=h, http_status=200))
        else:
            m["turns"].append(reply(template, http_status=status, error=error, request_hash=h))
    out.append(
        case(
            "planted",
            "retries-then-success",
            m,
            [("http-error", first), ("http-error", first + 1)],
            "two failures, then success",
            focus=first,
        )
    )
    return out


def plant_stream_cut(rng, traj):
    ks = agent_turns(traj, text=True)
    ks = [k for k in ks if len(_text(traj["turns"][k])) > 60]
    if not ks:
        return []
    k = rng.choice(ks)
    text = _text(traj["turns"][k])
    t = cut(traj, k)
    t["turns"][k] = reply(
        traj["turns"][k],
        content=text[: rng.randint(10, len(text) - 10)],
        stream=True,
        stream_completed=False,
        http_status=200,
    )
    near = cut(traj, k)
    near["turns"][k] = dict(
        near["turns"][k], stream=True, stream_completed=True, finish_reason_raw="stop"
    )
    return [
        case(
            "planted",
            "stream-cut-off",
            t,
            [("stream-cut-off", k)],
            "stream cut mid-answer",
            focus=k,
        ),
        case("planted", "stream-completed", near, [], "complete stream", focus=k),
    ]


# Announcements of a tool call that never came, in the words agents use. The last two are
# phrasings the rule's patterns do not cover: they measure its recall honestly.
ANNOUNCE = [
    "Let me look up the details for you.",
    "Thank you! Let me check that now.",
    "Great, I'll pull up your {thing} right away.",
    "I will now {verb} that for you.",
    "One moment while I retrieve your {thing}.",
    "Sure. I'm going to {verb} it now.",
    "Perfect. Now let me {verb} the {thing}.",
    "Alright, I am checking your {thing} now.",
    "I'll go ahead and {verb} it.",
    "Give me a moment to review your {thing}.",
    "Checking your {thing} now.",
    "Looking into it — this will only take a second.",
    "Allow me a moment to pull that up.",
    "Hang tight while that goes through.",
    "On it!",
]
CONDITIONAL = [
    "Once you confirm, I'll {verb} the {thing}.",
    "If that's correct, I will {verb} it right away.",
    "Could you confirm the {thing}? Then I'll {verb} it.",
    "Please confirm (yes/no) and I'll proceed.",
]
VERBS = {
    "get": "check",
    "find": "look up",
    "cancel": "cancel",
    "modify": "update",
    "book": "book",
    "return": "process the return for",
    "exchange": "process the exchange for",
    "update": "update",
    "transfer": "transfer",
    "send": "send",
    "calculate": "calculate",
    "list": "check",
}


def _fill(template: str, name: str) -> str:
    verb = VERBS.get(name.split("_")[0], "process")
    thing = " ".join(name.split("_")[1:]) or "request"
    return template.format(verb=verb, thing=thing)


def plant_announce(rng, traj):
    ks = agent_turns(traj, calls=True)
    if not ks:
        return []
    k = rng.choice(ks)
    name = traj["turns"][k]["tool_calls"][0]["name"]
    index = rng.randrange(len(ANNOUNCE))
    t = cut(traj, k)
    t["turns"][k] = reply(
        traj["turns"][k], content=_fill(ANNOUNCE[index], name), finish_reason_raw="stop"
    )
    near = cut(traj, k)
    near["turns"][k] = reply(
        traj["turns"][k], content=_fill(rng.choice(CONDITIONAL), name), finish_reason_raw="stop"
    )
    return [
        case(
            "planted",
            f"announce-{index}",
            t,
            [("announced-action-without-call", k)],
            ANNOUNCE[index],
            focus=k,
        ),
        case("planted", "announce-conditional", near, [], "conditional promise", focus=k),
    ]


def plant_no_action(rng, traj):
    """Every agent turn fails (truncated, markup, or empty), the episode fails with reward 0."""
    users = [i for i, t in enumerate(traj["turns"]) if t.get("actor") == "user_sim" and _text(t)]
    if len(users) < 2:
        return []
    variant = rng.choice(["truncated", "markup", "empty"])
    t = copy.deepcopy(traj)
    head = [x for x in t["turns"] if x.get("role") == "system"]
    turns, expect = list(head), []
    calls = [c for x in traj["turns"] for c in x.get("tool_calls") or []] or [
        {"name": "get_user_details", "arguments": "{}"}
    ]
    for n, u in enumerate(users[:3]):
        turns.append(copy.deepcopy(traj["turns"][u]))
        k = len(turns)
        template = next(x for x in traj["turns"] if x.get("actor") == "agent")
        if variant == "truncated":
            turns.append(
                reply(
                    template,
                    content="<think>\n"
                    + thinking(traj, u + 1 if u + 1 < len(traj["turns"]) else u, rng, 45 + 7 * n),
                )
            )
            expect.append(("unclosed-think", k))
        elif variant == "markup":
            c = calls[n % len(calls)]
            turns.append(
                reply(
                    template,
                    content=render("hermes", c["name"], args_of(c)),
                    finish_reason_raw="stop",
                    model="Qwen/Qwen2.5-7B-Instruct",
                )
            )
            expect.append(("tool-markup-leak", k))
        else:
            turns.append(
                reply(
                    template,
                    content="",
                    finish_reason_raw="stop",
                    output_tokens=rng.randint(20, 200),
                )
            )
            expect.append(("stop-no-tool-calls", k))
    last_agent = len(turns) - 1
    turns.append(
        {"role": "user", "actor": "user_sim", "content": "This is not helpful. ###STOP###"}
    )
    t["turns"] = turns
    t["episode"].update(reward=0.0, termination_reason="user_stop")
    expect.append(("no-action-failure", last_agent))
    return [case("planted", f"no-action-{variant}", t, expect, f"agent never acts ({variant})")]


CONFIRM_RE = re.compile(r"(?i)\b(confirm|yes|proceed|would you like)\b")
STOP_REPLIES = [
    "Yes, please go ahead. Thank you! ###STOP###",
    "Yes, that's correct, please proceed. ###STOP###",
    "Sure, go ahead and do that. Thanks for your help! ###STOP###",
    "Yes please. ###STOP###",
    "Please proceed with that. Thanks! ###STOP###",
]


def plant_early_stop(rng, traj):
    ks = [
        k
        for k in agent_turns(traj, calls=False, text=True)
        if CONFIRM_RE.search(_text(traj["turns"][k])) and "?" in _text(traj["turns"][k])[-200:]
    ]
    ks = [
        k
        for k in ks
        if any(
            traj["turns"][i].get("tool_calls")
            for i in agent_turns(traj)[: agent_turns(traj).index(k)]
        )
    ]
    if not ks:
        return []
    k = rng.choice(ks)
    text = rng.choice(STOP_REPLIES)
    t = cut(traj, k, reward=0.0)
    t["episode"]["termination_reason"] = "user_stop"
    t["turns"].append({"role": "user", "actor": "user_sim", "content": text})
    near = copy.deepcopy(t)
    near["episode"]["reward"] = 1.0
    bye = cut(traj, k, reward=0.0)
    bye["turns"].append(
        {
            "role": "user",
            "actor": "user_sim",
            "content": "I'll think about it and come back later. ###STOP###",
        }
    )
    return [
        case("planted", "early-stop", t, [("user-sim-early-stop", k + 1)], text, focus=k),
        case("planted", "early-stop-but-rewarded", near, [], "same, reward 1", focus=k),
        case("planted", "stop-without-yes", bye, [], "user leaves without confirming", focus=k),
    ]


def plant_repeat_calls(rng, traj):
    ks = [
        k
        for k in agent_turns(traj, calls=True)
        if k + 1 < len(traj["turns"]) and traj["turns"][k + 1].get("role") == "tool"
    ]
    if not ks:
        return []
    k = rng.choice(ks)
    n = rng.choice([2, 3, 3, 4])
    t = cut(traj, k + 1)
    for _ in range(n - 1):
        # a repeated call is a new call: it does not carry the original's token counts
        t["turns"] += [
            {f: v for f, v in x.items() if f not in USAGE} for x in traj["turns"][k : k + 2]
        ]
    expect = [("repeated-tool-call", k)] if n >= 3 else []
    # the same call with the same result 4 times is also an action loop (on the 4th call)
    expect += [("action-loop", k + 6)] if n >= 4 else []
    return [case("planted", f"same-call-x{n}", t, expect, f"the same call {n} times", focus=k)]


def plant_loop(rng, traj):
    ks = [
        k for k in agent_turns(traj, calls=False, text=True) if len(_text(traj["turns"][k])) > 150
    ]
    if not ks:
        return []
    k = rng.choice(ks)
    text = _text(traj["turns"][k])
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", text) if len(s) >= 70]
    variant = rng.choice(["tail", "whole"]) if sentences else "whole"
    t = cut(traj, k)
    if variant == "tail":
        unit = rng.choice(sentences) + " "
        t["turns"][k]["content"] = text + " " + unit * rng.choice([3, 4, 6])
    else:
        t["turns"][k]["content"] = (text + "\n\n") * rng.choice([4, 6])
    expect = [("think-loop", k)]
    # Still a text reply that the user sees: nothing else applies.
    return [case("planted", f"loop-{variant}", t, expect, f"{variant} repetition", focus=k)]


def plant_leak(rng, traj):
    # tau2's rewritten solo stop ("###STOP###" with finish tool_calls) is not a model's text
    ks = [
        i
        for i, t in enumerate(traj["turns"])
        if t.get("actor") in ("agent", "user_sim")
        and _text(t)
        and _text(t) != "###STOP###"
        and not t.get("tool_calls")
        and t.get("role") in ("assistant", "user")
    ]
    if not ks:
        return []
    k = rng.choice(ks)
    who = traj["turns"][k]["actor"]
    t = cut(traj, k)
    why = (
        thinking(traj, k, rng, 35)
        if who == "agent"
        else "I am the customer and I should stay in character; I want to get this done quickly."
    )
    t["turns"][k]["content"] = f"<think>\n{why}\n</think>\n\n{_text(traj['turns'][k])}"
    return [
        case(
            "planted",
            f"reasoning-leak-{who}",
            t,
            [("reasoning-leak", k)],
            "closed think block in content",
            focus=k,
        )
    ]


def plant_format(rng, traj):
    if not traj["episode"]["source_format"].startswith("tau2"):
        return []
    solo = traj["episode"]["labels"].get("agent_implementation") == "llm_agent_solo"
    out = []
    if solo:
        k = agent_turns(traj)[-1]
        t = cut(traj, k, reward=0.0)
        t["episode"]["termination_reason"] = "agent_error"
        t["turns"][k] = reply(
            traj["turns"][k],
            content="I have re-enabled mobile data on your phone, it should work now.",
            finish_reason_raw="stop",
        )
        out.append(
            case(
                "planted",
                "format-solo-text",
                t,
                [("message-format-violation", k)],
                "text in solo mode",
                focus=k,
            )
        )
        return out
    # after the agent's first tool call: an episode where the agent never acted is also a
    # no-action failure, which this plant is not about
    acted = agent_turns(traj, calls=True)
    ks = [k for k in agent_turns(traj, calls=False, text=True) if acted and k > acted[0]]
    if ks:
        k = rng.choice(ks)
        t = cut(traj, k, reward=0.0)
        t["episode"]["termination_reason"] = "agent_error"
        t["turns"][k] = reply(
            traj["turns"][k],
            content="",
            finish_reason_raw="stop",
            output_tokens=rng.randint(20, 200),
        )
        out.append(
            case(
                "planted",
                "format-empty",
                t,
                [("message-format-violation", k), ("stop-no-tool-calls", k)],
                "empty message",
                focus=k,
            )
        )
    ks = agent_turns(traj, calls=True)
    if ks:
        k = rng.choice(ks)
        t = cut(traj, k, reward=0.0)
        t["episode"]["termination_reason"] = "agent_error"
        name = traj["turns"][k]["tool_calls"][0]["name"]
        t["turns"][k] = dict(t["turns"][k], content=f"Thanks, I will run {name} for you now.")
        out.append(
            case(
                "planted",
                "format-text-and-calls",
                t,
                [("message-format-violation", k)],
                "text with calls ended the episode",
                focus=k,
            )
        )
    return out


# --- text tool calls (issue 12 item 8) and control tokens (issue 13) --------------------------

# What a user simulator says when the agent's turn ran nothing and showed it a call instead.
WAITING = [
    "Hello? Did that go through?",
    "Are you still there? I'm waiting for an update on this.",
    "Okay... so what happens now?",
]


def _no_call_id(result: dict[str, Any]) -> dict[str, Any]:
    """A tool result as a text-protocol harness logs it: no call id to answer."""
    return {k: v for k, v in result.items() if k != "tool_call_id"}


def _text_protocol(turn: dict[str, Any], content: str) -> dict[str, Any]:
    """The turn as a text-protocol agent writes it: no tools attached, no structured call."""
    return reply(turn, content=content, tools_attached=False, finish_reason_raw="stop")


def plant_text_calls(rng, traj):
    """A call written as text the way tau-bench's ReAct/Act agents (chat_react_agent.py) and
    Gemma's tool_code prompts write it: malformed (the respond example's unquoted name, JSON cut
    off, a tool_code call never closed) or well-formed but answered by the user, not a tool."""
    if traj["episode"]["labels"].get("agent_implementation") == "llm_agent_solo":
        return []
    out = []
    ks = agent_turns(traj, calls=True)
    texts = agent_turns(traj, calls=False, text=True)
    if texts:
        k = rng.choice(texts)
        t = cut(traj, k)
        answer = json.dumps(_text(traj["turns"][k]))
        t["turns"][k] = _text_protocol(
            traj["turns"][k],
            'Thought:\nI can answer the user now.\nAction:\n{"name": respond, "arguments": '
            f'{{"content": {answer}}}}}',
        )
        out.append(
            case(
                "planted",
                "text-call-respond-unquoted",
                t,
                [("invalid-text-tool-call", k)],
                "tau-bench ReAct respond with the prompt's unquoted name",
                focus=k,
            )
        )
    if not ks:
        return out
    k = rng.choice(ks)
    call = traj["turns"][k]["tool_calls"][0]
    args = args_of(call)
    action = json.dumps({"name": call["name"], "arguments": args})
    variant = rng.choice(["react", "act", "tool_code"])
    if variant == "tool_code":
        params = ", ".join(f"{key}={value!r}" for key, value in args.items())
        good = f"I'll take care of that.\n```tool_code\n{call['name']}({params})\n```"
        bad = f"I'll take care of that.\n```tool_code\n{call['name']}({params}\n```"
    else:
        head = "Thought:\nI should call the tool now.\n" if variant == "react" else ""
        good = f"{head}Action:\n{action}"
        bad = f"{head}Action:\n{action[: rng.randint(len(action) // 3, len(action) - 2)]}"
    # Malformed: the harness cannot run it.
    t = cut(traj, k)
    t["turns"][k] = _text_protocol(traj["turns"][k], bad)
    out.append(
        case(
            "planted",
            f"text-call-invalid-{variant}",
            t,
            [("invalid-text-tool-call", k)],
            f"{variant} call that does not parse",
            focus=k,
        )
    )
    # Well-formed, but the next message is the user's: no tool read it.
    t = cut(traj, k)
    t["turns"][k] = _text_protocol(traj["turns"][k], good)
    t["turns"].append({"role": "user", "actor": "user_sim", "content": rng.choice(WAITING)})
    out.append(
        case(
            "planted",
            f"text-call-unrun-{variant}",
            t,
            [("text-tool-call-not-executed", k)],
            f"{variant} call answered by the user",
            focus=k,
        )
    )
    # Near miss: the same call, run by the harness (its real tool result follows).
    following = traj["turns"][k + 1] if k + 1 < len(traj["turns"]) else None
    if following is not None and following.get("role") == "tool":
        n = cut(traj, k + 1)
        n["turns"][k] = _text_protocol(traj["turns"][k], good)
        n["turns"][k + 1] = _no_call_id(n["turns"][k + 1])
        out.append(
            case("planted", f"text-call-run-{variant}", n, [], "call with its result", focus=k)
        )
    return out


CONTROL_TAILS = [
    "<|im_end|>\n<|im_start|>user\nThanks, that helps.",
    "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nOkay.",
    "<|endoftext|>Human: thanks",
    "<end_of_turn>\n<start_of_turn>user\nok",
]


def plant_control_tokens(rng, traj):
    """An agent reply that runs past its end-of-turn token (ollama #2673, #12459), or gpt-oss
    harmony text whose tokens were stripped (analysis…assistantfinal…, macprovider #743)."""
    ks = [k for k in agent_turns(traj, calls=False, text=True) if _text(traj["turns"][k])]
    if not ks:
        return []
    k = rng.choice(ks)
    text = _text(traj["turns"][k])
    variant = rng.choice(["tail", "harmony"])
    t = cut(traj, k)
    if variant == "tail":
        t["turns"][k]["content"] = text + rng.choice(CONTROL_TAILS)
    else:
        why = thinking(traj, k, rng, 30)
        t["turns"][k]["content"] = f"analysis{why}assistantfinal{text}"
    near = cut(traj, k)
    near["turns"][k]["content"] = "Based on my analysis, here is the final answer. " + text
    return [
        case(
            "planted",
            f"control-token-{variant}",
            t,
            [("control-token-leak", k)],
            f"control token leak ({variant})",
            focus=k,
        ),
        case("planted", "control-token-words", near, [], "the words analysis and final", focus=k),
    ]


STOP_REASONS = [
    ("pause_turn", "claude-sonnet-4-20250514"),
    ("MISSING_THOUGHT_SIGNATURE", "gemini-3-pro-preview"),
    ("OTHER", "gemini-2.5-flash"),
    ("MALFORMED_RESPONSE", "gemini-2.5-pro"),
    ("repetition", "Qwen/Qwen3-8B"),
]


def plant_stop_reasons(rng, traj):
    """A turn the provider ended for a reason that looks like a normal stop (formats-api §1.4,
    Anthropic stop reasons, vLLM repetition detection); near miss: the same turn with end_turn."""
    ks = agent_turns(traj, text=True)
    if not ks:
        return []
    k = rng.choice(ks)
    reason, model = rng.choice(STOP_REASONS)
    turn = traj["turns"][k]
    t = cut(traj, k)
    t["turns"][k] = dict(turn, finish_reason_raw=reason, model=model, http_status=200)
    near = cut(traj, k)
    near["turns"][k] = dict(turn, finish_reason_raw="end_turn", model=model, http_status=200)
    return [
        case(
            "planted",
            f"stop-reason-{reason.lower()}",
            t,
            [("provider-stop-reasons", k)],
            f"finish reason {reason}",
            focus=k,
        ),
        case("planted", "stop-reason-end-turn", near, [], "a normal end_turn", focus=k),
    ]


def plant_hidden_length(rng, traj):
    """A call cut by max_tokens that the server reports as finish reason tool_calls (DeepSeek-V4
    on vLLM, routers that rewrite length; MiaAI-Lab DeepSeek-v4-Flash #55, hermes-agent #7693)."""
    ks = [
        k
        for k in agent_turns(traj, calls=True)
        if len(traj["turns"][k]["tool_calls"][0].get("arguments") or "") > 6
    ]
    if not ks:
        return []
    k = rng.choice(ks)
    call = dict(traj["turns"][k]["tool_calls"][0])
    cap = rng.choice([256, 512, 1024])
    variant = rng.choice(["args-cut", "at-cap"])
    t = cut(traj, k)
    expect = [("length-as-tool-calls", k)]
    if variant == "args-cut":
        arguments = call["arguments"]
        end = rng.randint(2, len(arguments) - 2)
        while arguments[:end].rstrip()[-1:] in ("}", "]"):
            end -= 1
        call["arguments"] = arguments[:end]
        expect.append(("malformed-tool-call", k))
    fields = dict(tool_calls=[call], finish_reason_raw="tool_calls", output_tokens=cap)
    t["turns"][k] = reply(traj["turns"][k], max_output_tokens=cap, **fields)
    near = cut(traj, k)
    near["turns"][k] = reply(
        traj["turns"][k],
        tool_calls=[dict(traj["turns"][k]["tool_calls"][0])],
        finish_reason_raw="tool_calls",
        output_tokens=rng.randint(20, cap // 2),
        max_output_tokens=cap,
    )
    return [
        case(
            "planted", f"hidden-length-{variant}", t, expect, "length stop as tool_calls", focus=k
        ),
        case("planted", "hidden-length-under-cap", near, [], "a call well under the cap", focus=k),
    ]


def plant_none_and_observation(rng, traj):
    """A harness that wrote a null content as the text None (ai-agent-book #739), and a ReAct
    turn that writes its own Observation after the action (llama_index #11518, #12865)."""
    out = []
    ks = [
        k
        for k in agent_turns(traj, calls=True)
        if k + 1 < len(traj["turns"]) and traj["turns"][k + 1].get("role") == "tool"
    ]
    if not ks:
        return out
    k = rng.choice(ks)
    if not traj["episode"]["source_format"].startswith("tau2"):
        t = cut(traj, k + 1)
        t["turns"][k] = dict(t["turns"][k], content="None")
        out.append(case("planted", "none-content", t, [("none-content", k)], "str(None)", focus=k))
    call = traj["turns"][k]["tool_calls"][0]
    action = json.dumps({"name": call["name"], "arguments": args_of(call)})
    result = _text(traj["turns"][k + 1])[:120] or "{}"
    t = cut(traj, k + 1)
    t["turns"][k + 1] = _no_call_id(t["turns"][k + 1])
    t["turns"][k] = _text_protocol(
        traj["turns"][k],
        f"Thought:\nI should call the tool.\nAction:\n{action}\nObservation: {result}",
    )
    out.append(
        case(
            "planted",
            "fabricated-observation",
            t,
            # tau-bench's parser reads the invented Observation as part of the JSON
            [("fabricated-observation", k), ("invalid-text-tool-call", k)],
            "observation written by the model",
            focus=k,
        )
    )
    return out


def plant_call_ids(rng, traj):
    """Calls and results that do not pair by id: two calls of a turn sharing an id (claude-code
    #20693), an id made of the function name (brainlid/langchain #620), a parallel call that
    got no result (smolagents #2768); near miss: the turn as recorded."""
    ks = [
        k
        for k in agent_turns(traj, calls=True)
        if k + 2 < len(traj["turns"])
        and traj["turns"][k + 1].get("role") == "tool"
        and traj["turns"][k + 1].get("tool_call_id")
        and len(traj["turns"][k]["tool_calls"]) == 1
        and traj["turns"][k]["tool_calls"][0].get("id")
    ]
    nexts = {k: next((j for j in agent_turns(traj) if j > k + 1), None) for k in ks}
    ks = [k for k in ks if nexts[k] is not None]
    if not ks:
        return []
    k = rng.choice(ks)
    j = nexts[k]
    call = dict(traj["turns"][k]["tool_calls"][0])
    result = traj["turns"][k + 1]
    variant = rng.choice(["duplicate", "name", "dropped"])
    t = cut(traj, j)
    if variant == "duplicate":
        t["turns"][k] = dict(t["turns"][k], tool_calls=[call, dict(call)])
        t["turns"].insert(k + 2, dict(result))
        j += 1
    elif variant == "name":
        t["turns"][k] = dict(t["turns"][k], tool_calls=[dict(call, id=call["name"])])
        t["turns"][k + 1] = dict(result, tool_call_id=call["name"])
    else:
        extra = dict(call, id=(call.get("id") or "call") + "_2")
        t["turns"][k] = dict(t["turns"][k], tool_calls=[call, extra])
    near = cut(traj, j if variant != "duplicate" else j - 1)
    return [
        case("planted", f"call-ids-{variant}", t, [("tool-call-ids", k)], variant, focus=k),
        case("planted", "call-ids-as-recorded", near, [], "ids as recorded", focus=k),
    ]


def plant_tool_not_offered(rng, traj):
    """A call to a tool the captured request did not offer (an undeclared function, pydantic-ai's
    Vertex cassette without the provider's verdict), or in tau2 telecom the agent calling one of
    the user simulator's device tools; near miss: the same call, offered."""
    ks = agent_turns(traj, calls=True)
    if not ks:
        return []
    k = rng.choice(ks)
    call = dict(traj["turns"][k]["tool_calls"][0])
    names = sorted(
        {
            c["name"]
            for t in traj["turns"]
            if t.get("actor") == "agent"
            for c in t.get("tool_calls") or []
        }
    )
    user_tools = sorted(
        {
            c["name"]
            # the user's calls the case keeps: before the turn, inside the window
            for t in traj["turns"][max(0, k - WINDOW) : k]
            if t.get("actor") == "user_sim"
            for c in t.get("tool_calls") or []
        }
        - set(names)
    )
    t = cut(traj, k)
    near = cut(traj, k)
    if user_tools and traj["episode"]["source_format"].startswith("tau2"):
        name = rng.choice(user_tools)
        t["turns"][k] = dict(t["turns"][k], tool_calls=[dict(call, name=name, arguments="{}")])
        variant = "user-tool"
    else:
        offered = [n for n in names if n != call["name"]] or ["get_user_details"]
        t["turns"][k] = dict(t["turns"][k], offered_tools=offered)
        near["turns"][k] = dict(near["turns"][k], offered_tools=sorted({*offered, call["name"]}))
        variant = "undeclared"
    return [
        case("planted", f"not-offered-{variant}", t, [("tool-not-offered", k)], variant, focus=k),
        case("planted", "not-offered-offered", near, [], "the call was offered", focus=k),
    ]


PLANTS: list[tuple[Plant, int]] = [
    (plant_markup, 3),
    (plant_markup_elsewhere, 1),
    (plant_markup_prose, 1),
    (plant_budget, 2),
    (plant_partial_answer, 1),
    (plant_answer_in_reasoning, 1),
    (plant_filter, 1),
    (plant_malformed, 1),
    (plant_empty_calls, 2),
    (plant_untyped, 2),
    (plant_request_fields, 1),
    (plant_http, 1),
    (plant_overflow, 2),
    (plant_crash, 1),
    (plant_retries, 1),
    (plant_stream_cut, 2),
    (plant_announce, 2),
    (plant_no_action, 2),
    (plant_early_stop, 2),
    (plant_repeat_calls, 2),
    (plant_loop, 2),
    (plant_leak, 1),
    (plant_format, 1),
    (plant_text_calls, 2),
    (plant_control_tokens, 1),
    (plant_stop_reasons, 1),
    (plant_hidden_length, 1),
    (plant_none_and_observation, 1),
    (plant_call_ids, 2),
    (plant_tool_not_offered, 1),
]


# --- episode-level plants (exit statuses, step limits, loops, tool exceptions, simulator faults,
# transfers, prompt plateaus, loops to the cap) ------------------------------------------------

INFRA_EXITS = [
    "user_error",
    "timeout",
    "infrastructure_error",
    "submitted (exit_cost)",
    "exit_context",
    "exit_api",
    "AgentTimeoutError",
    "time_limit",
]
MODEL_EXITS = ["too_many_errors", "exit_format", "exit_forfeit"]


def plant_run_exit(rng, traj):
    acted = agent_turns(traj, calls=True)
    ks = [k for k in agent_turns(traj) if acted and k > acted[0]]
    if not ks:
        return []
    k = rng.choice(ks)
    out = []
    for rule, statuses in (("run-exit-infra", INFRA_EXITS), ("run-exit-model", MODEL_EXITS)):
        status = rng.choice(statuses)
        t = cut(traj, k, reward=0.0)
        t["episode"]["termination_reason"] = status
        near = copy.deepcopy(t)
        near["episode"]["reward"] = 1.0
        out += [
            case("planted", f"exit-{rule}", t, [(rule, k)], status, focus=k),
            case("planted", f"exit-{rule}-rewarded", near, [], f"{status}, reward 1", focus=k),
        ]
    plain = cut(traj, k, reward=0.0)
    plain["episode"]["termination_reason"] = rng.choice(["agent_error", "user_stop", "submitted"])
    out.append(case("planted", "exit-not-a-fault", plain, [], "an ordinary ending", focus=k))
    return out


def plant_step_limit(rng, traj):
    fmt = traj["episode"]["source_format"] or ""
    keys = {"tau2": ("max_steps", 200), "tau_bench": ("max_num_steps", 30)}
    harness = "tau2" if fmt.startswith("tau2") else "tau_bench" if fmt.startswith("tau") else ""
    ks = agent_turns(traj)
    if not harness or not ks:
        return []
    key, default = keys[harness]
    k = ks[-1]
    out = []
    for limit, expect in ((rng.randint(5, default // 2), [("step-limit", k)]), (default, [])):
        t = cut(traj, k, reward=0.0)
        t["episode"]["termination_reason"] = "max_steps"
        t["episode"]["labels"] = dict(t["episode"].get("labels") or {}, **{key: str(limit)})
        out.append(case("planted", f"step-limit-{limit}", t, expect, f"{key} {limit}", focus=k))
    return out


def plant_action_loop(rng, traj):
    ks = [
        k
        for k in agent_turns(traj, calls=True)
        if k + 1 < len(traj["turns"]) and traj["turns"][k + 1].get("role") == "tool"
    ]
    if not ks:
        return []
    k = rng.choice(ks)
    n = rng.choice([3, 4, 5])
    t = cut(traj, k + 1, reward=0.0)
    pair = [{f: v for f, v in x.items() if f not in USAGE} for x in traj["turns"][k : k + 2]]
    calls = [k]
    for _ in range(n - 1):
        t["turns"] += [
            reply(traj["turns"][k], content="That did not work. Could you check the details?"),
            {"role": "user", "actor": "user_sim", "content": "They are right. Try again."},
        ]
        calls.append(len(t["turns"]))
        t["turns"] += copy.deepcopy(pair)
    expect = [("action-loop", calls[3])] if n >= 4 else []
    return [case("planted", f"action-loop-x{n}", t, expect, f"same call and result x{n}", focus=k)]


TOOL_EXCEPTIONS = [
    "Error: 'NoneType' object is not subscriptable",
    "Error: unsupported operand type(s) for +: 'int' and 'NoneType'",
    "Error: 'dict' object has no attribute 'payment_id'",
    "Error: list index out of range",
    'Traceback (most recent call last):\n  File "tools.py", line 88, in get_user_details\n'
    "    return self.data['users'][user_id]['orders'][0]\nIndexError: list index out of range",
]
MODEL_TOOL_ERRORS = [
    "Error: user not found",
    "Error: get_user_details() got an unexpected keyword argument 'id'",
    "Error: 1 validation error for Passenger\ndob\n  Input should be a valid date",
]


def plant_tool_exception(rng, traj):
    tools = [i for i, t in enumerate(traj["turns"]) if t.get("role") == "tool"]
    if len(tools) < 2:
        return []
    a, b = sorted(rng.sample(tools, 2))
    t = cut(traj, b, reward=0.0)
    near = cut(traj, b, reward=0.0)
    for i in (a, b):
        t["turns"][i] = dict(t["turns"][i], content=rng.choice(TOOL_EXCEPTIONS))
        near["turns"][i] = dict(near["turns"][i], content=rng.choice(MODEL_TOOL_ERRORS))
    return [
        case("planted", "tool-exception", t, [("harness-tool-exception", a)], "x2", focus=b),
        case("planted", "tool-error-of-the-model", near, [], "domain/argument errors", focus=b),
    ]


SIM_FAULTS = [
    "",
    "Hmm, and what happens to the refund for my last trip then? ###STOP###",
    "###STOP### Actually wait, I also need to update my address.",
    "I have updated your reservation as requested. Is there anything else I can help you with?",
    "Assistant: Your booking has been cancelled. How can I help you today?",
]


def plant_user_sim_fault(rng, traj):
    ks = [k for k in agent_turns(traj, calls=False, text=True) if "?" in _text(traj["turns"][k])]
    acted = agent_turns(traj, calls=True)
    ks = [k for k in ks if acted and k > acted[0]]
    if not ks:
        return []
    k = rng.choice(ks)
    text = rng.choice(SIM_FAULTS)
    t = cut(traj, k, reward=0.0)
    t["turns"].append({"role": "user", "actor": "user_sim", "content": text})
    near = copy.deepcopy(t)
    near["episode"]["reward"] = 1.0
    bye = cut(traj, k, reward=0.0)
    bye["turns"].append(
        {"role": "user", "actor": "user_sim", "content": "Thanks, that's all for today. ###STOP###"}
    )
    return [
        case(
            "planted",
            "user-sim-fault",
            t,
            [("user-sim-fault", k + 1)],
            text[:40] or "empty",
            focus=k,
        ),
        case("planted", "user-sim-fault-rewarded", near, [], "same, reward 1", focus=k),
        case("planted", "user-sim-goodbye", bye, [], "an ordinary goodbye", focus=k),
    ]


def plant_transfer(rng, traj):
    users = [i for i, t in enumerate(traj["turns"]) if t.get("actor") == "user_sim"]
    agents = agent_turns(traj)
    if not users or not agents:
        return []
    replies = [i for i in agents if i > users[0]]
    calls = agent_turns(traj, calls=True)
    if not replies or not calls or calls[0] < replies[0]:
        return []
    f = replies[0]
    call = {
        "id": "call_transfer",
        "name": "transfer_to_human_agents",
        "arguments": json.dumps({"summary": previous_user(traj, f)[:120]}),
    }
    out = []
    for name, k, reward, expect in (
        ("transfer-first-reply", f, 0.0, [("reflexive-transfer", f)]),
        ("transfer-first-reply-rewarded", f, 1.0, []),
        ("transfer-after-acting", calls[-1], 0.0, []),
    ):
        if name == "transfer-after-acting" and calls[-1] == f:
            continue
        t = cut(traj, k, reward=reward)
        t["turns"][k] = reply(traj["turns"][k], tool_calls=[call])
        t["turns"].append({"role": "tool", "actor": "env", "content": "Transfer successful"})
        out.append(case("planted", name, t, expect, "transfer_to_human_agents", focus=k))
    return out


def plant_prompt_plateau(rng, traj):
    calls = [k for k in agent_turns(traj) if traj["turns"][k].get("input_tokens")]
    sizes, total = {}, 0
    for i, t in enumerate(traj["turns"]):
        sizes[i] = total
        total += len(t.get("content") or "") + sum(
            len(c.get("arguments") or "") for c in t.get("tool_calls") or []
        )
    triples = [
        calls[j : j + 3]
        for j in range(len(calls) - 2)
        if sizes[calls[j + 2]] >= 1.25 * sizes[calls[j]] + 1000
    ]
    if not triples:
        return []
    a, b, c = rng.choice(triples)
    window = rng.choice([4096, 8192, 32768])
    t = cut(traj, c, reward=0.0)
    for i in (a, b, c):
        t["turns"][i] = dict(t["turns"][i], input_tokens=window // 2 + 2)
    return [
        case(
            "planted",
            f"prompt-plateau-{window}",
            t,
            [("silent-prompt-truncation", c)],
            f"num_ctx {window}",
            focus=c,
        )
    ]


def plant_loop_to_cap(rng, traj):
    ks = [
        k for k in agent_turns(traj, calls=False, text=True) if len(_text(traj["turns"][k])) > 150
    ]
    if not ks:
        return []
    k = rng.choice(ks)
    text = _text(traj["turns"][k])
    words = text.split()
    unit = rng.choice([" ".join(words[:6]) + " ", "的", "!", words[-1] + " "])
    looped = text + " " + unit * (600 // len(unit) + 3)
    cap = rng.choice([512, 1024, 2048])
    out = []
    for name, fields, expect in (
        (
            "loop-to-cap",
            {"finish_reason_raw": "length", "output_tokens": cap, "max_output_tokens": cap},
            [("repetition-to-cap", k), ("think-loop", k)],
        ),
        ("loop-stopped", {"finish_reason_raw": "stop"}, [("think-loop", k)]),
    ):
        # unscored, as the other loop plants: a failed episode without a call is another rule's
        t = cut(traj, k)
        t["turns"][k] = reply(traj["turns"][k], content=looped, **fields)
        out.append(case("planted", name, t, expect, repr(unit), focus=k))
    return out


PLANTS += [
    (plant_run_exit, 2),
    (plant_step_limit, 2),
    (plant_action_loop, 1),
    (plant_tool_exception, 2),
    (plant_user_sim_fault, 2),
    (plant_transfer, 1),
    (plant_prompt_plateau, 8),
    (plant_loop_to_cap, 2),
]


def build() -> list[dict[str, Any]]:
    rng = random.Random(SEED)
    trajectories = [t for path in SOURCES for t in load(path)]
    cases = []
    for traj in trajectories:
        cases.append(case("control", "real", traj, real_expect(traj), "as recorded"))
    # Plants go into healthy substrate only: trajectories whose real labels are empty.
    healthy = [t for t in trajectories if not real_expect(t) and agent_turns(t)]
    for plant, rounds in PLANTS:
        for _ in range(rounds):
            for traj in rng.sample(healthy, min(PER_ROUND, len(healthy))):
                cases.extend(plant(rng, traj))
    names: dict[str, int] = {}
    for c in cases:
        path, real_id = c["source"].split("#", 1)
        base = f"{Path(path).stem}/{'/'.join(real_id.split('/')[-2:])}:{c['case']}"
        names[base] = names.get(base, 0) + 1
        c["case"] = base if names[base] == 1 else f"{base}#{names[base]}"
    return cases


def main() -> None:
    cases = build()
    text = "".join(json.dumps(c, ensure_ascii=False, sort_keys=True) + "\n" for c in cases)
    CORPUS.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))
    print(f"{CORPUS.relative_to(ROOT)}: {len(cases)} cases")


if __name__ == "__main__":
    main()
