"""Threads, Facebook and Instagram against a loopback fake of Meta's Graph API, through the real tick and dispatch:
the exact requests, containers polled with an injected sleeper, media as signed links (Threads, Instagram) or
uploaded bytes (Facebook), and each documented error mapped to its outcome."""

import hashlib
import json
import socket
import types
from dataclasses import replace
from datetime import datetime, timedelta

import pytest
from sqlalchemy import select

from models.channels.limits import limits_for
from models.channels.providers import SendContext, SendOutcome, facebook, instagram, threads
from models.channels.providers.base import Delivery, MediaFile
from models.channels.providers.http import http_client
from models.channels.tables import Channel, ChannelThrottle
from models.clock.dispatch import DispatchContext
from models.clock.tick import InlineDispatcher, run_tick
from models.core.database import read_session, write_session
from models.core.runtime import runtime
from models.media.links import link_target
from tests.conftest import EGRESS_ALLOW, T0
from tests.fakes.meta import MetaGraph
from tests.integration.clock_helpers import add_actions, channel_needs_reconnecting, give_a_new_secret, make_channel, row
from tests.media_files import jpeg_with_gps, mp4_bytes, multipart, png_bytes

TOKEN = "meta-token"
ACCOUNT = "17841400000000001"
BASE_URL = "https://tickwork.example"
LATER = "2026-06-01T10:00"  # two hours after T0
ID_KEYS = {"threads": "user_id", "facebook": "page_id", "instagram": "ig_user_id"}


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_BASE_URL"] = BASE_URL
    app_config["TICKWORK_POLICY"] = {"provider_timeout": 10, "task_timeout": 20, "recovery_timeout": 60,
                                     "backoff_base": 30, "backoff_cap": 600}
    return app_config


class Sleeper:
    """Records every wait a provider asks for and returns at once."""

    def __init__(self):
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def sleeper():
    return Sleeper()


def send_due(app, sleeper: Sleeper) -> dict:
    """One real tick whose dispatch waits through ``sleeper``."""
    with app.app_context():
        rt = runtime()
        context = replace(DispatchContext.of(rt), sleep=sleeper)
        return run_tick(clock=rt.clock, policy=rt.policy, dispatcher=InlineDispatcher(context), hooks=rt.hooks)


def fake_for(httpserver, network: str) -> MetaGraph:
    return MetaGraph(httpserver, network, token=TOKEN, account=ACCOUNT, media_base=BASE_URL)


def config_for(fake: MetaGraph) -> dict:
    return {"url": fake.base, ID_KEYS[fake.network]: ACCOUNT}


def bearer_only(fake: MetaGraph) -> None:
    assert all(seen.headers.get("Authorization") == f"Bearer {TOKEN}" for seen in fake.requests)
    assert all(TOKEN not in seen.path and TOKEN not in json.dumps(seen.query) for seen in fake.requests)


# -- Threads ----------------------------------------------------------------------------------

def test_a_text_post_is_a_threads_text_container_checked_then_published_and_a_facebook_feed_post(
        app, httpserver, sleeper):
    on_threads, on_facebook = fake_for(httpserver, "threads"), fake_for(httpserver, "facebook")
    workspace_id = make_channel(app, "threads", config_for(on_threads), TOKEN, name="threads")
    make_channel(app, "facebook", config_for(on_facebook), TOKEN, name="facebook")
    [thread_row] = add_actions(app, workspace_id, 1, channel="threads", payload={"body": "Fresh bread at nine"})
    [page_row] = add_actions(app, workspace_id, 1, channel="facebook",
                             payload={"body": "New menu", "link": "https://bakery.example/menu"})
    summary = send_due(app, sleeper)
    assert summary["outcomes"] == {"published": 2}
    create, status, publish = on_threads.requests
    assert (create.method, create.path, create.form) == (
        "POST", f"{on_threads.root}/{ACCOUNT}/threads", {"media_type": "TEXT", "text": "Fresh bread at nine"})
    [container] = on_threads.containers
    assert (status.method, status.path, status.query) == (
        "GET", f"{on_threads.root}/{container}", {"fields": "status,error_message"})
    assert (publish.method, publish.path, publish.form) == (
        "POST", f"{on_threads.root}/{ACCOUNT}/threads_publish", {"creation_id": container})
    assert row(app, thread_row).provider_id == on_threads.published[0]["id"]
    assert sleeper.waits == []  # finished at the first look: no wait
    [feed] = on_facebook.requests
    assert (feed.method, feed.path, feed.form) == ("POST", f"{on_facebook.root}/{ACCOUNT}/feed",
                                                   {"message": "New menu", "link": "https://bakery.example/menu"})
    posted = row(app, page_row)
    assert posted.provider_id == on_facebook.published[0]["id"] and posted.provider_id.startswith(f"{ACCOUNT}_")
    bearer_only(on_threads)
    bearer_only(on_facebook)


