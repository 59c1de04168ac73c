"""Ruby VCR cassettes written by Psych: `!binary` bodies and `!ruby/...` tags (issue 21 item 4)."""

from __future__ import annotations

import yaml

from forensics import pipeline
from forensics.config import Settings
from forensics.ingest.formats import cassette

from conftest import ROOT

QWEN = ROOT / "tests/data/corpus/files/http_cassette/crmne__ruby_llm__ollama_qwen3_tools.yml"


def test_psych_tags_read_as_plain_data_never_objects():
    text = """
a: !binary |-
  eyJvayI6IHRydWV9
b: !ruby/object:Net::HTTPOK {code: '200'}
c: !ruby/string:ActiveSupport::SafeBuffer hello
d: !ruby/array:Foo [1, 2]
e: !ruby/sym done
"""
    value = yaml.load(text, Loader=cassette._Loader)
    assert value == {
        "a": b'{"ok": true}',
        "b": {"code": "200"},
        "c": "hello",
        "d": [1, 2],
        "e": "done",
    }


def test_ruby_llm_cassette_with_binary_body_reads_whole():
    """Interaction 2 (line 45) carries its response as `!binary`: it was rejected, its answer
    lost; now both interactions are read and the final answer is the last turn."""
    settings = Settings()
    data = pipeline.read(pipeline.expand([str(QWEN)], settings), settings)
    assert data.rejects.num_rows == 0
    turns = data.turns.to_pylist()
    assert (turns[-1]["role"], turns[-1]["source_line"], turns[-1]["finish_reason"]) == (
        "assistant",
        45,
        "stop",
    )
    assert turns[-1]["content"].startswith("The current weather in Berlin")
