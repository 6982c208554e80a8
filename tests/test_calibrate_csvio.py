"""The measurement-CSV reader: every error names the file, the line, the column and the value."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from partitioner.calibrate import csvio
from partitioner.errors import ConfigError


def _table(text: str, required: tuple[str, ...] = ("a", "b")) -> csvio.Table:
    return csvio.parse_csv(text, "m.csv", required, what="test CSV")


def test_rows_keep_their_file_lines_past_comments_and_blanks() -> None:
    t = _table("# a comment\na,b,extra\n\n1, 2 ,x\n# another\n3,4,y\n")
    assert t.columns == ("a", "b", "extra")
    assert [r.line for r in t.rows] == [4, 6]
    assert t.rows[0].cells == {"a": "1", "b": "2", "extra": "x"}
    assert csvio.number(t, t.rows[1], "b") == 4.0


def test_utf8_bom_is_ignored(tmp_path) -> None:
    p = tmp_path / "bom.csv"
    p.write_bytes("\ufeffa,b\n1,2\n".encode())
    assert csvio.read_csv(p, ("a", "b")).columns == ("a", "b")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"^m\.csv: empty test CSV: expected a header row with the columns a, b$"),
        ("a,c\n1,2\n", r"^m\.csv:1: missing column 'b' in the test CSV header \(has: a, c; needs: a, b\)$"),
        ("a,b,a\n1,2,3\n", r"^m\.csv:1: duplicate column 'a'"),
        ("a,,b\n1,2,3\n", r"^m\.csv:1: empty column name"),
        ("a,b\n", r"^m\.csv:1: no data rows"),
        ("a,b\n1,2\n3\n", r"^m\.csv:3: expected 2 cells as in the header, got 1$"),
    ],
)
def test_structure_errors(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _table(text).rows  # a ragged row is found as the rows are streamed


def test_rows_are_parsed_as_they_are_streamed() -> None:
    """A reader that stops at row 1 never parses the malformed rest (a 100 MB file stops at line 2)."""
    t = _table("a,b\n1,2\n" + "3\n" * 1000 + '"unterminated\n')
    first = next(t.stream())
    assert first.line == 2 and first.cells == {"a": "1", "b": "2"}
    with pytest.raises(ConfigError, match=r"^m\.csv:3: expected 2 cells"):
        t.rows


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        ("abc", r"^m\.csv:2: column 'a': not a number \(got 'abc'\)$"),
        ("-1.5", r"^m\.csv:2: column 'a': must be >= 0 \(got '-1\.5'\)$"),
        ("nan", r"^m\.csv:2: column 'a': must be a finite number \(got 'nan'\)$"),
        ("inf", r"must be a finite number \(got 'inf'\)"),
        ("", r"^m\.csv:2: column 'a': empty cell$"),
    ],
)
def test_number_errors(cell: str, message: str) -> None:
    t = _table(f"a,b\n{cell},1\n")
    with pytest.raises(ConfigError, match=message):
        csvio.number(t, t.rows[0], "a")


def test_positive_rejects_zero_and_integer_rejects_fractions() -> None:
    t = _table("a,b\n0,2.5\n")
    with pytest.raises(ConfigError, match=r"column 'a': must be > 0 \(got '0'\)"):
        csvio.number(t, t.rows[0], "a", positive=True)
    with pytest.raises(ConfigError, match=r"column 'b': not an integer \(got '2\.5'\)"):
        csvio.integer(t, t.rows[0], "b")
    with pytest.raises(ConfigError, match=r"column 'a': must be >= 1 \(got '0'\)"):
        csvio.integer(t, t.rows[0], "a", minimum=1)
    assert csvio.integer(_table("a,b\n8.0,1\n"), _table("a,b\n8.0,1\n").rows[0], "a") == 8


def test_missing_and_unreadable_files(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.csv: file not found$"):
        csvio.read_csv(tmp_path / "nope.csv", ("a",))
    bad = tmp_path / "bin.csv"
    bad.write_bytes(b"\xff\xfe\x00a")
    with pytest.raises(ConfigError, match=r"bin\.csv: cannot read"):
        csvio.read_csv(bad, ("a",))


@given(st.lists(st.tuples(st.floats(0, 1e6, allow_nan=False), st.text("xyz", min_size=1, max_size=5)),
                min_size=1, max_size=20))
def test_to_csv_round_trips_through_the_reader(rows: list[tuple[float, str]]) -> None:
    text = csvio.to_csv(("value", "name"), rows, comments=("written by a test",))
    t = csvio.parse_csv(text, "rt.csv", ("value", "name"))
    assert [(csvio.number(t, r, "value"), csvio.text(t, r, "name")) for r in t.rows] == rows
    assert t.rows[0].line == 3  # comment, header, first row