def test_a_container_in_progress_is_polled_with_the_injected_sleeper_within_the_send_time(app, httpserver, sleeper):
    fake = fake_for(httpserver, "threads")
    # The first row's container is ready at the third look; the second row's never within its time.
    fake.statuses.extend(["IN_PROGRESS", "IN_PROGRESS", "FINISHED"] + ["IN_PROGRESS"] * 20)
    workspace_id = make_channel(app, "threads", config_for(fake) | {"rate": "none"}, TOKEN)
    ready, slow = add_actions(app, workspace_id, 2, payload={"body": "Fresh bread"})
    send_due(app, sleeper)
    # 1 + 2 s each: of the second's 10 s, a third of it is kept for the publishing call, so a wait of 4 s
    # and one more look no longer fit.
    assert sleeper.waits == [1.0, 2.0, 1.0, 2.0]
    assert row(app, ready).status == "published" and len(fake.of("publish")) == 1
    reverted = row(app, slow)
    assert reverted.status == "queued" and reverted.attempt_count == 1
    assert "still processing" in reverted.last_error and "nothing was published" in reverted.last_error


@pytest.mark.only_backend("sqlite")  # the request's shape: the database plays no part beyond the other tests
def test_threads_counts_an_emoji_as_its_utf8_bytes_at_save(app, client, world, library_channels):
    thumbs = "👍" * 125  # 125 code points, 500 UTF-8 bytes: exactly Threads' 500
    assert new_post(client, world, ["threads"], body=thumbs).status_code == 201
    refused(new_post(client, world, ["threads"], body=thumbs + "!"), "threads", "text.emoji_as_utf8", field="body")


# -- media from the library -------------------------------------------------------------------------

@pytest.fixture
def library_channels(app, world, httpserver):
    """A ``threads``, ``facebook`` and ``instagram`` channel in the world's workspace, each on its own fake."""
    fakes = types.SimpleNamespace()
    with app.app_context(), write_session() as session:
        rt = runtime()
        for network in ("threads", "facebook", "instagram"):
            fake = fake_for(httpserver, network)
            setattr(fakes, network, fake)
            channel = Channel(workspace_id=world.workspace_id, name=network, kind=network, config=config_for(fake),
                              created_at=rt.now())
            channel.set_secret(rt.secret_box, TOKEN)
            session.add(channel)
    return fakes


def upload(client, world, data: bytes, name: str = "photo.jpg", alt: str = "") -> dict:
    body, content_type = multipart(data, name, alt=alt)
    answer = client.post("/api/v1/media", headers=world.auth("marketer"), content_type=content_type, data=body)
    assert answer.status_code == 201, answer.json
    return answer.json


def new_post(client, world, targets, media=(), body="Fresh bread", at=LATER):
    return client.post("/api/v1/posts", headers=world.auth("marketer"), json={
        "body": body, "targets": list(targets), "local_time": at, "media": list(media)})


def refused(answer, channel: str, rule: str, field: str = "media"):
    assert answer.status_code == 422, answer.json
    error = answer.json["error"]
    assert (error["field"], error["channel"], error["rule"]) == (field, channel, rule), error
    assert channel in error["message"]


def post_and_send(app, client, world, clock, sleeper, targets, media, body="Fresh bread", at=LATER) -> dict:
    """A post at ``at`` (the workspace's wall time), approved, and the clock moved to it for one tick."""
    post = new_post(client, world, targets, media, body, at)
    assert post.status_code == 201, post.json
    assert client.post(f"/api/v1/posts/{post.json['id']}/approve", headers=world.auth("marketer")).status_code == 200
    clock.set(datetime.fromisoformat(post.json["publish_at"]))
    send_due(app, sleeper)
    return client.get(f"/api/v1/posts/{post.json['id']}", headers=world.auth()).json


