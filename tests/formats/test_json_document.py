"""jsonrecords.document: the one way a reader takes a file that must be one JSON document."""

from __future__ import annotations

from forensics.ingest import jsonrecords
from forensics.ingest.parse import jsonwalk
from forensics.ingest.records import Collector


def rejects(collector: Collector) -> list[tuple]:
    return [
        (r["source_line"], r["reason"], r["excerpt"], r["source_format"], r["json_path"])
        for r in collector.reject_rows
    ]


def test_a_whole_document_is_read_with_its_lines():
    collector = Collector()
    doc = jsonrecords.document(collector, "f.json", '\n {"a": [1,\n 2]}\n', "fmt", "not whole")
    assert doc is not None and doc.value == {"a": [1, 2]} and doc.start == 2
    assert doc.line_of(doc.start) == 2 and collector.reject_rows == []


def test_a_cut_document_is_rejected_where_the_parse_stopped():
    collector = Collector()
    text = '{"steps": [\n {"a": 1},\n {"b": nope}]}'
    assert jsonrecords.document(collector, "f.json", text, "fmt", "not a whole thing") is None
    ((line, reason, excerpt, fmt, json_path),) = rejects(collector)
    assert line == 3 and reason.startswith("not a whole thing: ")
    assert fmt == "fmt" and json_path is None and excerpt == "nope}]}"


def test_data_after_the_document_is_rejected_and_the_document_kept():
    collector = Collector()
    doc = jsonrecords.document(collector, "f.json", '{"a": 1}\n{"b": 2}', "fmt", "x")
    assert doc is not None and doc.value == {"a": 1}
    ((line, reason, excerpt, _, _),) = rejects(collector)
    assert line == 2 and jsonwalk.TRAILING in reason and excerpt == '{"b": 2}'


def test_the_walker_reason_excerpt_and_path_are_the_callers():
    collector = Collector()
    text = '\ufeff{"messages": [1, }'

    def why(exc: jsonwalk.WalkError, line: int) -> str:
        return f"cut at line {line}: {exc.msg}"

    def walk(t: str, pos: int) -> tuple[dict, int]:
        return jsonwalk.obj(t, pos, {"messages": lambda t2, p: jsonwalk.value(t2, p)})

    found = jsonrecords.document(
        collector, "m", text, "fmt", why, walk, json_path="$",
        skip_bom=True, excerpt_from_start=True,
    )  # fmt: skip
    assert found is None
    ((_, reason, excerpt, _, json_path),) = rejects(collector)
    assert reason.startswith("cut at line 1: ") and json_path == "$"
    assert excerpt.startswith('{"messages"')  # from the document's start, past the BOM


def test_a_byte_order_mark_is_an_error_unless_skipped():
    text = '\ufeff{"a": 1}'
    collector = Collector()
    assert jsonrecords.document(collector, "f", text, "fmt", "x") is None
    assert jsonrecords.document(Collector(), "f", text, "fmt", "x", skip_bom=True) is not None
