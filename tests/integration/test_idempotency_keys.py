"""Idempotency-Key as the IETF draft has it: a create runs once per key; a key reused for another
request is a 422; a key whose first request is still in flight is a 409; keys expire."""


from sqlalchemy import func, select

from models.accounts import idempotency
from models.accounts.idempotency import IdempotencyKey
from models.accounts.tables import ApiToken
from models.actions.tables import ScheduledAction
from models.core.database import read_session, write_session
from models.core.runtime import runtime
from models.posts.tables import Post
from tests.integration.test_actions_api import body


def _rows(app, model=ScheduledAction) -> int:
    with app.app_context(), read_session() as session:
        return session.scalar(select(func.count()).select_from(model))


def _create(client, world, key, role="admin", **overrides):
    return client.post("/api/v1/actions", json=body(**overrides), headers={**world.auth(role), "Idempotency-Key": key})


def test_the_same_key_and_request_creates_once_and_replays_the_first_answer(app, client, world):
    first = _create(client, world, "welcome-ada")
    again = _create(client, world, "welcome-ada")
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.json == first.json and again.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert _rows(app) == 1


def test_the_same_key_with_another_request_is_a_422_and_creates_nothing(app, client, world):
    assert _create(client, world, "k-1").status_code == 201
    reused = _create(client, world, "k-1", target_key="someone-else@example.com")
    assert reused.status_code == 422
    assert (reused.json["error"]["code"], reused.json["error"]["field"]) == ("idempotency_key_reused",
                                                                           "Idempotency-Key")
    on_another_route = client.post("/api/v1/posts", json=body(), headers={**world.auth(), "Idempotency-Key": "k-1"})
    assert on_another_route.status_code == 422
    assert _rows(app) == 1


def test_a_key_whose_first_request_is_in_flight_is_a_409_until_the_in_flight_timeout(app, client, world, clock):
    raw = client.application.json.dumps(body()).encode()
    with app.app_context(), write_session() as session:
        token_id = session.scalar(select(ApiToken.id).where(ApiToken.user_id == world.users["admin"]))
        idempotency.begin(session, workspace_id=world.workspace_id, token_id=token_id, key="slow-1",
                          print_=idempotency.fingerprint("POST", "/api/v1/actions", raw), now=clock.now(),
                          policy=runtime().policy)
    busy = client.post("/api/v1/actions", data=raw, content_type="application/json",
                       headers={**world.auth(), "Idempotency-Key": "slow-1"})
    assert busy.status_code == 409 and busy.json["error"]["code"] == "idempotency_key_in_flight"
    assert _rows(app) == 0
    clock.advance(minutes=6)  # the first request's process died: its key is released
    assert client.post("/api/v1/actions", data=raw, content_type="application/json",
                       headers={**world.auth(), "Idempotency-Key": "slow-1"}).status_code == 201


def test_a_failed_first_request_releases_its_key(app, client, world):
    refused = _create(client, world, "fix-me", channel="nowhere")
    assert refused.status_code == 422
    assert _create(client, world, "fix-me").status_code == 201
    assert _rows(app) == 1


def test_keys_belong_to_their_token_and_expire(app, client, world, clock):
    assert _create(client, world, "shared", role="admin").status_code == 201
    assert _create(client, world, "shared", role="ops", thing_id="other").status_code == 201  # another token
    clock.advance(hours=25)
    later = _create(client, world, "shared", role="admin", publish_at="2026-06-02T14:00:00Z")
    assert later.status_code == 201 and "Idempotent-Replayed" not in later.headers
    assert _rows(app) == 3


def test_forget_keys_deletes_the_records_older_than_a_day(app, client, world, clock):
    from jobs.clock import forget_keys_once

    _create(client, world, "old")
    clock.advance(hours=23)
    _create(client, world, "young", publish_at="2026-06-02T14:00:00Z")
    clock.advance(hours=2)
    with app.app_context():
        assert forget_keys_once()["forgotten"] == 1
    with app.app_context(), read_session() as session:
        assert list(session.scalars(select(IdempotencyKey.key))) == ["young"]


def test_post_creation_honours_the_key_too(app, client, world):
    post = {"body": "Fresh bread", "targets": ["main"], "local_time": "2026-06-10T09:00"}
    headers = {**world.auth("marketer"), "Idempotency-Key": "post-1"}
    first, again = (client.post("/api/v1/posts", json=post, headers=headers) for _ in range(2))
    assert (first.status_code, again.status_code, again.headers.get("Idempotent-Replayed")) == (201, 201, "true")
    assert _rows(app, Post) == 1
