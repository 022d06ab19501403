"""The ``x`` provider against a loopback X API v2 (tests/fakes/x.py), through the real dispatch: the chunked
media upload before the post, alt text, video processing waited for as X asks, every documented answer mapped to
its outcome, ``x-rate-limit-reset`` honoured, and X's weighted 280 refused at save."""

import re
from datetime import timedelta

import pytest

from models.channels.providers import SendContext, SendOutcome, x
from models.channels.providers.base import Delivery, MediaFile
from models.channels.providers.http import http_client
from models.clock import dispatch
from tests.conftest import T0
from tests.fakes.x import XFake
from tests.integration.clock_helpers import add_actions, channel_needs_reconnecting, make_channel, row, tick
from tests.media_files import mp4_bytes, multipart, png_bytes

TOKEN = "x-user-token"
# Sent exactly as written: accents, an emoji, a hashtag, brackets and a link.
VERBATIM = "Crème brûlée 🍮 at #Bakery_42 (today) https://example.com/a_b"


@pytest.fixture
def waits(monkeypatch):
    """Every wait the provider asks of its context, recorded instead of slept."""
    asked = []

    def recording(**kwargs):
        return SendContext(**{**kwargs, "sleep": asked.append})

    monkeypatch.setattr(dispatch, "SendContext", recording)
    return asked


@pytest.fixture
def fake(httpserver):
    return XFake(httpserver, token=TOKEN)


@pytest.fixture
def tweets(app, world, fake):
    """An ``x`` channel named ``tweets`` in the world's workspace, pointed at the fake."""
    make_channel(app, "x", {"url": fake.base}, TOKEN, name="tweets")
    return "tweets"


def upload(client, world, data: bytes, name: str, alt: str = "") -> dict:
    body, content_type = multipart(data, name, alt=alt)
    answer = client.post("/api/v1/media", headers=world.auth("marketer"), content_type=content_type, data=body)
    assert answer.status_code == 201, answer.json
    return answer.json


def stored(client, world, media_id: int) -> bytes:
    answer = client.get(f"/api/v1/media/{media_id}/file", headers=world.auth())
    data = answer.get_data()
    answer.close()
    return data


def one_post(app, world, tweets, body="Fresh bread at nine", media=()) -> int:
    return add_actions(app, world.workspace_id, 1, channel=tweets, payload={"body": body, "media": list(media)})[0]


@pytest.mark.only_backend("sqlite")  # the requests are the provider's own; the outcomes below run on both
def test_images_are_uploaded_with_their_alt_text_before_the_post_and_the_text_goes_verbatim(
        app, client, world, fake, tweets, waits):
    first = upload(client, world, png_bytes(size=(40, 30)), "loaf.png", alt="A loaf on a board")
    second = upload(client, world, png_bytes(size=(30, 40)), "crumb.png")
    action_id = one_post(app, world, tweets, body=VERBATIM, media=[first["id"], second["id"]])
    tick(app)
    published = row(app, action_id)
    assert published.status == "published", published.last_error
    [post] = fake.posts
    assert published.provider_id == post["id"]
    steps = [(seen.method, re.sub(r"/upload/\d+/", "/upload/ID/", seen.path)) for seen in fake.seen]
    assert steps == [("POST", "/2/media/upload/initialize"), ("POST", "/2/media/upload/ID/append"),
                     ("POST", "/2/media/upload/ID/finalize"), ("POST", "/2/media/metadata"),
                     ("POST", "/2/media/upload/initialize"), ("POST", "/2/media/upload/ID/append"),
                     ("POST", "/2/media/upload/ID/finalize"), ("POST", "/2/tweets")]
    assert all(seen.headers["Authorization"] == f"Bearer {TOKEN}" for seen in fake.seen)
    initialize = fake.requests("POST", "/2/media/upload/initialize")[0].json
    assert initialize == {"media_type": "image/png", "total_bytes": first["bytes"], "media_category": "tweet_image"}
    ids = [upload_.media_id for upload_ in fake.uploads.values()]
    append = fake.requests("POST", f"/2/media/upload/{ids[0]}/append")[0]
    assert append.form == {"segment_index": "0"} and append.files["media"] == stored(client, world, first["id"])
    assert fake.requests("POST", "/2/media/metadata")[0].json == {
        "id": ids[0], "metadata": {"alt_text": {"text": "A loaf on a board"}}}
    assert fake.requests("POST", "/2/tweets")[0].json == {"text": VERBATIM, "media": {"media_ids": ids}}
    assert waits == []  # images need no processing


