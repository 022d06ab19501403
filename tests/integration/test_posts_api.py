"""``/api/v1/posts``: the happy paths, and every bad input answered with a 4xx that changes nothing."""

import io

from sqlalchemy import func, select, text

from models.actions.tables import ScheduledAction
from models.channels.tables import Channel
from models.core.database import db, write_session
from models.posts.tables import Post, PostTarget
from tests.conftest import make_world
from tests.media_files import png_bytes

# T0 is 2026-06-01T12:00Z, 08:00 in New York.
LATER = "2026-06-01T10:00"  # 14:00Z


def _new(client, world, **fields):
    body = {"body": "Fresh bread at nine", "targets": ["main"], "local_time": LATER, **fields}
    return client.post("/api/v1/posts", headers=world.auth("marketer"), json=body)


def _counts(app):
    with app.app_context():
        return tuple(db.session.scalar(select(func.count()).select_from(model))
                     for model in (Post, PostTarget, ScheduledAction))


def _add_channel(app, world, name, kind="log", config=None):
    with app.app_context(), write_session() as session:
        from models.core.runtime import runtime

        session.add(Channel(workspace_id=world.workspace_id, name=name, kind=kind, config=config or {},
                            created_at=runtime().now()))


def test_create_approve_and_show_a_post(client, world):
    photo = client.post("/api/v1/media", headers=world.auth("marketer"), content_type="multipart/form-data",
                        data={"file": (io.BytesIO(png_bytes()), "bread.png")}).json
    created = _new(client, world, media=[photo["id"]])
    assert created.status_code == 201, created.json
    post = created.json
    assert post["media"] == [photo["id"]]
    assert post["status"] == "draft" and post["publish_at"] == "2026-06-01T14:00:00Z"
    assert post["delivery"] == {"sent": 0, "total": 1, "label": "0 of 1 sent"}
    approved = client.post(f"/api/v1/posts/{post['id']}/approve", headers=world.auth("marketer"))
    assert approved.status_code == 200, approved.json
    assert approved.json["status"] == "approved"
    [row] = approved.json["actions"]
    assert (row["status"], row["origin"], row["publish_at"], row["thing_id"]) == (
        "queued", "reconciler", "2026-06-01T14:00:00Z", f"post:{post['id']}")
    shown = client.get(f"/api/v1/posts/{post['id']}", headers=world.auth("ops"))
    assert shown.json["targets"][0] == {"channel": "main", "status": "queued", "action_id": row["id"],
                                        "publish_at": "2026-06-01T14:00:00Z", "url": None}
    again = client.post(f"/api/v1/posts/{post['id']}/approve", headers=world.auth("marketer"))
    assert again.status_code == 200 and len(again.json["actions"]) == 1


def test_list_by_date_range_pages_in_wall_time_order(client, world):
    ids = [_new(client, world, local_time=stamp).json["id"]
           for stamp in ("2026-06-03T09:00", "2026-06-02T18:00", "2026-06-02T07:30", "2026-06-05T09:00")]
    listed = client.get("/api/v1/posts?from=2026-06-02&to=2026-06-03&limit=2", headers=world.auth())
    assert [p["id"] for p in listed.json["posts"]] == [ids[2], ids[1]]
    rest = client.get(f"/api/v1/posts?from=2026-06-02&to=2026-06-03&cursor={listed.json['next_cursor']}",
                      headers=world.auth())
    assert [p["id"] for p in rest.json["posts"]] == [ids[0]] and rest.json["next_cursor"] is None


def test_a_spring_forward_time_says_where_it_moved(client, app):
    world = make_world(app, name="Spring")
    answer = _new(client, world, local_time="2027-03-14T02:30")
    assert answer.status_code == 201
    assert answer.json["publish_at"] == "2027-03-14T07:30:00Z"
    assert "03:30" in answer.json["note"]


BAD_FIELDS = [
    ({"body": ""}, "body"),
    ({"body": 42}, "body"),
    ({"body": None}, "body"),
    ({"targets": []}, "targets"),
    ({"targets": "main"}, "targets"),
    ({"targets": ["main", "main"]}, "targets"),
    ({"targets": ["nope"]}, "targets"),
    ({"local_time": "tomorrow at nine"}, "local_time"),
    ({"local_time": "2026-02-30T09:00"}, "local_time"),
    ({"local_time": "2026-06-01T07:00"}, "local_time"),  # in the past
    ({"local_time": None}, "local_time"),
    ({"media": "https://x.test/a.png"}, "media"),
    ({"media": ["ftp://x.test/a.png"]}, "media"),
    ({"media": ["https://x.test/a.png"] * 11}, "media"),
    ({"colour": "blue"}, "colour"),
    ({"local_time": "9999-12-31T23:59"}, "local_time"),
    ({"local_time": "2040-01-01T09:00"}, "local_time"),
    ({"body": "nul\u0000byte"}, "body"),
    ({"targets": ["ma\u0000in"]}, "targets"),
    ({"targets": ["x" * 300]}, "targets"),
    ({"media": ["https://x.test/a\u0000.png"]}, "media"),
]


