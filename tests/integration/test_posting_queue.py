"""Posting times and the queue: ``PUT /api/v1/channels/NAME/slots``, posts made with ``"when": "queue"`` or
``"when": "next"``, and the wall times they keep across a clock change.

T0 is Monday 2026-06-01 12:00 UTC, 08:00 in the world's zone (America/New_York).
"""

from datetime import datetime, timedelta, timezone

from sqlalchemy import func, select

from models.actions.tables import ScheduledAction
from models.channels.tables import Channel
from models.core.database import db, read_session, write_session
from models.core.errors import InvalidInput
from models.core.policy import Policy
from models.posts.queue import plan_slot
from models.posts.tables import Post

EVERY_DAY = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]


def _add_channel(app, world, name):
    from models.core.runtime import runtime

    with app.app_context(), write_session() as session:
        session.add(Channel(workspace_id=world.workspace_id, name=name, kind="log", config={},
                            created_at=runtime().now()))


def _set_slots(client, world, channel, slots, role="ops"):
    return client.put(f"/api/v1/channels/{channel}/slots", headers=world.auth(role), json={"slots": slots})


def _queue(client, world, targets=("main",), when="queue", body="Fresh bread", **fields):
    return client.post("/api/v1/posts", headers=world.auth("marketer"),
                       json={"body": body, "targets": list(targets), "when": when, **fields})


def _local(client, world, post_id):
    return client.get(f"/api/v1/posts/{post_id}", headers=world.auth()).json["local_time"]


def _counts(app):
    with app.app_context():
        return tuple(db.session.scalar(select(func.count()).select_from(model)) for model in (Post, ScheduledAction))


def test_slots_are_put_and_read_back_in_their_stored_shape(client, world):
    answer = _set_slots(client, world, "main", [{"days": ["fri", "Mon"], "time": "13:00"},
                                                {"days": ["tue"], "time": "09:00"}])
    assert answer.status_code == 200, answer.json
    expected = {"channel": "main", "timezone": "America/New_York",
                "slots": [{"days": ["tue"], "time": "09:00"}, {"days": ["mon", "fri"], "time": "13:00"}]}
    assert answer.json == expected
    assert client.get("/api/v1/channels/main/slots", headers=world.auth("marketer")).json == expected
    assert _set_slots(client, world, "main", [], role="admin").json["slots"] == []


def test_bad_slots_get_a_clear_422_and_change_nothing(client, world):
    _set_slots(client, world, "main", [{"days": ["mon"], "time": "09:00"}])
    for slots, code in [
        ([{"days": ["funday"], "time": "09:00"}], "bad_day"),
        ([{"days": [], "time": "09:00"}], "bad_day"),
        ([{"days": ["mon"], "time": "25:00"}], "bad_time"),
        ([{"days": ["mon"], "time": "9am"}], "bad_time"),
        ([{"days": ["mon"], "time": "09:00:30"}], "bad_time"),
        ([{"days": ["mon", "tue"], "time": "10:00"}, {"days": ["tue"], "time": "10:00"}], "duplicate"),
        ([{"days": ["mon", "mon"], "time": "10:00"}], "duplicate"),
        ([{"days": ["mon"], "time": "10:00", "colour": "red"}], "unknown_field"),
        ("mon 09:00", "wrong_type"),
        ([["mon", "09:00"]], "wrong_type"),
        ([{"days": ["mon"], "time": "10:00"}] * 51, "too_many"),
    ]:
        answer = _set_slots(client, world, "main", slots)
        assert answer.status_code == 422, (slots, answer.json)
        assert (answer.json["error"]["code"], answer.json["error"]["field"]) == (code, "slots"), slots
    assert client.get("/api/v1/channels/main/slots", headers=world.auth()).json["slots"] == [
        {"days": ["mon"], "time": "09:00"}]
    assert client.put("/api/v1/channels/main/slots", headers=world.auth(), json={}).status_code == 422
    assert client.get("/api/v1/channels/nowhere/slots", headers=world.auth()).status_code == 404


def test_a_marketer_may_read_posting_times_but_not_set_them(client, world):
    assert _set_slots(client, world, "main", [{"days": ["mon"], "time": "09:00"}], role="marketer").status_code == 403
    assert client.get("/api/v1/channels/main/slots", headers=world.auth("marketer")).json["slots"] == []