def fetched_through_the_app(app, url: str):
    """What Meta would get from a signed link: the app's own public route answers it, with no session."""
    assert url.startswith(BASE_URL + "/media/link/")
    answer = app.test_client().get(url.removeprefix(BASE_URL))
    data = answer.get_data()
    answer.close()
    return answer, data


def stored_file(client, world, media_id: int) -> bytes:
    answer = client.get(f"/api/v1/media/{media_id}/file", headers=world.auth())
    data = answer.get_data()
    answer.close()
    return data


def test_one_image_is_a_signed_link_for_threads_and_uploaded_bytes_for_facebook(app, client, world, clock, sleeper,
                                                                                 library_channels):
    item = upload(client, world, jpeg_with_gps(), alt="A loaf, close up")
    shown = post_and_send(app, client, world, clock, sleeper, ["threads", "facebook"], [item["id"]])
    assert [target["status"] for target in shown["targets"]] == ["published", "published"]
    [create] = library_channels.threads.of("create")
    assert create.form == {"media_type": "IMAGE", "image_url": create.form["image_url"], "alt_text": "A loaf, close up",
                           "text": "Fresh bread"}
    answer, data = fetched_through_the_app(app, create.form["image_url"])
    assert answer.status_code == 200 and data == stored_file(client, world, item["id"])
    with app.app_context():
        token = create.form["image_url"].rsplit("/", 1)[1]
        assert link_target(runtime().secret_box, token, clock.now()) == (item["id"], None)
    [photo] = library_channels.facebook.requests
    assert (photo.method, photo.path) == ("POST", f"{library_channels.facebook.root}/{ACCOUNT}/photos")
    assert photo.headers["Content-Type"].startswith("multipart/form-data")
    assert photo.form == {"message": "Fresh bread", "alt_text_custom": "A loaf, close up"}
    _, sent, mime = photo.files["source"]
    assert hashlib.sha256(sent).hexdigest() == item["sha256"] and mime == "image/jpeg"
    facebook_target = next(target for target in shown["targets"] if target["channel"] == "facebook")
    action = client.get(f"/api/v1/actions/{facebook_target['action_id']}", headers=world.auth()).json
    assert action["provider_id"] == library_channels.facebook.published[0]["id"]
    clock.advance(hours=7)  # the link expires: a stale container cannot fetch it again
    assert fetched_through_the_app(app, create.form["image_url"])[0].status_code == 404


@pytest.mark.only_backend("sqlite")  # the request's shape: the database plays no part beyond the other tests
def test_threads_carousel_is_item_containers_then_a_carousel_naming_them(app, client, world, clock, sleeper,
                                                                          library_channels):
    fake = library_channels.threads
    photo = upload(client, world, jpeg_with_gps(), alt="Crust")
    clip = upload(client, world, mp4_bytes(seconds=5), name="clip.mp4")
    fake.statuses.extend(["FINISHED", "IN_PROGRESS", "FINISHED"])  # the video item, then the carousel
    post_and_send(app, client, world, clock, sleeper, ["threads"], [photo["id"], clip["id"]])
    first, second, carousel = fake.of("create")
    assert (first.form["media_type"], first.form["is_carousel_item"], first.form["alt_text"]) == ("IMAGE", "true",
                                                                                                 "Crust")
    assert (second.form["media_type"], second.form["is_carousel_item"]) == ("VIDEO", "true")
    assert second.form["video_url"].startswith(BASE_URL + "/media/link/")
    children = list(fake.containers)[:2]
    assert carousel.form == {"media_type": "CAROUSEL", "children": ",".join(children), "text": "Fresh bread"}
    # The video item is looked at before the carousel names it; the carousel until it is finished.
    assert [seen.path.rsplit("/", 1)[1] for seen in fake.of("status")] == [children[1], list(fake.containers)[2],
                                                                           list(fake.containers)[2]]
    assert sleeper.waits == [1.0]
    assert fake.of("publish")[0].form == {"creation_id": list(fake.containers)[2]}


# -- Instagram --------------------------------------------------------------------------------

