"""Turning request bodies and query strings into validated values, or a 4xx naming the field."""

import re
from datetime import datetime, timezone

from flask import request

from models.core.errors import InvalidInput
from models.core.json_input import parse_json_object
from models.core.time_input import parse_local_time, resolve_typed
from models.timing.wall_time import ResolvedTime
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?([Zz]|[+-]\d{2}:\d{2})$")


def json_body() -> dict:
    """The request's JSON object, read by the one strict parser every JSON route uses."""
    return parse_json_object(request.get_data(cache=True))


def required_string(body: dict, field: str, *, max_length: int = 255) -> str:
    if field not in body or body[field] is None:
        raise InvalidInput(f"{field} is required", field=field, code="missing")
    return optional_string(body, field, max_length=max_length)


def optional_string(body: dict, field: str, *, max_length: int = 255) -> str | None:
    value = body.get(field)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string", field=field, code="wrong_type")
    value = value.strip()
    if not value:
        raise InvalidInput(f"{field} must not be empty", field=field, code="missing")
    if "\x00" in value:
        raise InvalidInput(f"{field} must not contain NUL characters", field=field, code="bad_character")
    if len(value) > max_length:
        raise InvalidInput(f"{field} is longer than {max_length} characters", field=field, code="too_long")
    return value


def parse_instant(value, field: str) -> datetime:
    """An RFC 3339 timestamp with an offset, as aware UTC."""
    if not isinstance(value, str) or not RFC3339.match(value.strip()):
        raise InvalidInput(
            f"{field} must be an RFC 3339 time with an offset, like 2026-05-20T09:00:00Z", field=field, code="bad_time"
        )
    try:
        return datetime.fromisoformat(value.strip().replace("z", "Z")).astimezone(timezone.utc)
    except ValueError:
        raise InvalidInput(f"{field} is not a real date and time", field=field, code="bad_time") from None
    except OverflowError:
        raise InvalidInput(f"{field} is outside the years 1 to 9999 in UTC", field=field, code="bad_time") from None


def parse_schedule_time(body: dict, zone: str) -> tuple[datetime, ResolvedTime | None]:
    """Exactly one of ``publish_at`` or ``local_time``; returns the instant and any wall-time note."""
    has_instant = body.get("publish_at") is not None
    has_local = body.get("local_time") is not None
    if has_instant and has_local:
        raise InvalidInput("give either publish_at or local_time, not both", field="local_time", code="both_given")
    if not has_instant and not has_local:
        raise InvalidInput("give publish_at (RFC 3339 with an offset) or local_time (YYYY-MM-DDTHH:MM in the "
                           "workspace's zone)", field="publish_at", code="missing")
    if has_instant:
        return parse_instant(body["publish_at"], "publish_at"), None
    resolved = resolve_typed(*parse_local_time(body["local_time"], "local_time"), zone, "local_time")
    return resolved.instant, resolved


def query_instant(name: str) -> datetime | None:
    raw = request.args.get(name)
    return None if raw is None else parse_instant(raw, name)


def query_limit(default: int = 50, maximum: int = 200) -> int:
    raw = request.args.get("limit")
    if raw is None:
        return default
    if not raw.isdecimal() or not 1 <= int(raw) <= maximum:
        raise InvalidInput(f"limit must be a whole number from 1 to {maximum}", field="limit", code="bad_limit")
    return int(raw)