def test_queue_takes_the_earliest_slot_free_on_every_target(app, client, world):
    _add_channel(app, world, "second")
    _set_slots(client, world, "main", [{"days": EVERY_DAY, "time": "09:00"}, {"days": EVERY_DAY, "time": "13:00"}])
    _set_slots(client, world, "second", [{"days": EVERY_DAY, "time": "13:00"}])
    first = _queue(client, world)
    assert first.status_code == 201, first.json
    assert (first.json["local_time"], first.json["publish_at"], first.json["from_queue"]) == (
        "2026-06-01T09:00", "2026-06-01T13:00:00Z", True)
    both = _queue(client, world, targets=("main", "second"))
    assert both.json["local_time"] == "2026-06-01T13:00"  # the only time both channels post at
    # A post given its time by hand holds its slot too.
    by_hand = client.post("/api/v1/posts", headers=world.auth("marketer"),
                          json={"body": "By hand", "targets": ["second"], "local_time": "2026-06-02T13:00"})
    assert by_hand.status_code == 201 and by_hand.json["from_queue"] is False
    assert _queue(client, world, targets=("main", "second")).json["local_time"] == "2026-06-03T13:00"
    assert _queue(client, world).json["local_time"] == "2026-06-02T09:00"
    # Taken out of the queue (archived), a post leaves its slot free.
    assert client.post(f"/api/v1/posts/{first.json['id']}/archive", headers=world.auth("marketer")).status_code == 200
    assert _queue(client, world).json["local_time"] == "2026-06-01T09:00"
    # Saved again with its own time unchanged, it stays in the queue.
    kept = client.patch(f"/api/v1/posts/{both.json['id']}", headers=world.auth("marketer"),
                        json={"local_time": both.json["local_time"], "body": "Fresh bread, both"})
    assert kept.status_code == 200 and kept.json["from_queue"] is True
    # Given a time by hand, it leaves its slot free as well.
    moved = client.patch(f"/api/v1/posts/{both.json['id']}", headers=world.auth("marketer"),
                         json={"local_time": "2026-06-20T10:00"})
    assert moved.status_code == 200 and moved.json["from_queue"] is False
    assert _queue(client, world, targets=("second",)).json["local_time"] == "2026-06-01T13:00"


def test_a_slot_already_past_today_is_not_taken(client, world, clock):
    _set_slots(client, world, "main", [{"days": EVERY_DAY, "time": "09:00"}])
    clock.set(datetime(2026, 6, 1, 13, 0, tzinfo=timezone.utc))  # 09:00 in New York: not strictly after now
    assert _queue(client, world).json["local_time"] == "2026-06-02T09:00"


def test_next_takes_the_first_slot_and_moves_the_queue_down_one_slot_each_with_lineage(app, client, world):
    _set_slots(client, world, "main", [{"days": EVERY_DAY, "time": "09:00"}])
    queued = [_queue(client, world, body=f"Post {n}").json for n in range(3)]
    assert [post["local_time"] for post in queued] == ["2026-06-01T09:00", "2026-06-02T09:00", "2026-06-03T09:00"]
    approved = client.post(f"/api/v1/posts/{queued[1]['id']}/approve", headers=world.auth("marketer")).json
    [old_row] = approved["actions"]
    before = _counts(app)
    preview = client.get("/api/v1/posts/queue-preview?targets=main&when=next", headers=world.auth("marketer"))
    assert preview.status_code == 200, preview.json
    expected_moves = [{"post_id": queued[0]["id"], "from": "2026-06-01T09:00", "to": "2026-06-02T09:00"},
                      {"post_id": queued[1]["id"], "from": "2026-06-02T09:00", "to": "2026-06-03T09:00"},
                      {"post_id": queued[2]["id"], "from": "2026-06-03T09:00", "to": "2026-06-04T09:00"}]
    assert preview.json["local_time"] == "2026-06-01T09:00" and preview.json["moves"] == expected_moves
    assert _counts(app) == before  # a preview writes nothing
    assert [_local(client, world, post["id"]) for post in queued] == [p["local_time"] for p in queued]
    jumped = _queue(client, world, when="next", body="Urgent")
    assert jumped.status_code == 201, jumped.json
    assert jumped.json["local_time"] == "2026-06-01T09:00" and jumped.json["queue"]["moves"] == expected_moves
    assert [_local(client, world, post["id"]) for post in queued] == [
        "2026-06-02T09:00", "2026-06-03T09:00", "2026-06-04T09:00"]
    shown = client.get(f"/api/v1/posts/{queued[1]['id']}", headers=world.auth()).json
    assert shown["status"] == "approved" and shown["from_queue"] is True
    old, new = shown["actions"]
    assert (old["id"], old["status"], old["cancel_kind"]) == (old_row["id"], "cancelled", "rescheduled")
    assert (new["status"], new["publish_at"], new["rescheduled_from"]) == (
        "queued", "2026-06-03T13:00:00Z", old_row["id"])
    # The queue after "next" is as compact as before: "queue" takes the slot after the last one.
    assert _queue(client, world).json["local_time"] == "2026-06-05T09:00"