def test_instagram_takes_no_text_only_post_and_an_image_is_a_jpeg_link_with_caption_and_alt_then_published(
        app, client, world, clock, sleeper, library_channels):
    fake = library_channels.instagram
    refused(new_post(client, world, ["main", "instagram"]), "instagram", "media.required")  # no text-only post
    assert new_post(client, world, ["main", "threads"]).status_code == 201  # Threads takes one
    item = upload(client, world, png_bytes(size=(400, 400)), name="square.png", alt="A bun")
    fake.statuses.append("IN_PROGRESS")
    shown = post_and_send(app, client, world, clock, sleeper, ["instagram"], [item["id"]], body="Buns today")
    assert [target["status"] for target in shown["targets"]] == ["published"]
    [create], statuses, [publish] = fake.of("create"), fake.of("status"), fake.of("publish")
    assert create.path == f"{fake.root}/{ACCOUNT}/media"
    assert set(create.form) == {"image_url", "caption", "alt_text"}
    assert (create.form["caption"], create.form["alt_text"]) == ("Buns today", "A bun")
    answer, data = fetched_through_the_app(app, create.form["image_url"])
    assert answer.status_code == 200 and answer.mimetype == "image/jpeg" and data[:3] == b"\xff\xd8\xff"  # PNG → JPEG
    container = next(iter(fake.containers))
    assert [seen.query for seen in statuses] == [{"fields": "status_code,status"}] * 2
    assert sleeper.waits == [1.0]
    assert (publish.path, publish.form) == (f"{fake.root}/{ACCOUNT}/media_publish", {"creation_id": container})
    bearer_only(fake)


@pytest.mark.only_backend("sqlite")  # the request's shape: the database plays no part beyond the other tests
def test_instagram_video_is_a_reel_and_a_carousel_mixes_images_and_videos(app, client, world, clock, sleeper,
                                                                          library_channels):
    fake = library_channels.instagram
    clip = upload(client, world, mp4_bytes(seconds=5), name="clip.mp4")
    photo = upload(client, world, jpeg_with_gps(size=(400, 400)), alt="Crumb")
    post_and_send(app, client, world, clock, sleeper, ["instagram"], [clip["id"]], body="Watch")
    [reel] = fake.of("create")
    assert (reel.form["media_type"], reel.form["caption"]) == ("REELS", "Watch") and "video_url" in reel.form
    post_and_send(app, client, world, clock, sleeper, ["instagram"], [photo["id"], clip["id"]], body="Both",
                  at="2026-06-01T12:00")
    first, second, carousel = fake.of("create")[1:]
    assert (first.form.get("is_carousel_item"), first.form.get("alt_text"), "caption" in first.form) == (
        "true", "Crumb", False)
    assert (second.form["media_type"], second.form["is_carousel_item"]) == ("VIDEO", "true")
    assert carousel.form["media_type"] == "CAROUSEL" and carousel.form["caption"] == "Both"
    assert carousel.form["children"] == ",".join(list(fake.containers)[1:3])
    assert len(fake.published) == 2


def test_instagram_reads_the_accounts_publishing_limit_when_the_channel_is_added(app, httpserver, world):
    fake = fake_for(httpserver, "instagram")
    fake.quota_total, fake.quota_duration = 50, 86400
    result = app.test_cli_runner().invoke(args=[
        "channel", "add", "--workspace", "Acme", "--name", "insta", "--kind", "instagram", "--url", fake.base,
        "--secret", TOKEN, "--config", json.dumps({"ig_user_id": ACCOUNT})])
    assert result.exit_code == 0, result.output
    [limit] = fake.of("limit")
    assert (limit.path, limit.query) == (f"{fake.root}/{ACCOUNT}/content_publishing_limit",
                                         {"fields": "config,quota_usage"})
    config = channel_config(app, "insta")
    assert config["network_rate"] == "50/86400s"
    assert str(limits_for("instagram", config).rate) == "50/24h"


@pytest.mark.only_backend("sqlite")  # the request's shape: the database plays no part beyond the other tests
def test_an_instagram_channel_is_saved_with_the_documented_rate_when_its_limit_cannot_be_read(app, world):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    result = app.test_cli_runner().invoke(args=[
        "channel", "add", "--workspace", "Acme", "--name", "insta", "--kind", "instagram",
        "--url", f"http://127.0.0.1:{closed}/v21.0", "--secret", TOKEN])
    assert result.exit_code == 0, result.output
    config = channel_config(app, "insta")
    assert "network_rate" not in config
    assert str(limits_for("instagram", config).rate) == "100/24h"


def channel_config(app, name: str) -> dict:
    with app.app_context(), read_session() as session:
        return session.scalar(select(Channel.config).where(Channel.name == name))


