"""JSON that people send, read strictly: one parser for every JSON body, whatever route it reaches.

Python's own reader accepts things that are not JSON, or that the databases and webhook
receivers downstream cannot take: ``NaN`` and ``Infinity``, ``1e999`` (which becomes an
infinity), nesting deep enough to exhaust the interpreter's recursion, lone UTF-16
surrogates (``"\\ud800"``, which no UTF-8 encoder will write) and NUL characters (which
PostgreSQL's ``jsonb`` refuses). Each is refused here with a clear 4xx naming the field it
sits under, before anything is stored.
"""

import json
import math

from models.core.errors import InvalidInput

MAX_DEPTH = 32  # objects and arrays inside one another; payloads are flat in practice
MAX_INTEGER_DIGITS = 30


class MalformedBody(InvalidInput):
    """The body is not a JSON object at all: a 400, not a 422."""

    status = 400
    code = "invalid_json"


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large for a JSON number")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits is too large")
    return int(text)


def parse_json_object(raw: bytes | str) -> dict:
    """A request body as a JSON object, every value inside it checked (see :func:`check_json_value`)."""
    try:
        body = json.loads(raw, parse_constant=_refuse_constant, parse_float=_finite, parse_int=_bounded_int)
    except RecursionError:
        raise InvalidInput(f"the request body is nested more than {MAX_DEPTH} levels deep",
                           code="too_deep") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedBody(f"the request body is not valid JSON: {_first_line(exc)}") from None
    if not isinstance(body, dict):
        raise MalformedBody("the request body must be a JSON object")
    for key, value in body.items():
        check_json_value(value, field=key, depth=1)
        check_text(key, field=key)
    return body


def check_json_value(value, *, field: str, depth: int = 0) -> None:
    """Refuse a value too deeply nested, or holding a lone surrogate or a NUL, naming ``field``.

    Walked without recursion, so a hostile document cannot exhaust the stack here either.
    """
    pending = [(value, depth)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, str):
            check_text(item, field=field)
        elif isinstance(item, (dict, list)):
            if level >= MAX_DEPTH:
                raise InvalidInput(f"{field} is nested more than {MAX_DEPTH} levels deep", field=field,
                                   code="too_deep")
            if isinstance(item, dict):
                for key, inner in item.items():
                    check_text(key, field=field)
                    pending.append((inner, level + 1))
            else:
                pending.extend((inner, level + 1) for inner in item)


def check_text(text: str, *, field: str) -> None:
    """Refuse a NUL or a lone surrogate in ``text``, naming ``field`` (JSON values, query strings, forms)."""
    if "\x00" in text:
        raise InvalidInput(f"{field} must not contain NUL characters", field=field, code="bad_character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{field} contains a lone UTF-16 surrogate, which is not text", field=field,
                           code="bad_character") from None


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0][:200]