@pytest.mark.only_backend("sqlite")  # the requests are the provider's own; the outcomes below run on both
def test_a_video_is_polled_until_processed_waiting_as_long_as_x_asks(app, client, world, fake, tweets, waits):
    clip = upload(client, world, mp4_bytes(), "clip.mp4", alt="Kneading")
    action_id = one_post(app, world, tweets, media=[clip["id"]])
    tick(app)
    assert row(app, action_id).status == "published", row(app, action_id).last_error
    [upload_] = fake.uploads.values()
    assert upload_.category == "tweet_video" and upload_.media_type == "video/mp4"
    statuses = fake.requests("GET", "/2/media/upload")
    assert [seen.query for seen in statuses] == [{"command": "STATUS", "media_id": upload_.media_id}] * 2
    assert waits == [2, 2]  # check_after_secs, twice: pending, then in_progress
    assert not fake.requests("POST", "/2/media/metadata")  # X describes images and GIFs only
    assert fake.posts[0]["media_ids"] == [upload_.media_id]


def test_x_refuses_the_same_text_twice_and_the_second_fails_for_good(app, world, fake, tweets, clock):
    first, second = add_actions(app, world.workspace_id, 2, channel=tweets, payload={"body": "Same words"})
    tick(app)
    assert row(app, first).status == "published"
    clock.advance(seconds=11)  # the kind's default rate, 6 a minute, holds the second row 10 s and a little
    tick(app)
    assert row(app, second).status == "failed" and "duplicate content" in row(app, second).last_error


def test_a_429_waits_until_x_rate_limit_reset(app, world, fake, tweets, clock):
    reset = clock.now() + timedelta(minutes=12)
    fake.fail_next("/2/tweets", 429, {"title": "Too Many Requests", "detail": "Too Many Requests"},
                   headers={"x-rate-limit-limit": "100", "x-rate-limit-remaining": "0",
                            "x-rate-limit-reset": str(int(reset.timestamp()))})
    action_id = one_post(app, world, tweets)
    summary = tick(app)
    after = row(app, action_id)
    assert after.status == "queued" and after.next_attempt_at == reset
    assert summary["outcomes"] == {"reverted:retry_later": 1}
    clock.advance(minutes=12)
    tick(app)
    assert row(app, action_id).status == "published"


def test_an_expired_token_fails_the_row_and_says_the_channel_needs_reconnecting(app, world, fake, tweets):
    fake.token = "a-newer-token"  # X no longer takes the one the channel holds
    action_id = one_post(app, world, tweets)
    tick(app)
    failed = row(app, action_id)
    assert failed.status == "failed" and failed.failure_code == "reconnect_needed"
    assert "reconnect the X channel" in failed.last_error and "401" in failed.last_error
    assert channel_needs_reconnecting(app, failed.channel_id)


def test_a_429_reset_in_the_past_or_missing_falls_back_sensibly(fake):
    import httpx

    past = httpx.Response(429, headers={"x-rate-limit-reset": str(int(T0.timestamp()) - 60)})
    assert x.rate_limit_reset(past, T0) == timedelta(0)
    assert x.rate_limit_reset(httpx.Response(429, headers={"Retry-After": "30"}), T0) == timedelta(seconds=30)
    assert x.rate_limit_reset(httpx.Response(429), T0) is None


