"""Threads and first comments through the real API, reconciler, dispatch and providers, against loopback fakes
(tests/fakes/bluesky.py, tests/fakes/linkedin.py): each item a row of its own, minted when the one before it is
recorded published, sent as a reply to it; a failed item stops the rest until it is retried; nothing twice."""

import json
import subprocess
import sys
import time
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import select

from models.actions.tables import ScheduledAction
from models.channels.providers import bluesky
from models.core.database import read_session
from models.timing.clock import SystemClock
from tests.conftest import ROOT
from tests.fakes.bluesky import BlueskyFake
from tests.fakes.linkedin import LinkedInFake
from tests.integration.clock_helpers import make_channel, tick
from tests.integration.test_clock_processes import env_for

CREATE = "com.atproto.repo.createRecord"
LATER = "2026-06-01T10:00"  # 14:00Z; T0 is 12:00Z
AT_LATER = datetime.fromisoformat("2026-06-01T14:00:00+00:00")
THREAD = [{"body": "Second: the rye"}, {"body": "Third: the oven at dawn"}]


@pytest.fixture
def pds(httpserver):
    bluesky.forget_sessions()
    yield BlueskyFake(httpserver)
    bluesky.forget_sessions()


def sky(app, pds) -> str:
    # No rate: the default would hold a second row of one tick for the channel's next slot.
    make_channel(app, "bluesky", {"url": pds.url, "handle": pds.handle, "rate": "none"}, pds.password, name="sky")
    return "sky"


def create(client, world, **fields):
    body = {"body": "First: fresh bread at nine", "targets": ["sky"], "local_time": LATER, **fields}
    return client.post("/api/v1/posts", headers=world.auth("marketer"), json=body)


def approved_thread(client, world, **fields) -> int:
    created = create(client, world, thread=THREAD, **fields)
    assert created.status_code == 201, created.json
    approved = client.post(f"/api/v1/posts/{created.json['id']}/approve", headers=world.auth("marketer"))
    assert approved.status_code == 200, approved.json
    return created.json["id"]


def post_rows(app, post_id: int) -> dict[str, ScheduledAction]:
    """The post's rows by thing_id (each key has one row here)."""
    with app.app_context(), read_session() as session:
        found = session.scalars(select(ScheduledAction).where(ScheduledAction.thing_id.like(f"post:{post_id}%"))
                                .order_by(ScheduledAction.id)).all()
    return {row.thing_id: row for row in found}


def ref(pds, rkey: str) -> dict:
    return {"uri": pds.uri(rkey), "cid": pds.records[rkey][1]}


def assert_a_chain_of_three(pds):
    """Three records: the head, then two replies each answering the one before, all rooted at the head."""
    (head, (head_record, _)), (second, (second_record, _)), (third, (third_record, _)) = pds.records.items()
    assert [head_record["text"], second_record["text"], third_record["text"]] == [
        "First: fresh bread at nine", "Second: the rye", "Third: the oven at dawn"]
    assert "reply" not in head_record
    assert second_record["reply"] == {"root": ref(pds, head), "parent": ref(pds, head)}
    assert third_record["reply"] == {"root": ref(pds, head), "parent": ref(pds, second)}


def test_a_three_item_thread_posts_three_records_each_replying_to_the_one_before(app, client, world, pds, clock):
    sky(app, pds)
    post_id = approved_thread(client, world)
    assert list(post_rows(app, post_id)) == [f"post:{post_id}"]  # only the head waits for the post's time
    clock.set(AT_LATER)
    for sent in (1, 2, 3):  # each tick sends what the one before minted, due at once
        assert tick(app)["outcomes"] == {"published": 1}
        assert len(pds.records) == sent
    assert tick(app)["outcomes"] == {}
    assert_a_chain_of_three(pds)
    rows = post_rows(app, post_id)
    assert list(rows) == [f"post:{post_id}", f"post:{post_id}#2", f"post:{post_id}#3"]
    assert {(row.status, row.origin, row.target_key) for row in rows.values()} == {("published", "reconciler", "sky")}
    second, third = rows[f"post:{post_id}#2"], rows[f"post:{post_id}#3"]
    assert second.payload["reply_to"] == {"root": rows[f"post:{post_id}"].provider_id,
                                          "parent": rows[f"post:{post_id}"].provider_id}
    assert third.payload["reply_to"]["parent"] == second.provider_id
    shown = client.get(f"/api/v1/posts/{post_id}", headers=world.auth("ops")).json
    assert shown["thread"] == [{"body": "Second: the rye", "media": []}, {"body": "Third: the oven at dawn", "media": []}]
    assert [(item["item"], item["status"]) for item in shown["targets"][0]["follow_ups"]] == [
        (2, "published"), (3, "published")]
    # The reconciler minds heads only: its pass leaves the items as they are.
    from jobs.clock import reconcile_once
    with app.app_context():
        summary = reconcile_once()
    assert (summary["inserted"], summary["removed"], summary["rescheduled"]) == (0, 0, 0)
    assert post_rows(app, post_id).keys() == rows.keys()


