"""How providers and servers word a context overflow, as data: one entry per wording, with the
source it was taken from and an error text it matches.

An overflow is the call's own error (HTTP 400/413 mostly), so each provider spells it its own
way and changes it between versions; rules read the union through the SQL macro
`context_overflow(text)` that the engine defines from `CONTEXT_OVERFLOW` (check/engine.py).
Wordings are specific on purpose: a generic "token limit exceeded" is also how rate limits
(tokens per minute) are worded, and a 413 without words is a payload limit, not the window.
Patterns are RE2 (DuckDB's regex engine), matched case-insensitively.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Wording:
    provider: str
    pattern: str
    example: str  # an error text of that provider the pattern matches (tests check it)
    source: str  # where the wording comes from


CONTEXT_OVERFLOW_WORDINGS: tuple[Wording, ...] = (
    Wording(
        "OpenAI, Azure OpenAI, Groq, DeepSeek (error code)",
        r"context[_ ]length[_ ]exceeded",
        '{"error": {"message": "…", "type": "invalid_request_error", '
        '"code": "context_length_exceeded"}}',
        "OpenAI API error codes (platform.openai.com/docs/guides/error-codes); LiteLLM "
        "exception_mapping_utils.py maps it to ContextWindowExceededError",
    ),
    Wording(
        "OpenAI Chat Completions, Azure OpenAI, vLLM, DeepSeek, OpenRouter, SGLang, Mistral",
        r"maximum context length",
        "This model's maximum context length is 8192 tokens. However, your messages resulted in "
        "9850 tokens. Please reduce the length of the messages.",
        "OpenAI error codes guide; vLLM entrypoints/openai/serving_engine.py (_validate_input); "
        'OpenRouter errors-and-debugging docs ("This endpoint\'s maximum context length is"); '
        'SGLang ("Requested token count exceeds the model\'s maximum context length of"); '
        'Mistral known limitations ("too large for model with 32768 maximum context length")',
    ),
    Wording(
        "OpenAI Chat Completions, Groq",
        r"reduce the length of the messages",
        "Please reduce the length of the messages or completion.",
        "OpenAI error codes guide; Groq's OpenAI-compatible errors",
    ),
    Wording(
        "OpenAI Responses API, MiniMax, Z.ai",
        r"context[_ ]window",
        "Your input exceeds the context window of this model. Please adjust your input and try "
        "again.",
        'OpenAI Responses API error (code context_length_exceeded); MiniMax "context window '
        'exceeds limit"; Z.ai finish reason model_context_window_exceeded',
    ),
    Wording(
        "Anthropic (also through Bedrock and Vertex)",
        r"prompt is too long",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "Anthropic API errors (docs.anthropic.com/en/docs/errors, invalid_request_error); "
        "strands-agents BEDROCK_CONTEXT_WINDOW_OVERFLOW_MESSAGES (sdk-python #1663)",
    ),
    Wording(
        "Anthropic (prompt plus max_tokens)",
        r"exceed context limit",
        "input length and `max_tokens` exceed context limit: 197626 + 8192 > 200000, decrease "
        "input length or `max_tokens` and try again",
        "Anthropic API invalid_request_error; strands-agents "
        "BEDROCK_CONTEXT_WINDOW_OVERFLOW_MESSAGES; LiteLLM exception_mapping_utils.py "
        '("exceed context limit")',
    ),
    Wording(
        "Amazon Bedrock Converse / InvokeModel (ValidationException)",
        r"input is too long",
        "ValidationException: Input is too long for requested model.",
        "AWS re:Post knowledge-center/bedrock-validation-exception-errors; strands-agents "
        "BEDROCK_CONTEXT_WINDOW_OVERFLOW_MESSAGES",
    ),
    Wording(
        "Amazon Bedrock, Amazon Nova",
        r"input tokens exceeded",
        "ValidationException: Input Tokens Exceeded: Number of input tokens exceeds maximum "
        "length. Please update the input to a value less than or equal to 300000.",
        "Amazon Nova on Bedrock (the overflow strands-agents 1.x did not recognise; issue 21)",
    ),
    Wording(
        "Amazon Bedrock, Titan",
        r"too many input tokens",
        "Too many input tokens. Max input tokens: 8192, request input token count: 9100",
        "Amazon Titan text models on Bedrock (ValidationException)",
    ),
    Wording(
        "Amazon Bedrock Converse (text size)",
        r"too many total text bytes",
        "ValidationException: too many total text bytes: 2100000 > 2000000",
        "strands-agents BEDROCK_CONTEXT_WINDOW_OVERFLOW_MESSAGES",
    ),
    Wording(
        "Google Gemini API, Vertex AI",
        r"input token count.*exceeds the maximum|exceeds the maximum number of tokens allowed",
        "The input token count (1234567) exceeds the maximum number of tokens allowed (1048576).",
        "Gemini API troubleshooting (ai.google.dev/gemini-api/docs/troubleshooting, "
        'INVALID_ARGUMENT); LiteLLM exception_mapping_utils.py ("exceeds the maximum number of '
        'tokens allowed")',
    ),
    Wording(
        "vLLM (engine input processor)",
        r"longer than the maximum model length",
        "The decoder prompt (length 12324) is longer than the maximum model length of 8192. "
        "Make sure that `max_model_len` is no smaller than the number of text tokens.",
        "vLLM v1/engine/processor.py (_validate_model_input)",
    ),
    Wording(
        "vLLM V1 scheduler",
        r"is too long and exceeds limit of",
        "Input prompt (5000 tokens) is too long and exceeds limit of 4096",
        "vLLM v1 core scheduler (prompt longer than max_model_len)",
    ),
    Wording(
        "SGLang, Together",
        r"longer than the model'?s context length",
        "The input (204281 tokens) is longer than the model's context length (202752 tokens).",
        "SGLang tokenizer_manager.py (_validate_one_request); Together AI's errors",
    ),
    Wording(
        "Ollama",
        r"exceeded (?:max )?context length|input length exceeds the context length",
        "prompt too long; exceeded max context length by 100918 tokens",
        'Ollama server errors (docs.ollama.com/api/errors; runner "input length exceeds the '
        'context length" when truncate is false)',
    ),
    Wording(
        "llama.cpp server",
        r"exceeds the available context size|exceed_context_size_error",
        "the request exceeds the available context size, try increasing it",
        "llama.cpp tools/server/server-context.cpp (ERROR_TYPE_EXCEED_CONTEXT_SIZE)",
    ),
    Wording(
        "Hugging Face Text Generation Inference, Together (TGI)",
        r"inputs.? tokens \+ .?max_new_tokens.? must be",
        "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: "
        "4000 `inputs` tokens and 200 `max_new_tokens`",
        "TGI router validation; LiteLLM exception_mapping_utils.py",
    ),
    Wording(
        "xAI",
        r"maximum prompt length is",
        "This model's maximum prompt length is 131072 but the request contains 150000 tokens.",
        "xAI API errors",
    ),
    Wording(
        "Cerebras",
        r"current length is \d+ while limit is \d+",
        "Please reduce the length of the messages or completion. Current length is 9000 while "
        "limit is 8192",
        "LiteLLM exception_mapping_utils.py (Cerebras pattern)",
    ),
    Wording(
        "Moonshot / Kimi",
        r"exceeded model token limit",
        "Invalid request: Your request exceeded model token limit: 131072",
        "Moonshot API errors",
    ),
    Wording(
        "LM Studio",
        r"greater than the context length",
        "The number of tokens to keep from the initial prompt is greater than the context length",
        "LM Studio server errors",
    ),
    Wording(
        "Fireworks, Poolside and other OpenAI-compatible servers",
        r"maximum (?:allowed )?input length",
        "Input length 90000 exceeds the maximum allowed input length of 65536 tokens.",
        'LiteLLM exception_mapping_utils.py ("maximum input length is")',
    ),
    Wording(
        "LiteLLM (the exception class it maps every provider's overflow to)",
        r"ContextWindowExceeded",
        "litellm.ContextWindowExceededError: OpenAIException - This model's maximum context "
        "length is 128000 tokens.",
        "LiteLLM exceptions.py ContextWindowExceededError",
    ),
)

# One pattern for the union, case-insensitive: what context_overflow(text) matches.
CONTEXT_OVERFLOW = "(?i)" + "|".join(f"(?:{w.pattern})" for w in CONTEXT_OVERFLOW_WORDINGS)


def sql_macros() -> list[str]:
    """The CREATE MACRO statements the engine runs before the rules (DuckDB)."""
    literal = CONTEXT_OVERFLOW.replace("'", "''")
    return [
        "create or replace macro context_overflow(t) as "
        f"coalesce(regexp_matches(t, '{literal}'), false)"
    ]
