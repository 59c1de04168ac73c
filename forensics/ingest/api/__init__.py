"""API dialects and capture plumbing: one captured LLM call -> the turn it produced.

Owns: the request and response bodies of OpenAI Chat and Responses, Anthropic, Gemini, Bedrock,
Ollama, LiteLLM and servers' generate endpoints; the envelopes people store calls in; linking
calls into conversations; SSE framing. May import `ingest.parse`, the table builders and the
core; never a file format (`ingest.formats` calls this package, not the other way).
"""
