"""Every JSON body goes through one strict parser: no input a client can send reaches a 500 or stores non-JSON.

Each case here answered 500 (or stored ``NaN`` on SQLite) before the parser existed.
"""

import pytest
from sqlalchemy import func, select

from models.actions.tables import ScheduledAction
from models.core.database import read_session
from models.posts.tables import Post
from tests.factories import add_action

GOOD = ('{"action_type": "send_email", "channel": "main", "target_key": "ada@example.com", '
        '"publish_at": "2026-06-01T14:00:00Z", "payload": %s}')


def _count(app, model) -> int:
    with app.app_context(), read_session() as session:
        return session.scalar(select(func.count()).select_from(model))


def _post(client, world, url, raw: str):
    return client.post(url, data=raw.encode("utf-8"), content_type="application/json", headers=world.auth("admin"))


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


CASES = [
    ("a body of 100,000 nested arrays", "/api/v1/actions", nested(100_000), 422, None),
    ("5,000 nested arrays inside payload", "/api/v1/actions", GOOD % nested(5_000), 422, None),
    ("40 nested arrays inside payload", "/api/v1/actions", GOOD % nested(40), 422, "payload"),
    ("a lone surrogate in payload", "/api/v1/actions", GOOD % '{"x": "\\ud800"}', 422, "payload"),
    ("a lone surrogate as target_key", "/api/v1/actions",
     GOOD.replace('"ada@example.com"', '"\\udc00"') % "{}", 422, "target_key"),
    ("a NUL inside payload", "/api/v1/actions", GOOD % '{"x": "a\\u0000b"}', 422, "payload"),
    ("NaN inside payload", "/api/v1/actions", GOOD % '{"x": NaN}', 400, None),
    ("-Infinity inside payload", "/api/v1/actions", GOOD % '{"x": -Infinity}', 400, None),
    ("1e999 inside payload", "/api/v1/actions", GOOD % '{"x": 1e999}', 400, None),
    ("an integer of 5,000 digits", "/api/v1/actions", GOOD % ('{"x": %s}' % ("9" * 5000)), 400, None),
    ("50,000 nested arrays as a post's body", "/api/v1/posts",
     '{"body": %s, "targets": ["main"], "local_time": "2026-06-10T09:00"}' % nested(50_000), 422, None),
    ("a lone surrogate in a post's body", "/api/v1/posts",
     '{"body": "hi \\ud800", "targets": ["main"], "local_time": "2026-06-10T09:00"}', 422, "body"),
    ("not JSON at all", "/api/v1/actions", "{oops", 400, None),
    ("a JSON array, not an object", "/api/v1/actions", "[1, 2]", 400, None),
]


# Each case is named by its description: the bodies themselves are too large to be test ids.
@pytest.mark.parametrize("case, url, raw, status, field", [pytest.param(*case, id=case[0]) for case in CASES])
def test_a_hostile_json_body_is_a_clear_4xx_and_stores_nothing(app, client, world, case, url, raw, status, field):
    before = (_count(app, ScheduledAction), _count(app, Post))
    answer = _post(client, world, url, raw)
    assert answer.status_code == status, (case, answer.status_code, answer.get_data(as_text=True)[:300])
    error = answer.json["error"]
    assert error["code"] in ("invalid_json", "too_deep", "bad_character"), case
    if field:
        assert error["field"] == field, case
    assert (_count(app, ScheduledAction), _count(app, Post)) == before


def test_a_reschedule_with_a_nested_body_is_a_4xx_and_the_row_stays_queued(app, client, world):
    action_id = add_action(app, world)
    answer = _post(client, world, f"/api/v1/actions/{action_id}/reschedule", nested(100_000))
    assert answer.status_code == 422
    with app.app_context(), read_session() as session:
        assert session.get(ScheduledAction, action_id).status == "queued"


def test_a_body_over_the_limit_is_a_413_in_json(client, world):
    answer = _post(client, world, "/api/v1/actions", GOOD % ('{"x": "%s"}' % ("a" * (2 * 1024 * 1024))))
    assert answer.status_code == 413 and answer.json["error"]["code"] == "request_entity_too_large"


def test_a_clean_body_with_unicode_nesting_and_numbers_is_stored_as_sent(app, client, world):
    payload = '{"greeting": "héllo 👋 שלום", "n": [1, 2.5, -3e2], "deep": [[[[{"a": null}]]]]}'
    answer = _post(client, world, "/api/v1/actions", GOOD % payload)
    assert answer.status_code == 201, answer.json
    assert answer.json["payload"] == {"greeting": "héllo 👋 שלום", "n": [1, 2.5, -300.0], "deep": [[[[{"a": None}]]]]}