def test_a_variant_replaces_the_head_only_and_every_target_sends_the_same_thread(app, client, world, pds, clock):
    """Thread items are shared by every target that takes threads: a target's variant changes its head, never its
    replies (models/posts/content.py, docs/operations.md)."""
    sky(app, pds)
    make_channel(app, "bluesky", {"url": pds.url, "handle": pds.handle, "rate": "none"}, pds.password, name="sky-two")
    post_id = approved_thread(client, world, targets=["sky", "sky-two"],
                              variants={"sky": {"body": "First, for the first account: bread at nine"}})
    clock.set(AT_LATER)
    for _ in range(3):  # the heads, then each one's item 2, then each one's item 3
        assert tick(app)["outcomes"] == {"published": 2}
    sent = sorted(record["text"] for record, _ in pds.records.values())
    assert sent == sorted(["First, for the first account: bread at nine", "First: fresh bread at nine",
                           "Second: the rye", "Second: the rye", "Third: the oven at dawn", "Third: the oven at dawn"])
    rows = post_rows_by_target(app, post_id)
    for target in ("sky", "sky-two"):
        assert [row.payload["body"] for row in rows[target][1:]] == ["Second: the rye", "Third: the oven at dawn"]


def post_rows_by_target(app, post_id: int) -> dict[str, list[ScheduledAction]]:
    with app.app_context(), read_session() as session:
        found = session.scalars(select(ScheduledAction).where(ScheduledAction.thing_id.like(f"post:{post_id}%"))
                                .order_by(ScheduledAction.id)).all()
    by_target: dict[str, list[ScheduledAction]] = {}
    for row in found:
        by_target.setdefault(row.target_key, []).append(row)
    return by_target


def test_a_failed_second_item_leaves_the_third_unsent_until_a_retry_then_the_thread_continues(
        app, client, world, pds, clock):
    sky(app, pds)
    post_id = approved_thread(client, world)
    clock.set(AT_LATER)
    assert tick(app)["outcomes"] == {"published": 1}
    pds.fail_next(CREATE, 400, "InvalidRequest", "Record is invalid")
    assert tick(app)["outcomes"] == {"failed:permanent": 1}
    for _ in range(2):
        clock.advance(minutes=5)
        assert tick(app)["outcomes"] == {}
    assert len(pds.records) == 1  # only the head: the third item was never minted
    rows = post_rows(app, post_id)
    assert list(rows) == [f"post:{post_id}", f"post:{post_id}#2"]
    failed = rows[f"post:{post_id}#2"]
    assert failed.status == "failed"
    follow_ups = client.get(f"/api/v1/posts/{post_id}", headers=world.auth("ops")).json["targets"][0]["follow_ups"]
    assert follow_ups[0]["status"] == "failed" and "Record is invalid" in follow_ups[0]["error"]
    assert follow_ups[1] == {"item": 3, "status": "stopped", "stopped_by": 2, "action_id": None, "provider_id": None}
    # The dashboard says so on the post, and the failed item's own timeline leads back to it.
    from tests.web.conftest import Browser
    page = Browser(app.test_client(), "marketer", world).get(f"/posts/{post_id}").get_data(as_text=True)
    assert f'href="/actions/{failed.id}">failed</a> · item 3 stopped (waits for item 2: retry it to go on)' in page
    timeline = Browser(app.test_client(), "ops", world).get(f"/actions/{failed.id}").get_data(as_text=True)
    assert f'href="/posts/{post_id}"' in timeline and "Record is invalid" in timeline

    retried = client.post(f"/api/v1/actions/{failed.id}/retry", headers=world.auth("admin"))
    assert retried.status_code == 200, retried.json
    assert tick(app)["outcomes"] == {"published": 1}
    assert tick(app)["outcomes"] == {"published": 1}
    assert tick(app)["outcomes"] == {}
    assert_a_chain_of_three(pds)
    assert len(pds.named(CREATE)) == 4  # head, the refused second, the retried second, the third
    assert {row.status for row in post_rows(app, post_id).values()} == {"published"}