@pytest.mark.only_backend("sqlite")  # the request's shape: the database plays no part beyond the other tests
@pytest.mark.parametrize("kind", ["threads", "facebook", "instagram"])
def test_channel_add_takes_each_meta_kind_with_its_url_secret_and_config(app, world, httpserver, kind):
    fake = fake_for(httpserver, kind)
    result = app.test_cli_runner().invoke(args=[
        "channel", "add", "--workspace", "Acme", "--name", kind, "--kind", kind, "--url", fake.base,
        "--secret", TOKEN, "--config", json.dumps({ID_KEYS[kind]: ACCOUNT})])
    assert result.exit_code == 0, result.output
    assert channel_config(app, kind) | {"network_rate": None} == {"url": fake.base, ID_KEYS[kind]: ACCOUNT,
                                                                  "network_rate": None}
    refused_id = app.test_cli_runner().invoke(args=[
        "channel", "add", "--workspace", "Acme", "--name", f"{kind}-2", "--kind", kind, "--url", fake.base,
        "--config", json.dumps({ID_KEYS[kind]: "not-an-id"})])
    assert refused_id.exit_code != 0 and ID_KEYS[kind] in refused_id.output


# -- Facebook ---------------------------------------------------------------------------------

@pytest.mark.only_backend("sqlite")  # the request's shape: the database plays no part beyond the other tests
def test_facebook_several_photos_are_uploaded_unpublished_then_attached_to_one_feed_post(
        app, client, world, clock, sleeper, library_channels):
    fake = library_channels.facebook
    items = [upload(client, world, png_bytes(size=(30 + n, 30)), name=f"p{n}.png")["id"] for n in range(2)]
    post_and_send(app, client, world, clock, sleeper, ["facebook"], items, body="Two loaves")
    first, second, feed = fake.requests
    assert [seen.form for seen in (first, second)] == [{"published": "false"}] * 2
    assert [seen.files["source"][2] for seen in (first, second)] == ["image/png"] * 2
    photo_ids = list(fake.photos)
    assert feed.path == f"{fake.root}/{ACCOUNT}/feed"
    assert feed.form == {"message": "Two loaves",
                         "attached_media[0]": json.dumps({"media_fbid": photo_ids[0]}),
                         "attached_media[1]": json.dumps({"media_fbid": photo_ids[1]})}
    assert fake.published[-1]["photos"] == photo_ids


@pytest.mark.only_backend("sqlite")  # the request's shape: the database plays no part beyond the other tests
def test_facebook_refuses_a_video_at_save(app, client, world, library_channels):
    clip = upload(client, world, mp4_bytes(seconds=5), name="clip.mp4")
    refused(new_post(client, world, ["facebook"], [clip["id"]]), "facebook", "video.kind")


# -- Meta's errors, through the dispatch ---------------------------------------------------------

def test_metas_errors_move_the_rows_expired_token_permanent_throttling_paused_transient_reverted_or_unknown(
        app, httpserver, sleeper, clock):
    fake, page = fake_for(httpserver, "threads"), fake_for(httpserver, "facebook")
    fake.fail("create", 500, code=2, message="Service temporarily unavailable")  # the first row's container
    fake.fail("publish", 400, code=190, subcode=463, message="Error validating access token: Session has expired")
    fake.fail("publish", 500, code=1, message="An unknown error occurred")  # the first row, its second attempt
    usage = json.dumps({ACCOUNT: [{"type": "pages", "call_count": 100, "total_cputime": 20, "total_time": 20,
                                   "estimated_time_to_regain_access": 7}]})
    page.fail("feed", 400, code=80001, message="There have been too many calls to this Page account",
              headers={"X-Business-Use-Case-Usage": usage})
    workspace_id = make_channel(app, "threads", config_for(fake) | {"rate": "none"}, TOKEN)
    make_channel(app, "facebook", config_for(page), TOKEN, name="page")
    transient, expired = add_actions(app, workspace_id, 2, payload={"body": "Hello"})
    [throttled] = add_actions(app, workspace_id, 1, channel="page", payload={"body": "Hello"})
    summary = send_due(app, sleeper)
    assert summary["outcomes"] == {"reverted:not_sent": 1, "failed:reconnect_needed": 1, "reverted:retry_later": 1}
    first = row(app, transient)
    assert first.status == "queued" and "nothing was published" in first.last_error
    failed = row(app, expired)
    assert failed.status == "failed" and failed.failure_code == "reconnect_needed"
    assert "Session has expired" in failed.last_error and "reconnect the Threads channel" in failed.last_error
    paused = row(app, throttled)
    assert paused.status == "queued" and paused.next_attempt_at == clock.now() + timedelta(minutes=7)
    with app.app_context(), read_session() as session:
        assert session.scalar(select(ChannelThrottle.paused_until).where(ChannelThrottle.channel_id == paused.channel_id)
                              ) == clock.now() + timedelta(minutes=7)
    assert channel_needs_reconnecting(app, failed.channel_id)
    give_a_new_secret(app, failed.channel_id)  # else the expired token's channel strands its other row
    clock.set(first.next_attempt_at)
    send_due(app, sleeper)
    unknown = row(app, transient)
    assert unknown.status == "failed" and unknown.failure_code == "outcome_unknown"
    assert "may or may not have published" in unknown.last_error and len(fake.of("publish")) == 2


