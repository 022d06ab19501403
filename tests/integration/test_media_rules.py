"""Each provider's declaration, applied: a post that breaks a target's rule is refused at save naming the channel and
the rule, and at send each network gets its media as its rules say (a 4 MB photo downscaled for one, whole for another)."""

import hashlib
import io
import types

import pytest
from PIL import Image
from sqlalchemy import func, select

from models.channels import providers
from models.channels.providers import SendResult, mastodon
from models.channels.providers.accepts import (JPEG, PNG, UPLOAD, Accepts, ImageRule, MediaRules, TextRule)
from models.channels.tables import Channel
from models.core.database import db, write_session
from models.core.runtime import runtime
from models.posts.tables import Post
from tests.integration.clock_helpers import tick
from tests.media_files import gif_bytes, jpeg_with_gps, mp4_bytes, multipart, noisy_jpeg, png_bytes

LATER = "2026-06-01T10:00"  # 14:00Z, two hours after T0
# A network that takes what Bluesky takes: 300 graphemes and 3,000 UTF-8 bytes of text, four images of about a
# megabyte each, which Tickwork may downscale to fit.
BLUESKY_LIKE = Accepts(
    text=(TextRule(300, "graphemes"), TextRule(3000, "utf8_bytes")),
    media=MediaRules(max_items=4, alt_max=2000, delivery=UPLOAD,
                     image=ImageRule(formats=frozenset({JPEG, PNG}), max_bytes=1_000_000, max_side=2000,
                                     may_prepare=True)),
)


class Recorder:
    """A provider that keeps every delivery it is handed and says it was sent."""

    def __init__(self, kind: str, accepts: Accepts):
        self.kind, self.accepts, self.honours_idempotency_key = kind, accepts, True
        self.received = []

    def send(self, delivery, context):
        self.received.append(delivery)
        return SendResult.success(f"{self.kind}-{len(self.received)}")


@pytest.fixture
def networks(monkeypatch):
    """``sky`` (a webhook channel whose provider declares Bluesky's rules) and ``toots`` (Mastodon's), recorded."""
    sky, toots = Recorder("webhook", BLUESKY_LIKE), Recorder("mastodon", mastodon.accepts)
    monkeypatch.setitem(providers.PROVIDERS, "webhook", types.SimpleNamespace(
        kind="webhook", accepts=sky.accepts, honours_idempotency_key=True, send=sky.send))
    monkeypatch.setitem(providers.PROVIDERS, "mastodon", types.SimpleNamespace(
        kind="mastodon", accepts=toots.accepts, honours_idempotency_key=True, send=toots.send))
    return types.SimpleNamespace(sky=sky, toots=toots)


@pytest.fixture
def channels(app, world):
    with app.app_context(), write_session() as session:
        now = runtime().now()
        for name, kind, config in (("sky", "webhook", {"url": "https://sky.example/hook"}),
                                   ("toots", "mastodon", {"url": "https://masto.example"}),
                                   ("sms", "twilio", {"account_sid": "AC1", "from": "+15555550100"})):
            session.add(Channel(workspace_id=world.workspace_id, name=name, kind=kind, config=config, created_at=now))


def upload(client, world, data: bytes, name: str = "photo.jpg", alt: str = "") -> dict:
    body, content_type = multipart(data, name, alt=alt)
    answer = client.post("/api/v1/media", headers=world.auth("marketer"), content_type=content_type, data=body)
    assert answer.status_code == 201, answer.json
    return answer.json


def new_post(client, world, targets, media=(), body="Fresh bread"):
    return client.post("/api/v1/posts", headers=world.auth("marketer"), json={
        "body": body, "targets": list(targets), "local_time": LATER, "media": list(media)})


def _posts(app) -> int:
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(Post))


def refused(answer, channel: str, rule: str, field: str = "media"):
    assert answer.status_code == 422, answer.json
    error = answer.json["error"]
    assert (error["field"], error["channel"], error["rule"]) == (field, channel, rule), error
    assert channel in error["message"]


def test_more_images_than_a_network_takes_is_refused_naming_the_channel_and_the_rule(app, client, world, networks,
                                                                                        channels):
    five = [upload(client, world, png_bytes(size=(20 + n, 20)))["id"] for n in range(5)]
    refused(new_post(client, world, ["main", "toots"], five), "toots", "media.count")
    assert new_post(client, world, ["main"], five).status_code == 201  # the log channel takes ten
    assert _posts(app) == 1


def test_each_media_rule_is_refused_at_save(app, client, world, networks, channels):
    photo, clip, gif = (upload(client, world, data)["id"] for data in (png_bytes(), mp4_bytes(), gif_bytes()))
    refused(new_post(client, world, ["toots"], [photo, clip]), "toots", "media.video_alone")
    refused(new_post(client, world, ["sms"], [photo]), "sms", "media.none")
    refused(new_post(client, world, ["sky"], [clip]), "sky", "video.kind")
    refused(new_post(client, world, ["sky"], [gif]), "sky", "gif.kind")
    wordy = upload(client, world, jpeg_with_gps(), alt="x" * 1501)["id"]
    refused(new_post(client, world, ["toots"], [wordy]), "toots", "alt.length")
    assert new_post(client, world, ["sky"], [wordy]).status_code == 201  # its alt text is within sky's 2,000
    created = new_post(client, world, ["main", "toots"], [photo])
    assert created.status_code == 201
    changed = client.patch(f"/api/v1/posts/{created.json['id']}", headers=world.auth("marketer"),
                           json={"targets": ["main", "sms"]})
    refused(changed, "sms", "media.none")  # an edit is checked against every target too
    assert _posts(app) == 2


