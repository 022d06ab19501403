"""Each network's reply and comment, as its API documents them, against the loopback fakes: X's
``reply.in_reply_to_tweet_id``, Mastodon's ``in_reply_to_id``, Threads' ``reply_to_id`` on the container, and the
first comment under a Facebook Page post and an Instagram media (``POST /{id}/comments``)."""

from datetime import datetime

import pytest

from models.channels.providers import SendContext, SendOutcome, instagram
from models.channels.providers.base import Delivery
from models.channels.providers.http import http_client
from tests.conftest import T0
from tests.fakes.mastodon import FakeMastodon
from tests.fakes.meta import MetaGraph
from tests.fakes.x import XFake
from tests.integration.clock_helpers import make_channel, tick

LATER = "2026-06-01T10:00"  # 14:00Z; T0 is 12:00Z
AT_LATER = datetime.fromisoformat("2026-06-01T14:00:00+00:00")
ACCOUNT = "17841400000000001"
REPLY = [{"body": "And the rye is back"}]


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_POLICY"] = {"provider_timeout": 10, "task_timeout": 20, "recovery_timeout": 60}
    return app_config


def send_post(app, client, world, clock, target: str, **fields) -> dict:
    """Create, approve and send a post to ``target`` with its thread or first comment; the post as the API shows it."""
    created = client.post("/api/v1/posts", headers=world.auth("marketer"),
                          json={"body": "Fresh bread at nine", "targets": [target], "local_time": LATER, **fields})
    assert created.status_code == 201, created.json
    post_id = created.json["id"]
    assert client.post(f"/api/v1/posts/{post_id}/approve", headers=world.auth("marketer")).status_code == 200
    clock.set(AT_LATER)
    assert tick(app)["outcomes"] == {"published": 1}
    assert tick(app)["outcomes"] == {"published": 1}
    assert tick(app)["outcomes"] == {}
    return client.get(f"/api/v1/posts/{post_id}", headers=world.auth("ops")).json


def test_an_x_thread_item_is_a_reply_to_the_post_before_it(app, client, world, httpserver, clock):
    fake = XFake(httpserver, token="x-token")
    make_channel(app, "x", {"url": fake.base, "rate": "none"}, "x-token", name="tweets")
    send_post(app, client, world, clock, "tweets", thread=REPLY)
    head, reply = fake.posts
    assert (head["in_reply_to"], reply["in_reply_to"], reply["text"]) == (None, head["id"], "And the rye is back")


def test_a_mastodon_thread_item_answers_the_status_before_it(app, client, world, httpserver, clock):
    fake = FakeMastodon(httpserver)
    make_channel(app, "mastodon", {"url": fake.url, "rate": "none"}, "masto-token", name="toots")
    shown = send_post(app, client, world, clock, "toots", thread=REPLY)
    head, reply = fake.statuses
    assert (head["in_reply_to_id"], reply["in_reply_to_id"]) == (None, head["id"])
    assert shown["targets"][0]["follow_ups"][0]["provider_id"] == reply["id"]


def test_a_threads_item_is_a_container_replying_to_the_post_before_it(app, client, world, httpserver, clock):
    fake = MetaGraph(httpserver, "threads", token="meta-token", account=ACCOUNT)
    make_channel(app, "threads", {"url": fake.base, "user_id": ACCOUNT, "rate": "none"}, "meta-token", name="threads")
    send_post(app, client, world, clock, "threads", thread=REPLY)
    head, reply = fake.published
    assert "reply_to_id" not in fake.containers[head["container"]]["params"]
    assert fake.containers[reply["container"]]["params"] == {"media_type": "TEXT", "text": "And the rye is back",
                                                             "reply_to_id": head["id"]}


def test_a_first_comment_goes_under_the_facebook_page_post(app, client, world, httpserver, clock):
    fake = MetaGraph(httpserver, "facebook", token="meta-token", account=ACCOUNT)
    make_channel(app, "facebook", {"url": fake.base, "page_id": ACCOUNT, "rate": "none"}, "meta-token", name="page")
    shown = send_post(app, client, world, clock, "page", first_comment={"body": "Menu in the comments"})
    [post] = fake.published
    [comment] = fake.comments
    assert (comment["on"], comment["message"]) == (post["id"], "Menu in the comments")
    assert [(f["item"], f["status"], f["provider_id"]) for f in shown["targets"][0]["follow_ups"]] == [
        ("comment", "published", comment["id"])]


def test_an_instagram_first_comment_is_posted_under_the_media_and_a_gone_post_refuses_it(httpserver):
    fake = MetaGraph(httpserver, "instagram", token="meta-token", account=ACCOUNT)
    fake.published.append({"id": "18000000000000042", "container": "c"})

    def comment_on(post_id: str) -> Delivery:
        return Delivery(action_id=7, workspace_id=1, channel_id=1, channel_name="gram", action_type="publish_post",
                        target_key="gram", payload={"body": "Link in bio", "comment_on": post_id}, publish_at=T0,
                        attempt=1, config={"url": fake.base, "ig_user_id": ACCOUNT}, secret="meta-token")

    context = SendContext(now=T0, timeout=5, http=http_client())  # the process's own client, left open
    made = instagram.send(comment_on("18000000000000042"), context)
    gone = instagram.send(comment_on("18000000000000099"), context)
    assert made.outcome is SendOutcome.SUCCESS and made.provider_id == fake.comments[0]["id"]
    [seen] = fake.of("comments")[:1]
    assert (seen.path, seen.form) == (f"{fake.root}/18000000000000042/comments", {"message": "Link in bio"})
    assert gone.outcome is SendOutcome.PERMANENT and "Object does not exist" in gone.message