# -- Meta's errors, each mapped (the provider alone: no database involved) ------------------------

@pytest.fixture
def direct(egress_allow, sleeper):
    """Send one delivery straight through a provider module, the egress policy open to loopback as in the suite."""
    egress_allow(EGRESS_ALLOW)

    def send(module, fake: MetaGraph, media=(), payload=None):
        delivery = Delivery(action_id=1, workspace_id=1, channel_id=1, channel_name="main",
                            action_type="publish_post", target_key="main", payload=payload or {"body": "Hi"},
                            publish_at=T0, attempt=1, config=config_for(fake), secret=TOKEN, media=tuple(media))
        return module.send(delivery, SendContext(now=T0, timeout=5, http=http_client(), sleep=sleeper))

    return send


def image_link(number: int = 7) -> MediaFile:
    return MediaFile(media_id=number, kind="image", mime="image/jpeg", data=b"", url=f"{BASE_URL}/media/link/t{number}")


def photo(number: int = 7) -> MediaFile:
    return MediaFile(media_id=number, kind="image", mime="image/png", data=png_bytes())


@pytest.mark.parametrize("module", [threads, facebook, instagram], ids=lambda module: module.kind)
def test_code_190_is_permanent_with_reconnect_needed(httpserver, direct, module):
    fake = fake_for(httpserver, module.kind)
    for step in ("create", "feed"):
        fake.fail(step, 400, code=190, subcode=458, message="Error validating access token: The user has not "
                                                             "authorized application")
    result = direct(module, fake, [image_link()] if module is instagram else ())
    assert result.outcome is SendOutcome.PERMANENT and result.reconnect_needed
    assert "subcode 458" in result.message and "reconnect" in result.message


def test_a_token_meta_does_not_know_is_refused_the_way_meta_refuses_it(httpserver, direct):
    fake = fake_for(httpserver, "threads")
    fake.token = "another"
    result = direct(threads, fake)
    assert result.outcome is SendOutcome.PERMANENT and result.reconnect_needed and "Cannot parse" in result.message


def test_throttling_codes_and_429_retry_later_reading_the_usage_headers(httpserver, direct):
    fake = fake_for(httpserver, "threads")
    business = json.dumps({ACCOUNT: [{"type": "pages", "call_count": 100, "total_cputime": 20, "total_time": 20,
                                      "estimated_time_to_regain_access": 7}]})
    app_usage = json.dumps({"call_count": 100, "total_cputime": 3, "total_time": 4,
                            "estimated_time_to_regain_access": 3})
    cases = [(4, 400, {"X-App-Usage": app_usage}, timedelta(minutes=3)),
             (17, 400, {"X-Business-Use-Case-Usage": business}, timedelta(minutes=7)),
             (32, 400, {}, None), (613, 400, {}, None), (9, 400, {}, None), (80001, 400, {}, None),
             (80014, 400, {"X-Business-Use-Case-Usage": business}, timedelta(minutes=7)),
             (None, 429, {"Retry-After": "90"}, timedelta(seconds=90))]
    for code, status, headers, wait in cases:
        body = None if code else {"error": {"message": "Too many calls"}}
        fake.fail("create", status, code=code or 0, message=f"(#{code}) Too many calls", headers=headers, body=body)
        result = direct(threads, fake)
        assert (result.outcome, result.retry_after) == (SendOutcome.RETRY_LATER, wait), (code, result)
        assert "Too many calls" in result.message and not result.reconnect_needed
    assert fake.of("publish") == []