def test_next_goes_past_a_post_given_its_time_by_hand(client, world):
    _set_slots(client, world, "main", [{"days": EVERY_DAY, "time": "09:00"}])
    by_hand = client.post("/api/v1/posts", headers=world.auth("marketer"),
                          json={"body": "Fixed", "targets": ["main"], "local_time": "2026-06-01T09:00"}).json
    queued = _queue(client, world).json
    assert queued["local_time"] == "2026-06-02T09:00"
    jumped = _queue(client, world, when="next", body="Urgent").json
    assert jumped["local_time"] == "2026-06-02T09:00"
    assert _local(client, world, queued["id"]) == "2026-06-03T09:00"
    assert _local(client, world, by_hand["id"]) == "2026-06-01T09:00"


def test_a_dst_change_between_slots_keeps_their_wall_times(client, world, clock):
    # Clocks fall back in New York on Sunday 2026-11-01: 09:00 is 13:00 UTC before, 14:00 UTC after.
    clock.set(datetime(2026, 10, 30, 16, 0, tzinfo=timezone.utc))
    _set_slots(client, world, "main", [{"days": EVERY_DAY, "time": "09:00"}])
    queued = [_queue(client, world, body=f"Post {n}").json for n in range(2)]
    assert [(p["local_time"], p["publish_at"]) for p in queued] == [
        ("2026-10-31T09:00", "2026-10-31T13:00:00Z"), ("2026-11-01T09:00", "2026-11-01T14:00:00Z")]
    jumped = _queue(client, world, when="next", body="Urgent").json
    assert (jumped["local_time"], jumped["publish_at"]) == ("2026-10-31T09:00", "2026-10-31T13:00:00Z")
    moved = [client.get(f"/api/v1/posts/{p['id']}", headers=world.auth()).json for p in queued]
    assert [(p["local_time"], p["publish_at"]) for p in moved] == [
        ("2026-11-01T09:00", "2026-11-01T14:00:00Z"), ("2026-11-02T09:00", "2026-11-02T14:00:00Z")]


def test_queue_refusals_are_clear_and_change_nothing(app, client, world):
    before = _counts(app)
    for fields, code, field in [
        ({}, "no_slots", "when"),
        ({"when": "later"}, "bad_when", "when"),
        ({"local_time": "2026-06-02T09:00"}, "conflicting", "when"),
        ({"targets": ["nowhere"]}, "unknown_channel", "targets"),
    ]:
        answer = _queue(client, world, **fields)
        assert answer.status_code == 422, (fields, answer.json)
        assert (answer.json["error"]["code"], answer.json["error"]["field"]) == (code, field), fields
    _add_channel(app, world, "second")
    _set_slots(client, world, "main", [{"days": ["mon"], "time": "09:00"}])
    _set_slots(client, world, "second", [{"days": ["tue"], "time": "09:00"}])
    answer = _queue(client, world, targets=("main", "second"))
    assert answer.status_code == 422 and answer.json["error"]["code"] == "no_common_slot"
    answer = _queue(client, world, body="")  # a body the save refuses: the slot is not taken either
    assert answer.status_code == 422 and answer.json["error"]["field"] == "body"
    assert _counts(app) == before
    assert client.get("/api/v1/posts/queue-preview?when=next", headers=world.auth()).status_code == 422