def test_archiving_a_post_cancels_its_queued_item_and_mints_no_more(app, client, world, pds, clock):
    sky(app, pds)
    post_id = approved_thread(client, world)
    clock.set(AT_LATER)
    tick(app)
    archived = client.post(f"/api/v1/posts/{post_id}/archive", headers=world.auth("marketer"))
    assert archived.status_code == 200, archived.json
    rows = post_rows(app, post_id)
    assert (rows[f"post:{post_id}#2"].status, rows[f"post:{post_id}#2"].cancel_kind) == ("cancelled", "person")
    assert tick(app)["outcomes"] == {}
    assert len(pds.records) == 1


def test_a_first_comment_on_linkedin_goes_under_the_post_it_follows(app, client, world, httpserver, clock):
    fake = LinkedInFake(httpserver, token="li-token")
    make_channel(app, "linkedin", {"url": fake.base, "author": "urn:li:person:8675309"}, "li-token", name="page")
    created = client.post("/api/v1/posts", headers=world.auth("marketer"), json={
        "body": "Fresh bread at nine", "targets": ["page"], "local_time": LATER,
        "first_comment": "The menu: rye, spelt (and more)"})
    assert created.status_code == 201, created.json
    assert created.json["first_comment"] == {"body": "The menu: rye, spelt (and more)", "media": []}
    post_id = created.json["id"]
    assert client.post(f"/api/v1/posts/{post_id}/approve", headers=world.auth("marketer")).status_code == 200
    clock.set(AT_LATER)
    assert tick(app)["outcomes"] == {"published": 1}
    assert tick(app)["outcomes"] == {"published": 1}
    assert tick(app)["outcomes"] == {}
    [post] = fake.posts
    [comment] = fake.comments
    assert comment["object"] == post["urn"] and comment["actor"] == "urn:li:person:8675309"
    assert comment["message"] == {"text": "The menu: rye, spelt (and more)"}  # plain text, not Little Text
    [seen] = fake.requests("POST", f"/rest/socialActions/{post['urn']}/comments")
    assert seen.headers["Linkedin-Version"] and seen.headers["X-Restli-Protocol-Version"] == "2.0.0"
    rows = post_rows(app, post_id)
    row = rows[f"post:{post_id}#comment"]
    assert (row.status, row.origin, row.provider_id) == ("published", "reconciler", comment["commentUrn"])
    assert row.payload["comment_on"] == post["urn"]


def test_a_network_without_replies_or_comments_refuses_a_thread_at_save_naming_the_channel(app, client, world, pds):
    sky(app, pds)
    refused = create(client, world, targets=["sky", "main"], thread=THREAD)  # main is a log channel
    assert refused.status_code == 422
    error = refused.json["error"]
    assert (error["field"], error["code"]) == ("thread", "no_follow_ups") and "main" in error["message"]
    refused = create(client, world, targets=["main"], first_comment="Hello")
    assert refused.status_code == 422 and refused.json["error"]["field"] == "first_comment"
    assert "main" in refused.json["error"]["message"]
    # A thread's item too long for Bluesky is refused for that item, and nothing is saved.
    too_long = create(client, world, thread=[{"body": "x" * 301}])
    assert too_long.status_code == 422
    assert (too_long.json["error"]["field"], too_long.json["error"]["channel"]) == ("thread[0].body", "sky")
    assert client.get("/api/v1/posts", headers=world.auth("ops")).json["posts"] == []
    # An existing thread refuses a target added later that cannot carry it.
    post_id = create(client, world, thread=THREAD).json["id"]
    changed = client.patch(f"/api/v1/posts/{post_id}", headers=world.auth("marketer"), json={"targets": ["sky", "main"]})
    assert changed.status_code == 422 and changed.json["error"]["code"] == "no_follow_ups"