def test_bad_input_is_refused_and_changes_nothing(client, app, world):
    before = _counts(app)
    for fields, field in BAD_FIELDS:
        answer = _new(client, world, **fields)
        assert answer.status_code == 422, (fields, answer.json)
        assert answer.json["error"]["field"] == field, fields
    assert _counts(app) == before


def test_bodies_that_are_not_json_objects_are_400(client, world, app):
    before = _counts(app)
    for raw in (b"not json", b"[1, 2]", b""):
        answer = client.post("/api/v1/posts", headers={**world.auth(), "Content-Type": "application/json"}, data=raw)
        assert answer.status_code == 400 and answer.json["error"]["code"] == "invalid_json"
    assert _counts(app) == before


def test_the_body_must_fit_every_target(client, app, world):
    _add_channel(app, world, "toots", kind="mastodon")
    answer = _new(client, world, body="x" * 501, targets=["main", "toots"])
    assert answer.status_code == 422
    assert answer.json["error"]["field"] == "body" and "toots" in answer.json["error"]["message"]
    post = _new(client, world, body="x" * 501).json
    edit = client.patch(f"/api/v1/posts/{post['id']}", headers=world.auth(), json={"targets": ["main", "toots"]})
    assert edit.status_code == 422
    assert client.get(f"/api/v1/posts/{post['id']}", headers=world.auth()).json["revision"] == 1


def test_targets_of_another_workspace_are_unknown(client, app, world):
    other = make_world(app, name="Other")
    _add_channel(app, other, "theirs")
    answer = _new(client, world, targets=["theirs"])
    assert answer.status_code == 422 and answer.json["error"]["code"] == "unknown_channel"


def test_posts_are_scoped_to_the_token_workspace(client, app, world):
    other = make_world(app, name="Other")
    post = _new(client, world).json
    for method, path in (("get", ""), ("post", "/approve"), ("post", "/archive"), ("post", "/post-now"),
                         ("patch", "")):
        answer = getattr(client, method)(f"/api/v1/posts/{post['id']}{path}", headers=other.auth(),
                                         json={"body": "hi"} if method == "patch" else None)
        assert answer.status_code == 404, (method, path)
    assert client.get("/api/v1/posts", headers=other.auth()).json["posts"] == []
    for path in ("/api/v1/posts/99999999999999", "/api/v1/posts/2147483648/approve"):
        huge = client.get(path, headers=world.auth()) if "approve" not in path else client.post(path, headers=world.auth())
        assert huge.status_code == 404, huge.json
    assert client.get("/api/v1/posts").status_code == 401


def test_bad_list_queries_are_422(client, world):
    for query in ("from=June", "to=2026-13-01", "from=2026-06-05&to=2026-06-01", "status=live", "limit=0",
                  "cursor=@@@"):
        answer = client.get(f"/api/v1/posts?{query}", headers=world.auth())
        assert answer.status_code == 422, (query, answer.json)


def test_edits_refused_on_archived_posts_and_bad_edits_change_nothing(client, app, world):
    post = _new(client, world).json
    for bad in ({}, {"body": None}, {"local_time": "2026-06-01T25:00"}, {"targets": ["ghost"]}, {"id": 3}):
        answer = client.patch(f"/api/v1/posts/{post['id']}", headers=world.auth(), json=bad)
        assert answer.status_code == 422, (bad, answer.json)
    assert client.get(f"/api/v1/posts/{post['id']}", headers=world.auth()).json["revision"] == 1
    assert client.post(f"/api/v1/posts/{post['id']}/archive", headers=world.auth()).status_code == 200
    for path, body in (("", {"body": "new"}), ("/approve", None), ("/unapprove", None)):
        method = client.patch if path == "" else client.post
        answer = method(f"/api/v1/posts/{post['id']}{path}", headers=world.auth(), json=body)
        assert answer.status_code == 409 and answer.json["error"]["code"] == "wrong_state"