@pytest.mark.only_backend("sqlite")  # the requests are the provider's own; the outcomes below run on both
def test_what_x_would_refuse_is_refused_at_save_naming_the_channel_and_the_rule(app, client, world, tweets):
    def new_post(body="Bread", media=()):
        return client.post("/api/v1/posts", headers=world.auth("marketer"), json={
            "body": body, "targets": [tweets], "local_time": "2026-06-01T10:00", "media": list(media)})

    assert new_post("あ" * 140).status_code == 201  # CJK weighs 2: exactly 280
    refused = new_post("あ" * 141)
    assert refused.status_code == 422, refused.json
    error = refused.json["error"]
    assert (error["field"], error["channel"], error["rule"]) == ("body", tweets, "text.x_weighted")
    assert tweets in error["message"]
    link = "https://example.com/" + "a" * 300
    assert new_post("x" * 256 + " " + link).status_code == 201  # a link counts 23: 256 + 1 + 23
    assert new_post("x" * 257 + " " + link).json["error"]["rule"] == "text.x_weighted"
    images = [upload(client, world, png_bytes(size=(20 + n, 20)), f"{n}.png")["id"] for n in range(5)]
    clip = upload(client, world, mp4_bytes(), "clip.mp4")["id"]
    assert new_post(media=images[:4]).status_code == 201
    assert new_post(media=images).json["error"]["rule"] == "media.count"
    assert new_post(media=[images[0], clip]).json["error"]["rule"] == "media.video_alone"


def test_a_server_error_on_the_post_is_an_unknown_outcome_for_a_person(app, world, fake, tweets):
    fake.fail_next("/2/tweets", 503, {"title": "Service Unavailable", "detail": "Service Unavailable"})
    action_id = one_post(app, world, tweets)
    tick(app)
    failed = row(app, action_id)
    assert failed.status == "failed" and failed.failure_code == "outcome_unknown"  # X honours no idempotency key


@pytest.mark.only_backend("sqlite")  # the requests are the provider's own; the outcomes below run on both
def test_tickwork_channel_add_makes_an_x_channel_that_posts(app, world, fake):
    runner = app.test_cli_runner()
    result = runner.invoke(args=["channel", "add", "--workspace", "Acme", "--name", "birds", "--kind", "x",
                                 "--url", fake.base, "--secret", TOKEN, "--config", '{"rate": "5/min"}'])
    assert result.exit_code == 0, result.output
    action_id = add_actions(app, world.workspace_id, 1, channel="birds", payload={"body": "From the command line"})[0]
    tick(app)
    assert row(app, action_id).status == "published"
    refused = runner.invoke(args=["channel", "add", "--workspace", "Acme", "--name", "b2", "--kind", "x",
                                  "--url", "ftp://api.x.com"])
    assert refused.exit_code != 0 and "url" in refused.output


# The provider alone against the fake (no database): each documented answer and each kind of media.

def direct(fake, body="Fresh bread at nine", media=(), sleep=None, timeout=30.0):
    """``x.send`` of one delivery to the fake, and the waits it asked for."""
    waited = []
    delivery = Delivery(action_id=1, workspace_id=1, channel_id=1, channel_name="tweets", action_type="publish_post",
                        target_key="tweets", payload={"body": body}, publish_at=T0, attempt=1,
                        config={"url": fake.base}, secret=TOKEN, media=tuple(media))
    result = x.send(delivery, SendContext(now=T0, timeout=timeout, http=http_client(), sleep=sleep or waited.append))
    return result, waited


def media_file(kind="image", mime="image/png", data=b"\x89PNG" + bytes(300), alt=""):
    return MediaFile(media_id=9, kind=kind, mime=mime, data=data, alt=alt)


