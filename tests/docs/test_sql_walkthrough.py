"""The SQL walkthrough of docs/sql.md: every query runs on the sample data and gives the table
shown under it, so the documentation can not drift from what forensics does."""

from __future__ import annotations

import os
import re

import pytest

import forensics

from conftest import ROOT

DOC = (ROOT / "docs" / "sql.md").read_text(encoding="utf-8")


def _walkthrough() -> str:
    start = DOC.index("## Notebook walkthrough")
    end = DOC.find("\n## ", start + 1)
    return DOC[start:] if end < 0 else DOC[start:end]


def _examples() -> list[tuple[str, str, list[list[str]]]]:
    """(title, sql, expected rows incl. header) for each ```sql block and the table after it."""
    section = _walkthrough()
    out = []
    pattern = r"\*\*(\d\. [^*]+)\*\*.*?```sql\n(.*?)```\n\n((?:\|[^\n]*\|\n)+)"
    for title, sql, table in re.findall(pattern, section, flags=re.S):
        rows = [
            [cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in table.strip().splitlines()
        ]
        out.append((title, sql, [rows[0], *rows[2:]]))  # drop the |---| line
    return out


EXAMPLES = _examples()


def _cell(value) -> str:
    return "NULL" if value is None else str(value)


@pytest.fixture(scope="module")
def walkthrough_scan():
    code = re.search(r"```python\n(.*?)```", _walkthrough(), flags=re.S).group(1)
    paths = re.search(r"forensics\.scan\((\[.*?\])\)", code).group(1)
    # the document's paths are relative to the checkout
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return forensics.scan(eval(paths))  # a literal list of strings from the document
    finally:
        os.chdir(cwd)


def test_the_walkthrough_has_the_five_queries():
    assert [t.split(" — ")[0] for t, _, _ in EXAMPLES] == [
        "1. Truncation rate by variant",
        "2. Turns at the cap",
        "3. The worst trajectories",
        "4. Tool-markup formats seen",
        "5. Finding co-occurrence",
    ]


@pytest.mark.parametrize(("title", "sql", "expected"), EXAMPLES, ids=[e[0][:2] for e in EXAMPLES])
def test_query_gives_the_table_in_the_docs(walkthrough_scan, title, sql, expected):
    rel = walkthrough_scan.sql(sql)
    got = [list(rel.columns), *([_cell(v) for v in row] for row in rel.fetchall())]
    assert got == expected, title


def test_a_view_the_walkthrough_spells_out_is_that_query(walkthrough_scan):
    """ "(the `rule_pairs` view is this query)": the same columns, the same rows."""
    claims = re.findall(r"the `(\w+)`\s+view is this query", DOC)
    assert claims == ["rule_pairs"]
    (_, sql, _) = next(e for e in EXAMPLES if "co-occurrence" in e[0])
    query, view = walkthrough_scan.sql(sql), walkthrough_scan.sql("select * from rule_pairs")
    assert query.columns == view.columns
    assert query.fetchall() == view.fetchall()


def test_the_python_snippet_runs(walkthrough_scan, output2_scan, monkeypatch):
    code = re.search(r"```python\n(.*?)```", _walkthrough(), flags=re.S).group(1)
    monkeypatch.chdir(ROOT)
    scope: dict = {}
    exec(code, scope)  # the document's own lines
    assert scope["scan"].findings.height == walkthrough_scan.findings.height
    assert scope["con"].sql("select count(*) from findings").fetchall() == [
        (output2_scan.findings.height,)
    ]


if __name__ == "__main__":
    # Prints each walkthrough query's result as the document's table, for updating docs/sql.md
    # after a change to the rule pack or the sample data.
    os.chdir(ROOT)
    code = re.search(r"```python\n(.*?)```", _walkthrough(), flags=re.S).group(1)
    scan = forensics.scan(eval(re.search(r"forensics\.scan\((\[.*?\])\)", code).group(1)))
    for title, sql, _ in EXAMPLES:
        rel = scan.sql(sql)
        print(f"{title}\n\n| " + " | ".join(rel.columns) + " |")
        print("|" + "---|" * len(rel.columns))
        for row in rel.fetchall():
            print("| " + " | ".join(_cell(v) for v in row) + " |")
        print()