def test_approving_a_post_whose_time_has_passed_is_refused(client, world, clock):
    post = _new(client, world).json
    clock.advance(hours=3)
    answer = client.post(f"/api/v1/posts/{post['id']}/approve", headers=world.auth())
    assert answer.status_code == 422 and answer.json["error"]["code"] == "in_the_past"
    assert client.get(f"/api/v1/posts/{post['id']}", headers=world.auth()).json["status"] == "draft"


def test_a_garbage_zone_is_a_4xx_not_a_500(client, app, world):
    post = _new(client, world).json
    with app.app_context(), write_session() as session:
        session.execute(text("UPDATE workspaces SET timezone = 'Mars/Olympus' WHERE id = :id"),
                        {"id": world.workspace_id})
    shown = client.get(f"/api/v1/posts/{post['id']}", headers=world.auth())
    assert shown.status_code == 200 and shown.json["publish_at"] is None
    for answer in (client.post(f"/api/v1/posts/{post['id']}/approve", headers=world.auth()),
                   _new(client, world)):
        assert answer.status_code == 422 and answer.json["error"]["code"] == "bad_zone"


def test_post_now_bad_input(client, app, world):
    post = _new(client, world).json
    assert client.post(f"/api/v1/posts/{post['id']}/approve", headers=world.auth()).status_code == 200
    for body in ({"channel": "ghost"}, {"channel": 7}, {"other": 1}):
        answer = client.post(f"/api/v1/posts/{post['id']}/post-now", headers=world.auth(), json=body)
        assert answer.status_code == 422, (body, answer.json)
    assert _counts(app)[2] == 1  # the approved post's own row, nothing more
    sent = client.post(f"/api/v1/posts/{post['id']}/post-now", headers=world.auth())
    assert sent.status_code == 200 and sent.json["actions"][-1]["origin"] == "person"
    again = client.post(f"/api/v1/posts/{post['id']}/post-now", headers=world.auth(), json={"channel": "main"})
    assert again.status_code == 200  # the queued row is replaced, not doubled
    assert [a["status"] for a in again.json["actions"]] == ["cancelled", "cancelled", "queued"]
    assert again.json["actions"][2]["rescheduled_from"] == again.json["actions"][1]["id"]


def test_post_now_on_a_draft_is_409_not_approved_and_sends_nothing(client, app, world):
    post = _new(client, world).json
    answer = client.post(f"/api/v1/posts/{post['id']}/post-now", headers=world.auth())
    assert answer.status_code == 409
    assert answer.json["error"]["code"] == "not_approved" and "draft" in answer.json["error"]["message"]
    assert _counts(app)[2] == 0
    shown = client.get(f"/api/v1/posts/{post['id']}", headers=world.auth())
    assert shown.json["status"] == "draft"


def test_the_reconciler_row_of_a_post_cannot_be_rescheduled_alone(client, world):
    post = _new(client, world).json
    [row] = client.post(f"/api/v1/posts/{post['id']}/approve", headers=world.auth()).json["actions"]
    answer = client.post(f"/api/v1/actions/{row['id']}/reschedule", headers=world.auth(),
                         json={"local_time": "2026-06-02T09:00"})
    assert answer.status_code == 409 and answer.json["error"]["code"] == "follows_post"
    assert f"follows post #{post['id']};" in answer.json["error"]["message"]
    assert answer.json["error"]["post_id"] == post["id"]


def test_a_past_local_time_is_refused_naming_local_time_and_both_times_is_not_called_missing(client, world):
    base = {"action_type": "send_email", "channel": "main", "target_key": "a@example.test", "payload": {}}
    past = client.post("/api/v1/actions", headers=world.auth(), json={**base, "local_time": "2026-05-01T09:00"})
    assert past.status_code == 422
    assert (past.json["error"]["field"], past.json["error"]["code"]) == ("local_time", "in_the_past")
    assert past.json["error"]["message"].startswith("local_time ")
    both = client.post("/api/v1/actions", headers=world.auth(),
                       json={**base, "local_time": "2026-06-02T09:00", "publish_at": "2026-06-02T13:00:00Z"})
    assert both.status_code == 422 and both.json["error"]["code"] == "both_given"
    neither = client.post("/api/v1/actions", headers=world.auth(), json=base)
    assert neither.status_code == 422 and neither.json["error"]["code"] == "missing"
    made = client.post("/api/v1/actions", headers=world.auth(), json={**base, "local_time": "2026-06-02T09:00"})
    moved = client.post(f"/api/v1/actions/{made.json['id']}/reschedule", headers=world.auth(),
                        json={"local_time": "2026-05-01T09:00"})
    assert moved.status_code == 422 and moved.json["error"]["field"] == "local_time"
