"""Keyset paging: the "strictly after this row" condition and the opaque cursor that carries it.

Every list in Tickwork is ordered by a tuple of columns ending in the id (``(publish_at, id)``
for actions, the brief's invariant 7; ``(wall_date, wall_time, id)`` for posts). A page
continues from the last row it showed with :func:`after`, and hands that row's key to the
client as a cursor (:func:`encode_cursor`), which :func:`decode_cursor` reads back or refuses.
"""

import base64
from collections.abc import Callable, Sequence

from sqlalchemy import and_, or_

from models.core.errors import InvalidInput

_SEPARATOR = "|"


def after(columns: Sequence, values: Sequence, *, descending: bool = False):
    """Rows strictly after ``values`` in the order of ``columns`` (strictly before, when descending).

    ``(a, b)`` after ``(x, y)`` is ``a > x OR (a = x AND b > y)``, and so on for more columns.
    """
    if len(columns) != len(values) or not columns:
        raise ValueError("a keyset needs one value per column")
    beyond = (lambda column, value: column < value) if descending else (lambda column, value: column > value)
    branches = []
    for position, (column, value) in enumerate(zip(columns, values)):
        equal_before = [earlier == known for earlier, known in zip(columns[:position], values[:position])]
        branches.append(and_(*equal_before, beyond(column, value)))
    return or_(*branches)


def encode_cursor(*parts: str) -> str:
    """An opaque, URL-safe cursor carrying ``parts`` (a row's sort key, as text)."""
    raw = _SEPARATOR.join(parts)
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, *parsers: Callable[[str], object], field: str = "cursor") -> tuple:
    """The parts of a cursor this API gave out, each read by its parser; anything else is a 422."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        parts = base64.urlsafe_b64decode(padded.encode()).decode().split(_SEPARATOR)
        if len(parts) != len(parsers):
            raise ValueError
        return tuple(parse(part) for parse, part in zip(parsers, parts))
    except (ValueError, UnicodeDecodeError, OverflowError, TypeError):
        raise InvalidInput("cursor is not one this API gave out", field=field, code="bad_cursor") from None