def test_invalid_blocked_duplicate_and_permission_errors_are_permanent_with_metas_words(httpserver, direct):
    fake = fake_for(httpserver, "instagram")
    for code, subcode, status, words in [(100, None, 400, "Invalid parameter"), (368, 1390008, 400, "blocked"),
                                         (506, None, 400, "Duplicate status message"), (3, None, 400, "capability"),
                                         (10, None, 403, "Permission denied"), (200, None, 403, "Permissions error"),
                                         (9004, 2207052, 400, "Media download has failed")]:
        fake.fail("create", status, code=code, subcode=subcode, message=f"(#{code}) {words}")
        result = direct(instagram, fake, [image_link()])
        assert result.outcome is SendOutcome.PERMANENT and not result.reconnect_needed, (code, result)
        assert words in result.message and f"code {code}" in result.message and "AbCdEfGh123" in result.message
        assert str(status) in result.message


def test_a_fault_while_nothing_is_public_yet_is_not_sent(httpserver, direct):
    threads_fake, gram, book = (fake_for(httpserver, network) for network in ("threads", "instagram", "facebook"))
    threads_fake.fail("create", 500, code=2, message="Service temporarily unavailable")
    threads_fake.fail("status", 502, code=0, body={"oops": True})
    gram.fail("create", 500, code=1, message="An unknown error occurred")
    book.fail("photos", 503, code=2, message="Service temporarily unavailable")
    gram.fail("publish", 400, code=9007, subcode=2207027, message="The media is not ready for publishing")
    outcomes = [direct(threads, threads_fake), direct(threads, threads_fake), direct(instagram, gram, [image_link()]),
                direct(facebook, book, [photo(1), photo(2)]),  # the first of two photos is an unpublished upload
                direct(instagram, gram, [image_link()])]  # publishing a container Instagram has not readied
    assert [result.outcome for result in outcomes] == [SendOutcome.NOT_SENT] * 5
    assert all("nothing was published" in result.message for result in outcomes)
    assert threads_fake.of("publish") == [] and len(gram.of("publish")) == 1 and book.of("feed") == []


def test_a_transient_fault_answering_the_publishing_call_is_an_unknown_outcome(httpserver, direct):
    threads_fake, gram, book = (fake_for(httpserver, network) for network in ("threads", "instagram", "facebook"))
    threads_fake.fail("publish", 504, code=0, body={})
    gram.fail("publish", 500, code=1, message="An unknown error occurred")
    book.fail("feed", 502, code=0, body={})
    book.fail("photos", 500, code=2, message="Service temporarily unavailable")  # one photo: the post itself
    outcomes = [direct(threads, threads_fake), direct(instagram, gram, [image_link()]), direct(facebook, book),
                direct(facebook, book, [photo()])]
    assert [result.outcome for result in outcomes] == [SendOutcome.UNKNOWN] * 4


def test_a_container_in_error_is_permanent_with_metas_reason_and_an_expired_one_is_not_sent(httpserver, direct,
                                                                                           sleeper):
    threads_fake, gram = fake_for(httpserver, "threads"), fake_for(httpserver, "instagram")
    threads_fake.statuses.extend(["ERROR", "EXPIRED"])
    gram.statuses.extend(["IN_PROGRESS", "ERROR"])
    failed, expired = direct(threads, threads_fake), direct(threads, threads_fake)
    assert failed.outcome is SendOutcome.PERMANENT and "ERROR, UNKNOWN" in failed.message
    assert expired.outcome is SendOutcome.NOT_SENT and "expired" in expired.message
    on_gram = direct(instagram, gram, [image_link()])
    assert on_gram.outcome is SendOutcome.PERMANENT and "Media download has failed" in on_gram.message
    assert sleeper.waits == [1.0]
    assert threads_fake.of("publish") == [] and gram.of("publish") == []


def test_a_link_outside_the_base_url_the_fake_was_told_about_cannot_be_fetched(httpserver, direct):
    gram = fake_for(httpserver, "instagram")
    stray = MediaFile(media_id=1, kind="image", mime="image/jpeg", data=b"", url="https://elsewhere.example/a.jpg")
    result = direct(instagram, gram, [stray])
    assert result.outcome is SendOutcome.PERMANENT and gram.of("publish") == []
