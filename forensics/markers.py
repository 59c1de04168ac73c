"""Markup and prose signals, as data (failure-catalogue §1, §2, §4).

Openers and closers of reasoning blocks that models write inline when no reasoning parser
separates them. Counting them in content tells truncation (open, never closed) from leakage
(a closed block, or a lone closer, inside visible text). Below them: tool-call markup per server
parser, the prose signals of the heuristic rules, and the request keys every OpenAI-compatible
server accepts. Patterns are written once for the regex engines that run them (polars/Rust,
RE2 through forensics.linear, Python `re`): no look-around, no back-references, flags only at
the start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# (opener, closer) pairs, literal text.
REASONING_TAGS: list[tuple[str, str]] = [
    ("<think>", "</think>"),
    ("<thinking>", "</thinking>"),
    ("<seed:think>", "</seed:think>"),
    ("<mm:think>", "</mm:think>"),
    ("[THINK]", "[/THINK]"),
    ("◁think▷", "◁/think▷"),
]

OPEN_RE = "|".join(re.escape(o) for o, _ in REASONING_TAGS)
CLOSE_RE = "|".join(re.escape(c) for _, c in REASONING_TAGS)
# A closed block; an unclosed tail (opener to the end); everything up to a lone closer (models
# whose template puts the opener in the prompt emit only the closer).
CLOSED_BLOCK_RE = f"(?s)(?:{OPEN_RE}).*?(?:{CLOSE_RE})"
UNCLOSED_TAIL_RE = f"(?s)(?:{OPEN_RE}).*$"
LEADING_TO_CLOSER_RE = f"(?s)^.*?(?:{CLOSE_RE})"


# --- Tool-call markup (failure-catalogue §1.3) ----------------------------------------------
#
# Markup a model writes when it calls a tool, per server parser family. When it shows up as
# text (content, reasoning, or inside a tool name) the server's --tool-call-parser did not
# read it. The list is ordered: the first match wins, because several formats share tags
# (`<tool_call>` opens hermes, qwen3_coder, glm45, glm47 and granite payloads) and only what
# follows the tag tells them apart. Each pattern asks for the payload shape, not the bare tag,
# so prose that mentions a tag does not match.


@dataclass(frozen=True)
class ToolMarkup:
    vllm: str  # --tool-call-parser of vLLM, also the id forensics reports
    sglang: str | None  # --tool-call-parser of SGLang, when it has one
    pattern: str  # Rust-regex dialect (polars); Python `re` accepts it too
    unless: str | None = None  # the pattern only counts when this does not match as well


UNWRAPPED_JSON = "unwrapped_json"
_DS = r"[｜|]"  # DeepSeek/Step full-width bar; accept the ASCII bar a re-encoder may leave
TOOL_MARKUP: list[ToolMarkup] = [
    ToolMarkup(
        "deepseek_v32",
        "deepseekv32",
        rf"(?s)<{_DS}DSML{_DS}(?:function_calls|invoke)"
        r'|<function_calls>\s*<invoke name="[^"]+">.*?string="(?:true|false)"',
    ),
    ToolMarkup(
        "deepseek_v3",
        "deepseekv3",
        rf"(?s)<{_DS}tool▁calls?▁begin{_DS}>.*?function<{_DS}tool▁sep{_DS}>[^\n]+\n```json",
    ),
    ToolMarkup(
        "deepseek_v31",
        "deepseekv31",
        rf"<{_DS}tool▁call▁begin{_DS}>[^<]+<{_DS}tool▁sep{_DS}>\s*[{{\[]",
    ),
    ToolMarkup("step3", "step3", r"<｜tool_calls?_begin｜>|<steptml:invoke"),
    ToolMarkup(
        "kimi_k2",
        "kimi_k2",
        r"<\|tool_calls?_section_begin\|>|<\|tool_call_begin\|>\s*(?:functions\.)?[\w.]+:\d+"
        r"|<\|tool_call_argument_begin\|>",
    ),
    ToolMarkup(
        "minimax_m2", "minimax-m2", r"(?s)<minimax:tool_call>|<invoke name=.*?<parameter name="
    ),
    ToolMarkup("seed_oss", None, r"<seed:tool_call>"),
    ToolMarkup("longcat", "longcat", r"<longcat_tool_call>"),
    ToolMarkup(
        "openai",
        "gpt-oss",
        # Harmony text without a call (`analysis…assistantfinal…`) is reasoning shown as the
        # answer, control-token-leak's finding; stripped calls keep `to=functions.`.
        r"(?s)<\|channel\|>commentary|to=functions\.[\w-]+|<\|constrain\|>|<\|call\|>",
    ),
    ToolMarkup(
        "qwen3_coder",
        "qwen3_coder",
        r"<tool_call>\s*<function=|<function=[^>\s]+>\s*<parameter=",
    ),
    # A call without arguments is the bare name; only GLM puts a name straight after the tag.
    ToolMarkup(
        "glm45", "glm45", r"<tool_call>[^\n<]+\n\s*<arg_key>|<tool_call>[\w.-]+\n</tool_call>"
    ),
    ToolMarkup("glm47", "glm47", r"<tool_call>[^\n<]+<arg_key>|<tool_call>[\w.-]+</tool_call>"),
    ToolMarkup("hy_v3", "hunyuan", r"<tool_calls>\s*<tool_call>[^<]*<tool_sep>"),
    ToolMarkup("hunyuan_a13b", None, r"(?s)(?:<answer>|助手：).*?<tool_calls>\s*\["),
    ToolMarkup("jamba", None, r"<tool_calls>\s*\["),
    ToolMarkup("minimax", None, r"<tool_calls>\s*\{"),
    ToolMarkup("internlm", "interns1", r"<\|action_start\|>\s*<\|plugin\|>"),
    ToolMarkup("granite", None, r"<\|tool_call\|>\s*\["),
    ToolMarkup("granite", None, r"<tool_call>\s*\[", unless=r"</tool_call>"),
    ToolMarkup("hermes", "qwen25", r'(?s)<tool_call>\s*\{.*?"name"'),
    # pre-v11 tokenizers write a JSON array after the marker, v11+ `NAME[ARGS]{json}` per call
    ToolMarkup("mistral", "mistral", r"\[TOOL_CALLS\]\s*(?:\[\s*\{|[\w.-]+(?:\[ARGS\])?\s*\{)"),
    ToolMarkup("granite-20b-fc", None, r"<function_call>\s*\{"),
    ToolMarkup(
        "llama3_json",
        "llama3",
        r'<\|python_tag\|>|^\s*\{\s*"name"\s*:\s*"[^"]+"\s*,\s*"parameters"\s*:'
        r'|^\s*\{\s*"type"\s*:\s*"function"\s*,\s*"(?:function|name)"',
    ),
    ToolMarkup("llama4_pythonic", "pythonic", r"<\|python_start\|>\s*\["),
    ToolMarkup("pythonic", "pythonic", r"(?s)^\s*\[\s*[A-Za-z_]\w*\(.*\)\s*\]\s*$"),
    # Gemma 3 prompted for tools writes a ```tool_code fence of Python calls, often after prose
    # (vllm #14734): pythonic reads the calls once the Gemma 3 pythonic template drops the fence.
    ToolMarkup(
        "pythonic",
        "pythonic",
        r"```tool_code\s*\n\s*\[?\s*(?:print\(\s*)?[A-Za-z_][\w.]*\(",
    ),
    ToolMarkup("olmo3", None, r"<function_calls>"),
    ToolMarkup("phi4_mini_json", None, r"^\s*functools\["),
    ToolMarkup("functiongemma", None, r"<start_function_call>"),
    ToolMarkup("gemma4", "gemma4", r"<\|tool_call>call:"),
    ToolMarkup(
        "xlam", None, r'(?s)^\s*\[\s*\{\s*"name"\s*:\s*"[^"]+"\s*,\s*"arguments"\s*:.*\]\s*$'
    ),
    # A call without any wrapper (hermes-family models that drop <tool_call>, §3.1 #11), whole
    # or in a code fence: no parser reads it.
    ToolMarkup(
        UNWRAPPED_JSON,
        None,
        r'(?s)^\s*\{\s*"name"\s*:\s*"[^"]+"\s*,\s*"arguments"\s*:.*\}\s*$'
        r'|```(?:json)?\s*\{\s*"name"\s*:\s*"[^"]+"\s*,\s*"(?:arguments|parameters)"\s*:',
    ),
]
# A tool name that carries argument tags: the glm45 parser split GLM-4.7/5 output at the wrong
# place (it wants a newline after the name) -> glm47.
TOOL_NAME_MARKUP = r"<arg_key>|<arg_value>|<tool_call>|<\|tool_call"
TOOL_NAME_PARSER = "glm47"
# The same markup, different parser, decided by the model id.
MODEL_PARSER_OVERRIDES: list[tuple[str, str, str]] = [
    ("xlam", r"(?i)mistral|mixtral|ministral|devstral|magistral|codestral", "mistral"),
    ("hermes", r"(?i)ernie", "ernie45"),
]
SGLANG_PARSERS: dict[str, str] = {m.vllm: m.sglang for m in TOOL_MARKUP if m.sglang} | {
    "ernie45": "ernie45"
}


# --- Prose signals (heuristic rules) --------------------------------------------------------

# The last sentence of a turn that announces an action it is about to take ("Let me look up
# your order."), after optional interjections. Verbs are the ones agents use for tool work.
_LEAD = (
    r"^(?:(?:ok(?:ay)?|great|sure|alright|all right|perfect|thanks|thank you|got it|understood"
    r"|certainly|absolutely|of course|no problem|excellent|now|next|first|so)[,!.]?\s+)*"
)
_VERBS = (
    r"(?:check|look|search|find|verify|pull|retrieve|fetch|get|process|cancel|update|modify"
    r"|book|change|call|run|query|calculate|compute|write|create|proceed|transfer|review|see"
    r"|start|initiate|submit|apply|exchange|return|place|execute|open|read|try|gather|locate"
    r"|access|handle|take care|go ahead|confirm your|make|escalate)"
)
ANNOUNCEMENT_RE = (
    rf"(?i){_LEAD}(?:(?:let me|let's|allow me to|i(?:'ll| will| am going to|'m going to| shall"
    rf"| am now going to|'m now going to)|i'm (?:now )?going to)\s+(?:now\s+|quickly\s+|first"
    rf"\s+|just\s+|go ahead and\s+|also\s+)?{_VERBS}\b"
    rf"|i(?:'m| am) (?:now )?(?:checking|looking|pulling|retrieving|fetching|searching"
    rf"|processing|updating|cancell?ing|booking)\b"
    rf"|(?:one|just a) moment\b|(?:give|allow) me a (?:moment|second|sec)\b"
    rf"|(?:checking|looking (?:into|up|at)|pulling up|retrieving|fetching|searching for"
    rf"|processing|cancell?ing|updating|booking) (?:it|that|this|those|these|your|the|on)\b)"
)
# Hand-off phrases are what an agent says right after it called the transfer tool (tau2's
# policies prescribe "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON."): they only
# announce a missing call when no transfer call came just before.
HANDOFF_RE = (
    rf"(?i){_LEAD}(?:please (?:hold|wait|bear with me)\b|(?:you are|you're) being transferred\b"
    rf"|i(?:'m| am) (?:now )?transferring\b)"
)
TRANSFER_TOOL_RE = r"(?i)transfer"

# Calls that end an agent's run: it submits, finishes or marks its task complete (terminus-2's
# mark_task_complete, OpenHands' finish, SWE-agent's submit, Cline's attempt_completion, …),
# and mini-swe-agent's submission command (a bash call whose output starts with this line).
FINAL_CALL_NAME_RE = (
    r"(?i)^(?:mark_task_complete|task_complete|complete_task|finish|submit|attempt_completion|"
    r"final_answer|done|exit|end_task|stop)$"
)
SUBMIT_COMMAND_RE = r"COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT|MINI_SWE_AGENT_FINAL_OUTPUT"
# A turn that asks the user for anything is waiting for them, not failing to act; a
# conditional announcement ("I'll proceed once you confirm") is not a promise to act now.
ASKS_USER_RE = (
    r"(?i)\?|\b(?:let me know|please (?:confirm|provide|share|tell|send|reply|specify|choose"
    r"|select|verify)|could you|can you|would you|do you|confirm (?:if|that|whether|with|the))\b"
)
CONDITIONAL_RE = r"(?i)\b(?:if|once|when|after|as soon as|until|unless|whenever|then)\b"
# The last sentence of a text: the run after the last sentence end or line break.
LAST_SENTENCE_RE = r"([^.!?\n]+[.!?]*)\s*$"


# --- Request shapes (internal-fields-in-request) --------------------------------------------

# Message keys of the OpenAI chat-completions schema (and the content-part / tool-call keys
# inside them), which every OpenAI-compatible server accepts. A key path outside this set is
# provider-foreign: accepted by lenient servers, rejected by strict validators (vLLM's nested
# models, Mistral: HTTP 400/422 extra_forbidden).
OPENAI_MESSAGE_KEYS: frozenset[str] = frozenset(
    {
        "role",
        "content",
        "name",
        "tool_calls",
        "tool_call_id",
        "function_call",
        "refusal",
        "audio",
        "reasoning_content",  # vLLM, SGLang and DeepSeek accept it on replay
        "reasoning",
        "content[].type",
        "content[].text",
        "content[].image_url",
        "content[].image_url.url",
        "content[].image_url.detail",
        "content[].input_audio",
        "content[].input_audio.data",
        "content[].input_audio.format",
        "content[].file",
        "content[].file.file_id",
        "content[].file.filename",
        "content[].file.file_data",
        "content[].refusal",
        "tool_calls[].id",
        "tool_calls[].type",
        "tool_calls[].function",
        "tool_calls[].function.name",
        "tool_calls[].function.arguments",
        "tool_calls[].index",
        "function_call.name",
        "function_call.arguments",
        "audio.id",
    }
)
MESSAGE_KEY_PREFIX = "messages[]."
