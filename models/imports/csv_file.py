"""Reading an uploaded CSV file: refused whole with a clear reason, or read into lines.

Pure functions: no database, no Flask.

- UTF-8, with or without a byte-order mark. Anything else is refused with the line of the
  first byte that is not UTF-8 ("line 7 is not UTF-8"), or as UTF-16 when it says so.
- The first non-empty line is the header: column names, each once, none empty; names are
  compared without case and surrounding spaces.
- A line is at most :data:`MAX_LINE_BYTES` bytes, and a file at most :data:`MAX_LINES`
  lines: a megabyte on one line is a broken export, and the refusal says which line.
- A record with more fields than the header is kept, marked malformed, so the report names
  it; a record with fewer gets empty values for the missing columns.
"""

import csv
import io
from dataclasses import dataclass, field

from models.core.errors import InvalidInput

MAX_LINES = 100_000
MAX_LINE_BYTES = 64 * 1024
MAX_COLUMNS = 100
MAX_COLUMN_NAME = 64
BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


@dataclass(frozen=True)
class CsvLine:
    """One record of the file: where it starts, its values by column, and what is wrong with its shape."""

    number: int  # the physical line it starts on; the header is line 1 (or later, after blank lines)
    values: dict[str, str] = field(default_factory=dict)
    problem: str | None = None  # a record the checker is not asked about


@dataclass(frozen=True)
class CsvFile:
    columns: list[str]
    lines: list[CsvLine]


def _refuse(message: str, code: str, line: int | None = None) -> InvalidInput:
    detail = {"line": line} if line is not None else {}
    return InvalidInput(message, field="file", code=code, **detail)


def _check_lines(data: bytes) -> None:
    """Refuse a line longer than MAX_LINE_BYTES, naming it, before anything is decoded."""
    start, number = 0, 1
    while True:
        end = data.find(b"\n", start)
        stop = len(data) if end < 0 else end
        if stop - start > MAX_LINE_BYTES:
            raise _refuse(f"line {number} is {stop - start:,} bytes long; a line may be at most "
                          f"{MAX_LINE_BYTES:,} bytes", "line_too_long", number)
        if end < 0:
            return
        start, number = end + 1, number + 1


def decode(data: bytes) -> str:
    """The file's text: UTF-8 with or without a BOM; anything else refused with its line."""
    if not data.strip():
        raise _refuse("the file is empty; it needs a header line and at least one line", "empty")
    if data.startswith(_UTF16_BOMS):
        raise _refuse("the file is UTF-16; save it as UTF-8 (CSV UTF-8 in most spreadsheets)", "not_utf8", 1)
    if data.startswith(BOM):
        data = data[len(BOM):]
    _check_lines(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise _refuse(f"line {line} is not UTF-8 (byte 0x{data[exc.start]:02x} at position {column}); "
                      "save the file as UTF-8", "not_utf8", line) from None
    nul = text.find("\x00")
    if nul >= 0:
        raise _refuse(f"line {text.count(chr(10), 0, nul) + 1} contains a NUL character; this is not a text file",
                      "not_text", text.count("\n", 0, nul) + 1)
    return text


def _header(row: list[str], number: int) -> list[str]:
    columns = [name.strip().lower() for name in row]
    if len(columns) > MAX_COLUMNS:
        raise _refuse(f"the header has {len(columns)} columns; at most {MAX_COLUMNS}", "bad_header", number)
    for position, name in enumerate(columns, start=1):
        if not name:
            raise _refuse(f"the header (line {number}) has an empty column name at position {position}",
                          "bad_header", number)
        if len(name) > MAX_COLUMN_NAME:
            raise _refuse(f"the header (line {number}) has a column name longer than {MAX_COLUMN_NAME} characters",
                          "bad_header", number)
    seen = set()
    for name in columns:
        if name in seen:
            raise _refuse(f"the header (line {number}) names the column {name!r} twice", "bad_header", number)
        seen.add(name)
    return columns


def read_csv(data: bytes, *, max_lines: int = MAX_LINES) -> CsvFile:
    """The file's header and its records, or :class:`InvalidInput` (field ``file``) saying what is wrong.

    A kind of file may take fewer lines than :data:`MAX_LINES` (``max_lines``); one with more
    is refused whole, before anything is checked.
    """
    text = decode(data)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    columns: list[str] | None = None
    lines: list[CsvLine] = []
    ended = 0  # the physical line the previous record ended on
    try:
        for row in reader:
            number, ended = ended + 1, reader.line_num
            if not any(value.strip() for value in row):
                continue  # a blank line
            if columns is None:
                columns = _header(row, number)
                continue
            if len(lines) >= max_lines:
                raise _refuse(f"the file has more than {max_lines:,} lines; split it into files of at most "
                              f"{max_lines:,}", "too_many_lines")
            if len(row) > len(columns):
                lines.append(CsvLine(number, problem=f"has {len(row)} fields; the header has {len(columns)}"))
                continue
            values = {name: (row[i].strip() if i < len(row) else "") for i, name in enumerate(columns)}
            lines.append(CsvLine(number, values))
    except csv.Error as exc:
        raise _refuse(f"line {reader.line_num}: {exc}", "bad_csv", reader.line_num) from None
    if columns is None:
        raise _refuse("the file has no header line", "missing_header")
    if not lines:
        raise _refuse("the file has a header and no lines to import", "empty")
    return CsvFile(columns, lines)