def test_an_image_a_network_may_not_resize_is_refused_when_too_heavy(app, client, world, networks, channels,
                                                                     monkeypatch):
    strict = Accepts(media=MediaRules(image=ImageRule(formats=frozenset({JPEG}), max_bytes=1_000_000)))
    monkeypatch.setattr(providers.PROVIDERS["webhook"], "accepts", strict)
    heavy = upload(client, world, noisy_jpeg(size=(1600, 1200)))
    assert heavy["bytes"] > 1_000_000
    refused(new_post(client, world, ["sky"], [heavy["id"]]), "sky", "image.bytes")
    monkeypatch.setattr(providers.PROVIDERS["webhook"], "accepts", BLUESKY_LIKE)
    assert new_post(client, world, ["sky"], [heavy["id"]]).status_code == 201  # may_prepare: fixed at send


def test_text_is_counted_as_each_network_counts_it(app, client, world, networks, channels):
    thumbs = "👍🏽" * 300  # 300 graphemes, 600 code points, 2,400 UTF-8 bytes
    assert new_post(client, world, ["sky"], body=thumbs).status_code == 201
    refused(new_post(client, world, ["sky"], body=thumbs + "!"), "sky", "text.graphemes", field="body")
    families = "👨‍👩‍👧‍👦" * 150  # 150 graphemes, 3,750 UTF-8 bytes
    refused(new_post(client, world, ["sky"], body=families), "sky", "text.utf8_bytes", field="body")
    link = "https://example.com/" + "a" * 600
    assert new_post(client, world, ["toots"], body=f"Read {link}").status_code == 201  # Mastodon counts it 23
    refused(new_post(client, world, ["toots"], body="x" * 501), "toots", "text.links_as_23", field="body")
    assert _posts(app) == 2


def test_a_4_mb_photo_is_downscaled_for_the_network_that_needs_it_and_sent_whole_to_the_other(
        app, client, world, clock, networks, channels, app_config):
    photo = noisy_jpeg(size=(2400, 1800))
    assert len(photo) > 4_000_000
    item = upload(client, world, photo, alt="A loaf, close up")
    post = new_post(client, world, ["sky", "toots"], [item["id"]])
    assert post.status_code == 201, post.json
    assert client.post(f"/api/v1/posts/{post.json['id']}/approve", headers=world.auth("marketer")).status_code == 200
    clock.advance(hours=2)
    tick(app)
    [sky], [toots] = networks.sky.received, networks.toots.received
    [whole] = toots.media
    stored = client.get(f"/api/v1/media/{item['id']}/file", headers=world.auth())
    assert whole.data == stored.get_data() and hashlib.sha256(whole.data).hexdigest() == item["sha256"]
    stored.close()
    assert not whole.prepared and (whole.width, whole.height) == (2400, 1800)
    [small] = sky.media
    assert small.prepared and small.mime == "image/jpeg" and len(small.data) <= 1_000_000
    assert small.alt == "A loaf, close up" and small.media_id == item["id"]
    with Image.open(io.BytesIO(small.data)) as image:
        assert image.size == (small.width, small.height) and image.width < 2400
        assert abs(image.width / image.height - 4 / 3) < 0.01  # the shape kept
    shown = client.get(f"/api/v1/posts/{post.json['id']}", headers=world.auth()).json
    assert [target["status"] for target in shown["targets"]] == ["published", "published"]


def test_a_prepared_image_is_kept_so_a_second_send_does_not_prepare_it_again(app, client, world, clock, networks,
                                                                            channels, app_config):
    from pathlib import Path

    item = upload(client, world, noisy_jpeg(size=(1800, 1200)))
    for _ in range(2):
        post = new_post(client, world, ["sky"], [item["id"]], body=f"Bread {_}")
        client.post(f"/api/v1/posts/{post.json['id']}/approve", headers=world.auth("marketer"))
    clock.advance(hours=2)
    tick(app)
    first, second = (delivery.media[0] for delivery in networks.sky.received)
    assert first.data == second.data and first.prepared
    kept = list((Path(app_config["TICKWORK_MEDIA_DIR"]) / "prepared").rglob("*"))
    assert len([path for path in kept if path.is_file()]) == 1


def test_a_png_becomes_jpeg_for_a_network_that_takes_only_jpeg(app, client, world, clock, networks, channels,
                                                               monkeypatch):
    jpeg_only = Accepts(media=MediaRules(delivery=UPLOAD, image=ImageRule(formats=frozenset({JPEG}),
                                                                            may_prepare=True)))
    monkeypatch.setattr(providers.PROVIDERS["webhook"], "accepts", jpeg_only)
    item = upload(client, world, png_bytes(size=(40, 30)))
    post = new_post(client, world, ["sky"], [item["id"]])
    client.post(f"/api/v1/posts/{post.json['id']}/approve", headers=world.auth("marketer"))
    clock.advance(hours=2)
    tick(app)
    [converted] = networks.sky.received[0].media
    assert converted.mime == "image/jpeg" and converted.data[:3] == b"\xff\xd8\xff" and converted.prepared
