"""Mastodon with media, against a loopback fake instance: each item uploaded with its alt text before the status names
it, a 202 asked about (206, then 200) with the clock's waits and none in real time, nothing posted when an item is not
ready in time, and the instance's own limits read when the channel is saved."""

import socket
import time

import pytest
from sqlalchemy import select

from models.channels.providers import mastodon
from models.channels.tables import Channel
from models.core.database import read_session
from tests.fakes.mastodon import FakeMastodon
from tests.integration.chat_helpers import add_channel, direct_send, new_post, send_post, upload
from tests.media_files import png_bytes
from tests.integration.clock_helpers import row, tick

TIMEOUT = 2


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_POLICY"] = {"provider_timeout": TIMEOUT, "backoff_base": 30, "backoff_cap": 600}
    return app_config


def _channel(app, fake: FakeMastodon, **config) -> str:
    add_channel(app, "mastodon", fake.url, fake.token, {"visibility": "public", "rate": "none", **config},
                name="toots")
    return "toots"


def _config(app, name: str = "toots") -> dict:
    with app.app_context(), read_session() as session:
        return session.scalar(select(Channel.config).where(Channel.name == name))


def test_images_are_uploaded_with_their_alt_text_before_the_status_names_them(app, client, world, clock, httpserver):
    fake = FakeMastodon(httpserver)
    toots = _channel(app, fake)
    first = upload(client, world, png_bytes(size=(40, 30)), alt="Loaves on a rack")
    second = upload(client, world, png_bytes(size=(30, 40), text=None))
    sent = send_post(app, client, world, clock, toots, "Fresh bread at nine https://bakery.example", [first, second])
    assert sent.status == "published", sent.last_error
    sends = [(r.method, r.path) for r in fake.received if r.path != "/api/v2/instance"]
    assert sends == [("POST", "/api/v2/media"), ("POST", "/api/v2/media"), ("POST", "/api/v1/statuses")]
    one, two = fake.requests_to("/api/v2/media")
    assert one.headers["Authorization"] == f"Bearer {fake.token}"
    assert one.form == {"description": "Loaves on a rack"} and two.form == {}
    stored = client.get(f"/api/v1/media/{first}/file", headers=world.auth())
    assert one.files["file"] == (f"{first}.png", "image/png", stored.get_data())
    stored.close()
    [status] = fake.requests_to("/api/v1/statuses")
    assert status.headers["Idempotency-Key"] == str(sent.id)
    assert status.form == {"status": "Fresh bread at nine https://bakery.example", "visibility": "public",
                           "media_ids[]": list(fake.media)}
    assert sent.provider_id == fake.statuses[0]["id"]


def test_an_item_still_processing_is_asked_about_until_it_is_ready_with_the_clock_waiting(app, client, world, clock,
                                                                                         httpserver):
    fake = FakeMastodon(httpserver, processing_polls=2)  # 202, then 206, then 200
    toots = _channel(app, fake)
    photo = upload(client, world, png_bytes(), alt="Loaf")
    started = time.monotonic()
    sent = send_post(app, client, world, clock, toots, "Bread", [photo])
    assert sent.status == "published", sent.last_error
    [media_id] = fake.media
    polls = fake.requests_to(f"/api/v1/media/{media_id}", "GET")
    assert len(polls) == 2 and all(p.headers["Authorization"] == f"Bearer {fake.token}" for p in polls)
    assert clock.slept == [0.5, 1.0]  # waited through the clock, doubling, and never for real
    assert time.monotonic() - started < 5
    assert fake.requests_to("/api/v1/statuses")[0].form["media_ids[]"] == media_id


def test_an_item_not_ready_within_the_timeout_is_not_sent_and_nothing_is_posted(app, client, world, clock,
                                                                               httpserver):
    fake = FakeMastodon(httpserver, processing_polls=1000)
    toots = _channel(app, fake)
    photo = upload(client, world, png_bytes())
    later = send_post(app, client, world, clock, toots, "Bread", [photo])
    assert later.status == "queued" and "still processing" in later.last_error and "nothing was posted" in later.last_error
    assert sum(clock.slept) == TIMEOUT and fake.statuses == [] and fake.requests_to("/api/v1/statuses") == []


def test_the_instances_own_limits_are_read_when_the_channel_is_saved(app, client, world, httpserver):
    fake = FakeMastodon(httpserver, max_characters=1000, max_media=2)
    toots = _channel(app, fake)
    config = _config(app)
    assert (config["max_length"], config["max_media_attachments"], config["characters_reserved_per_url"]) == (
        1000, 2, 23)
    assert new_post(client, world, [toots], "x" * 1000).status_code == 201  # more than Mastodon's default 500
    too_long = new_post(client, world, [toots], "x" * 1001)
    assert too_long.status_code == 422 and too_long.json["error"]["rule"] == "text.links_as_23"
    photos = [upload(client, world, png_bytes(size=(20 + n, 20), text=None)) for n in range(3)]
    three = new_post(client, world, [toots], "Bread", photos)
    assert three.status_code == 422
    assert (three.json["error"]["rule"], three.json["error"]["channel"]) == ("media.count", toots)
    assert "at most 2" in three.json["error"]["message"]
    # An instance that cannot be reached does not refuse the save: the defaults apply.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    add_channel(app, "mastodon", f"http://127.0.0.1:{closed}", "token", name="away")
    assert "max_length" not in _config(app, "away")
    assert new_post(client, world, ["away"], "x" * 501).json["error"]["rule"] == "text.links_as_23"


def test_a_refused_upload_posts_nothing_and_one_in_doubt_is_tried_again(app, client, world, clock, httpserver):
    fake = FakeMastodon(httpserver)
    toots = _channel(app, fake)
    photo = upload(client, world, png_bytes())
    fake.answer_next("/api/v2/media", {"error": "Validation failed: File content type is invalid"}, 422)
    refused = send_post(app, client, world, clock, toots, "Bread", [photo])
    assert refused.status == "failed" and refused.failure_code == "permanent"
    assert "content type is invalid" in refused.last_error and "no status was posted" in refused.last_error
    fake.answer_next("/api/v2/media", {"error": "upstream trouble"}, 502)
    second = send_post(app, client, world, clock, toots, "More bread", [photo])
    assert second.status == "queued" and "no status was posted" in second.last_error  # a 502 on an upload: not sent
    clock.advance(minutes=15)
    tick(app)
    assert row(app, second.id).status == "published" and len(fake.statuses) == 1


def test_a_revoked_token_needs_reconnecting(httpserver, egress_allow):
    fake = FakeMastodon(httpserver)
    result = direct_send(mastodon, {"url": fake.url}, "revoked", {"body": "Bread"})
    assert result.outcome.value == "permanent" and result.reconnect_needed
    assert "The access token is invalid" in result.message