@pytest.mark.parametrize("status,body,outcome,words", [
    (400, {"title": "Invalid Request", "detail": "One or more parameters to your request was invalid.",
           "type": "https://api.twitter.com/2/problems/invalid-request",
           "errors": [{"message": "Your Tweet text is too long."}]},
     SendOutcome.PERMANENT, "Your Tweet text is too long"),
    (403, {"title": "Forbidden", "detail": "You are not allowed to create a Tweet with duplicate content.",
           "type": "about:blank", "status": 403}, SendOutcome.PERMANENT, "duplicate content"),
    (403, {"title": "Forbidden", "detail": "You are not permitted to perform this action.", "type": "about:blank",
           "status": 403}, SendOutcome.PERMANENT, "not permitted"),
    (500, {"title": "Internal Server Error"}, SendOutcome.UNKNOWN, "may or may not have posted"),
    (502, {}, SendOutcome.UNKNOWN, "502"),
    (503, {"title": "Service Unavailable"}, SendOutcome.UNKNOWN, "may or may not have posted"),
    (504, {}, SendOutcome.UNKNOWN, "504"),
])
def test_each_documented_answer_to_a_post_has_its_outcome(fake, status, body, outcome, words):
    fake.fail_next("/2/tweets", status, body)
    result, _ = direct(fake)
    assert result.outcome is outcome and words in result.message and str(status) in result.message
    assert not result.reconnect_needed


def test_a_401_tells_the_dispatcher_the_channel_needs_reconnecting(fake):
    fake.token = "another"
    result, _ = direct(fake)
    assert result.outcome is SendOutcome.PERMANENT and result.reconnect_needed


def test_a_gif_goes_as_tweet_gif_with_its_alt_text(fake):
    result, waited = direct(fake, media=[media_file("gif", "image/gif", b"GIF89a" + bytes(50), "A spinning loaf")])
    assert result.outcome is SendOutcome.SUCCESS, result.message
    assert fake.requests("POST", "/2/media/upload/initialize")[0].json["media_category"] == "tweet_gif"
    assert fake.requests("POST", "/2/media/metadata")[0].json["metadata"] == {"alt_text": {"text": "A spinning loaf"}}
    assert waited == [2, 2]  # X processes GIFs too


def test_a_post_of_media_alone_carries_no_text(fake):
    result, _ = direct(fake, body="", media=[media_file()])
    assert result.outcome is SendOutcome.SUCCESS, result.message
    [upload_] = fake.uploads.values()
    assert fake.requests("POST", "/2/tweets")[0].json == {"media": {"media_ids": [upload_.media_id]}}


def test_a_file_larger_than_a_chunk_goes_in_numbered_segments(fake, monkeypatch):
    monkeypatch.setattr(x, "CHUNK_BYTES", 100)
    data = bytes(range(256)) * 2
    result, _ = direct(fake, media=[media_file(data=data)])
    assert result.outcome is SendOutcome.SUCCESS, result.message
    appends = [seen for seen in fake.seen if seen.path.endswith("/append")]
    assert [seen.form["segment_index"] for seen in appends] == ["0", "1", "2", "3", "4", "5"]
    assert b"".join(seen.files["media"] for seen in appends) == data


def test_a_video_x_could_not_process_fails_without_posting(fake):
    fake.processing[:] = ["in_progress", "failed"]
    result, waited = direct(fake, media=[media_file("video", "video/mp4", bytes(400))])
    assert result.outcome is SendOutcome.PERMANENT and "X could not process media item 1" in result.message
    assert waited == [2] and fake.posts == []


def test_a_video_still_processing_when_the_time_is_up_is_not_sent(fake):
    fake.processing[:] = ["pending"] * 10
    result, waited = direct(fake, media=[media_file("video", "video/mp4", bytes(400))], timeout=5)
    assert result.outcome is SendOutcome.NOT_SENT and "still processing" in result.message
    assert sum(waited) <= 5 and fake.posts == []


@pytest.mark.parametrize("step,status,outcome", [
    ("initialize", 503, SendOutcome.NOT_SENT), ("append", 500, SendOutcome.NOT_SENT),
    ("finalize", 502, SendOutcome.NOT_SENT), ("metadata", 400, SendOutcome.PERMANENT),
    ("initialize", 429, SendOutcome.RETRY_LATER),
])
def test_a_failed_upload_step_posts_nothing(fake, step, status, outcome):
    fake.fail_next(step, status, {"title": "trouble", "detail": "upload trouble"})
    result, _ = direct(fake, media=[media_file(alt="A loaf")])
    assert result.outcome is outcome and "media item 1" in result.message
    assert fake.requests("POST", "/2/tweets") == []