@pytest.mark.slow
def test_racing_ticks_post_each_item_of_a_thread_once_and_in_order(app_config, database_url, tmp_path, httpserver):
    """Three tick processes released at one instant, each ticking five times over a thread sent now: three
    records, each created once, each replying to the one before."""
    from webapp import create_app

    from tests.conftest import make_world
    from tests.integration.clock_helpers import make_channel as channel_in

    app_config["TICKWORK_CLOCK"] = SystemClock()
    app = create_app(app_config)
    client = app.test_client()
    world = make_world(app)
    bluesky.forget_sessions()
    pds = BlueskyFake(httpserver)
    channel_in(app, "bluesky", {"url": pds.url, "handle": pds.handle, "rate": "none"}, pds.password, name="sky")
    soon = (datetime.now(ZoneInfo("America/New_York")) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
    post_id = approved_thread(client, world, local_time=soon)
    sent_now = client.post(f"/api/v1/posts/{post_id}/post-now", headers=world.auth("marketer"))
    assert sent_now.status_code == 200, sent_now.json
    racers = [subprocess.Popen([sys.executable, "-m", "tests.integration.clock_racer", str(tmp_path), "5"], cwd=ROOT,
                               env=env_for(database_url, "immediate"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True) for _ in range(3)]
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("ready-*"))) < len(racers):
        assert time.monotonic() < deadline and all(r.poll() is None for r in racers), "a racer died or hung"
        time.sleep(0.05)
    (tmp_path / "go").write_text(str(time.time() + 0.2))
    outputs = [racer.communicate(timeout=240) for racer in racers]
    assert [racer.returncode for racer in racers] == [0] * 3, [err[-2000:] for _, err in outputs]
    summaries = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    assert all("outcomes" in summary for summary in summaries)  # every racer ticked to the end
    assert len(pds.named(CREATE)) == 3  # each item handed to Bluesky once
    assert_a_chain_of_three(pds)
    rows = post_rows(app, post_id)
    published = [row for row in rows.values() if row.status == "published"]
    assert sorted(row.thing_id for row in published) == [f"post:{post_id}", f"post:{post_id}#2", f"post:{post_id}#3"]
    bluesky.forget_sessions()
    from models.core.database import db
    with app.app_context():
        db.engine.dispose()


def test_media_used_only_by_a_thread_item_cannot_be_deleted_while_the_post_lives(app, client, world, pds):
    import io

    from tests.media_files import png_bytes

    sky(app, pds)
    photo = client.post("/api/v1/media", headers=world.auth("marketer"), content_type="multipart/form-data",
                        data={"file": (io.BytesIO(png_bytes()), "rye.png")}).json
    created = create(client, world, thread=[{"body": "The rye", "media": [photo["id"]]}])
    assert created.status_code == 201, created.json
    refused = client.delete(f"/api/v1/media/{photo['id']}", headers=world.auth())
    assert refused.status_code == 409 and refused.json["error"]["used_by"] == [f"post {created.json['id']}"]
    assert client.post(f"/api/v1/posts/{created.json['id']}/archive", headers=world.auth()).status_code == 200
    assert client.delete(f"/api/v1/media/{photo['id']}", headers=world.auth()).status_code == 204


def test_a_follow_up_that_cannot_be_minted_never_undoes_the_publish_it_follows(app, client, world, pds, clock,
                                                                               monkeypatch):
    from models.posts import threads

    def broken(*args):
        raise RuntimeError("a fault while minting")

    sky(app, pds)
    post_id = approved_thread(client, world)
    monkeypatch.setattr(threads, "next_follow_ups", broken)
    clock.set(AT_LATER)
    assert tick(app)["outcomes"] == {"published": 1}
    rows = post_rows(app, post_id)
    assert list(rows) == [f"post:{post_id}"] and rows[f"post:{post_id}"].status == "published"
    assert len(pds.records) == 1