def test_no_free_slot_within_the_horizon_is_a_422(app, client, world, clock):
    _set_slots(client, world, "main", [{"days": ["mon"], "time": "09:00"}])
    assert _queue(client, world).json["local_time"] == "2026-06-01T09:00"
    with app.app_context(), read_session() as session:
        channel = session.scalar(select(Channel).where(Channel.workspace_id == world.workspace_id))
        short = Policy(queue_horizon=timedelta(days=6))
        try:
            plan_slot(session, world.workspace_id, [channel], "queue", now=clock.now(), policy=short)
        except InvalidInput as error:
            assert error.code == "no_free_slot" and error.field == "when"
        else:
            raise AssertionError("a slot was found beyond the horizon")
        plan = plan_slot(session, world.workspace_id, [channel], "queue", now=clock.now(),
                         policy=Policy(queue_horizon=timedelta(days=7)))
        assert str(plan.wall_date) == "2026-06-08"


def test_the_csv_dry_run_shows_the_slot_each_queued_line_takes_and_the_commit_takes_them(app, client, world):
    _set_slots(client, world, "main", [{"days": EVERY_DAY, "time": "09:00"}])
    taken = _queue(client, world, body="Already queued").json  # Mon 1 June 09:00
    data = ("body,targets,date,time\n"
            "First in the queue,main,,\n"
            "By hand,main,2026-06-10,10:00\n"
            "Second in the queue,main,,\n"
            "First in the queue,main,,\n"
            "Half a time,main,2026-06-10,\n"
            "Already queued,main,,\n").encode()
    report = client.post("/api/v1/posts.csv?dry_run=1", data=data,
                         headers={**world.auth("marketer"), "Content-Type": "text/csv"})
    assert report.status_code == 200, report.json
    assert [(line["fate"], line["message"]) for line in report.json["lines"]] == [
        ("queue", "takes the posting slot at Tue 02 Jun 2026, 09:00 EDT"),
        ("schedule", "at Wed 10 Jun 2026, 10:00 EDT"),
        ("queue", "takes the posting slot at Wed 03 Jun 2026, 09:00 EDT"),
        ("duplicate_line", "line 2 has the same body, for the queue"),
        ("bad_time", "'2026-06-10': the time must be a time like 09:30"),
        ("already_scheduled", f"post #{taken['id']} has the same body, in the queue"),
    ]
    committed = client.post(f"/api/v1/posts/imports/{report.json['import_id']}/commit",
                            headers=world.auth("marketer"))
    assert committed.status_code == 200 and committed.json["created"] == 3 and committed.json["changed"] == []
    posts = client.get("/api/v1/posts", headers=world.auth()).json["posts"]
    assert [(p["body"], p["local_time"], p["from_queue"]) for p in posts] == [
        ("Already queued", "2026-06-01T09:00", True), ("First in the queue", "2026-06-02T09:00", True),
        ("Second in the queue", "2026-06-03T09:00", True), ("By hand", "2026-06-10T10:00", False)]


def test_a_csv_without_date_and_time_columns_fills_the_queue_or_says_why_not(client, world):
    data = "body,targets\nOne,main\n".encode()
    report = client.post("/api/v1/posts.csv?dry_run=1", data=data,
                         headers={**world.auth("marketer"), "Content-Type": "text/csv"})
    assert report.status_code == 200, report.json
    [line] = report.json["lines"]
    assert line["fate"] == "no_slot" and "main has no posting times" in line["message"]
    _set_slots(client, world, "main", [{"days": ["wed"], "time": "18:30"}])
    report = client.post("/api/v1/posts.csv?dry_run=1", data=data,
                         headers={**world.auth("marketer"), "Content-Type": "text/csv"})
    assert report.json["lines"][0]["message"] == "takes the posting slot at Wed 03 Jun 2026, 18:30 EDT"


def test_posts_queued_at_once_never_take_one_slot(app, client, world):
    import threading

    _set_slots(client, world, "main", [{"days": EVERY_DAY, "time": "09:00"}])
    start = threading.Barrier(6)
    answers = []

    def queue_one(n):
        mine = app.test_client()
        start.wait()
        answers.append(_queue(mine, world, body=f"Racer {n}"))

    threads = [threading.Thread(target=queue_one, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(answer.status_code for answer in answers) == [201] * 6, [a.json for a in answers]
    assert sorted(answer.json["local_time"] for answer in answers) == [f"2026-06-0{day}T09:00" for day in range(1, 7)]
