"""How providers and servers word a context overflow, and how tools and spans word an
environment fault, as data: one entry per wording, with the source it was taken from and an
error text it matches.

An overflow is the call's own error (HTTP 400/413 mostly), so each provider spells it its own
way and changes it between versions; rules read the union through the SQL macro
`context_overflow(text)` that the engine defines from `CONTEXT_OVERFLOW` (check/engine.py).
Wordings are specific on purpose: a generic "token limit exceeded" is also how rate limits
(tokens per minute) are worded, and a 413 without words is a payload limit, not the window.
Patterns are RE2 (DuckDB's regex engine), matched case-insensitively.

Environment faults (`env_fault(text)`: the category, or NULL) are what a tool or a span reports
when the world around the model failed: a rate limit, refused credentials, a timeout or an
operation cap, a server that can not be reached, a resource that is not there. The env-* rules
read them from tool results and span statuses.
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


@dataclass(frozen=True)
class EnvFault:
    """One wording of an environment fault as a tool result or a span status reports it."""

    category: str  # one of ENV_FAULT_CATEGORIES: the rule that reports it (env-<category>)
    pattern: str
    example: str  # a real result text of that kind the pattern matches (tests check it)
    source: str  # where the wording comes from


# The categories, in the order they are tried: the first that matches names the fault. Rate
# limits first (a 429 page also says "Max retries exceeded"), timeouts before unreachable
# servers (a read timeout is worded as a connection error too), missing resources last (a
# failed connection is no missing page).
ENV_FAULT_CATEGORIES = ("rate-limited", "auth-failed", "timeout", "unreachable", "resource-missing")

# Wordings are the error's own shape (an exception name, a status line, an error page title),
# never a bare status number or word: tool results quote prices, line numbers and documents.
ENV_FAULT_WORDINGS: tuple[EnvFault, ...] = (
    EnvFault(
        "rate-limited",
        r"\b429\b[^\n]{0,40}(?:too many requests|rate)|too many (?:requests|429 error responses)|"
        r"rate[ _-]?limit(?:ed|[ _-]exceeded|[ _-]reached|[ _-]?error)|"
        r"exceeded your current quota|quota[ _-]exceeded|\bRESOURCE_EXHAUSTED\b",
        "litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached for "
        "gpt-4o in organization org-x on tokens per min (TPM)",
        "OpenAI/Anthropic SDK RateLimitError and error type rate_limit_error; LiteLLM "
        "exceptions.py RateLimitError; requests HTTPError '429 Client Error: Too Many "
        "Requests'; urllib3 'too many 429 error responses'; Gemini RESOURCE_EXHAUSTED; "
        "smolagents AgentGenerationError wrapping them",
    ),
    EnvFault(
        "rate-limited",
        r"\boverloaded_error\b|server (?:is )?(?:currently )?overloaded|"
        r"model is (?:currently )?overloaded|\b529\b[^\n]{0,20}overload",
        "anthropic.InternalServerError: Error code: 529 - {'type': 'error', 'error': {'type': "
        "'overloaded_error', 'message': 'Overloaded'}}",
        "Anthropic API errors (529 overloaded_error); OpenAI 'The server is overloaded' (503)",
    ),
    EnvFault(
        "auth-failed",
        r"\b401\b[^\n]{0,30}unauthori[sz]ed|\b403\b[^\n]{0,30}forbidden|"
        r"\bError 40[13]\b|HTTP Error 40[13]|status(?: code)?[ :=]+40[13]\b|"
        r"AuthenticationError|PermissionDeniedError|invalid[ _]api[ _]key|incorrect api key|"
        r"api[ _]key (?:is )?(?:invalid|missing|not valid|not set)|"
        r"authentication (?:failed|required|error)",
        "Address: https://www.baseball-reference.com/teams/NYY/1977.shtml\nTitle: Error "
        "403\nViewport position: Showing page 1 of 1.\n=======================\n## Error "
        "403\n\n\n\nEnable JavaScript and cookies to continue",
        "TRAIL GAIA traces (smolagents text browser: 'Title: Error 403' pages); requests "
        "HTTPError '401 Client Error: Unauthorized' / '403 Client Error: Forbidden'; OpenAI and "
        "Anthropic SDK AuthenticationError / PermissionDeniedError; OpenAI 'invalid_api_key'",
    ),
    EnvFault(
        "timeout",
        r"timed out|\bTimeoutError\b|\bReadTimeout\b|\bConnectTimeout\b|\bTimeoutExpired\b|"
        r"deadline exceeded|\bDEADLINE_EXCEEDED\b|took too long to execute|"
        r"execution time limit|time limit exceeded|"
        r"max(?:imum)? number of (?:operations|iterations|while iterations)|"
        r"\bMemoryError\b|out of memory|\bOOMKilled\b",
        "Code execution failed at line 'trie_root = build_trie(words_list)' due to: "
        "InterpreterError: Reached the max number of operations of 10000000. Maybe there is an "
        "infinite loop somewhere in the code, or you're just asking too many calculations.",
        "TRAIL GAIA traces (smolagents LocalPythonExecutor MAX_OPERATIONS); requests "
        "ReadTimeout / ConnectTimeout; subprocess TimeoutExpired; SWE-agent 'The command ... "
        "took too long to execute'; OpenHands 'Command timed out'; gRPC DEADLINE_EXCEEDED",
    ),
    EnvFault(
        "unreachable",
        r"connection (?:refused|reset|aborted)|\bECONNREFUSED\b|\bECONNRESET\b|"
        r"RemoteDisconnected|Failed to establish a new connection|"
        r"Temporary failure (?:in name resolution|resolving)|Name or service not known|"
        r"nodename nor servname|Could not resolve host|NameResolutionError|\bENOTFOUND\b|"
        r"getaddrinfo failed|Network is unreachable|No route to host|APIConnectionError|"
        r"\bInternalServerError\b|ServiceUnavailableError|"
        r"\b50[0234]\b[^\n]{0,20}(?:Server Error|Internal Server|Bad Gateway|Service Unavailable|"
        r"Gateway Time)|\bError 50[0-4]\b|HTTP Error 50[0-4]|status(?: code)?[ :=]+50[0-4]\b|"
        r"CERTIFICATE_VERIFY_FAILED",
        "Address: https://www.washingtonpost.com/nation/2021/06/29/jill-bidens-vogue-cover-"
        "theres-optimism-rebuke/\nTitle: Error\nViewport position: Showing page 1 of 1.\n"
        "=======================\n## Error\n\n('Connection aborted.', RemoteDisconnected("
        "'Remote end closed connection without response'))",
        "TRAIL GAIA traces (requests ConnectionError in the text browser); glibc resolver "
        "('Temporary failure resolving', apt; 'Name or service not known'); curl 'Could not "
        "resolve host'; urllib3 NameResolutionError / NewConnectionError; requests HTTPError "
        "'5xx Server Error'; OpenAI SDK APIConnectionError; LiteLLM InternalServerError / "
        "ServiceUnavailableError (a 529 overload worded as one is a rate limit: tried first)",
    ),
    EnvFault(
        "resource-missing",
        r"\b404\b[^\n]{0,20}(?:Client Error|Not Found)|\bError 404\b|HTTP Error 404|"
        r"status(?: code)?[ :=]+404\b|FileNotFoundError|No such file or directory|"
        r"\bENOENT\b|PackageNotFoundError|was not archived on Wayback",
        "FileNotFoundError: [Errno 2] No such file or directory: "
        "'data/gaia/validation/389793a7-ca17-4e82-81cb-2b3a2391b4b9.txt'",
        "TRAIL GAIA traces (the task's attached file missing from the sandbox; requests "
        "'404 Client Error: Not Found for url'; 'Title: Error 404' pages); POSIX ENOENT",
    ),
)


def _union(category: str) -> str:
    return "(?i)" + "|".join(
        f"(?:{w.pattern})" for w in ENV_FAULT_WORDINGS if w.category == category
    )


# One pattern per category, case-insensitive.
ENV_FAULT: dict[str, str] = {c: _union(c) for c in ENV_FAULT_CATEGORIES}

# A fault the agent made itself by running a template as written: an API key or an address
# left as its placeholder (Who&When Algorithm-Generated/120: `googlemaps.Client(key=
# 'YOUR_API_KEY')` refused; /83: `curl: (6) Could not resolve host: <URL>`). The service
# refused or could not be found because of the model's code, not the environment.
PLACEHOLDER = (
    r"(?i)\byour[_-]?api[_-]?key\b|\bapi[_-]?key[_-]?here\b"
    r"|<(?:url|host|hostname|domain|api[_ -]?key|token|your[_ -][a-z_ -]{1,30})>"
)


def _sql_literal(pattern: str) -> str:
    return "'" + pattern.replace("'", "''") + "'"


def sql_macros() -> list[str]:
    """The CREATE MACRO statements the engine runs before the rules (DuckDB)."""
    literal = CONTEXT_OVERFLOW.replace("'", "''")
    cases = " ".join(
        f"when regexp_matches(t, {_sql_literal(ENV_FAULT[c])}) then '{c}'"
        for c in ENV_FAULT_CATEGORIES
    )
    # The matching line (up to 160 characters either side of the match on it); the excerpt
    # adds up to two lines before and one after (an error page's address, an exception's call).
    line = "[^\n]{0,160}(?:%s)[^\n]{0,160}"
    excerpt = "(?:[^\n]{0,160}\n){0,2}" + line + "(?:\n[^\n]{0,160})?"

    def per_category(shape: str) -> str:
        return " ".join(
            f"when category = '{c}' then regexp_extract(t, "
            f"{_sql_literal('(?i)' + shape % ENV_FAULT[c].removeprefix('(?i)'))})"
            for c in ENV_FAULT_CATEGORIES
        )

    return [
        "create or replace macro context_overflow(t) as "
        f"coalesce(regexp_matches(t, '{literal}'), false)",
        # The category of environment fault a tool result or span status reports (NULL: none).
        "create or replace macro env_fault(t) as case "
        f"when regexp_matches(t, {_sql_literal(PLACEHOLDER)}) then null {cases} end",
        # The line of t that shows a fault of that category, and that line in its context.
        f"create or replace macro env_fault_line(t, category) as case {per_category(line)} end",
        "create or replace macro env_fault_excerpt(t, category) as "
        f"case {per_category(excerpt)} end",
    ]
