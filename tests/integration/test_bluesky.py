"""The bluesky provider through the real dispatch, against a loopback PDS (tests/fakes/bluesky.py): the exact XRPC
calls, the record it makes under the row's own key, each documented error's outcome, and asking before giving up."""

import json
from datetime import timedelta

import pytest
from sqlalchemy import update

from models.actions.tables import ScheduledAction
from models.channels.providers import bluesky
from models.channels.providers.atproto import tid_for
from models.core.database import write_session
from models.core.moves import Actor
from models.core.runtime import runtime
from models.media.library import add_media
from models.media.settings import media_settings
from tests.fakes.bluesky import BlueskyFake
from tests.integration.clock_helpers import add_actions, events, make_channel, row, rows, tick
from tests.media_files import noisy_jpeg, png_bytes

CREATE = "com.atproto.repo.createRecord"
GET = "com.atproto.repo.getRecord"
SESSION = "com.atproto.server.createSession"
UPLOAD = "com.atproto.repo.uploadBlob"


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_POLICY"] = {"provider_timeout": 0.3, "task_timeout": 1, "recovery_timeout": 5,
                                     "backoff_base": 30, "backoff_cap": 600}
    return app_config


@pytest.fixture
def pds(httpserver):
    bluesky.forget_sessions()
    yield BlueskyFake(httpserver)
    bluesky.forget_sessions()


def channel(app, pds, **config) -> int:
    # No rate: the default (8/min) would hold the second row of a tick for its next slot.
    return make_channel(app, "bluesky", {"url": pds.url, "handle": pds.handle, "rate": "none", **config}, pds.password)


def rkey(app, action_id: int) -> str:
    found = row(app, action_id)
    return tid_for(found.created_at, found.id)


def test_a_post_signs_in_once_uploads_its_image_then_creates_the_record_under_the_rows_key(app, pds):
    workspace_id = channel(app, pds)
    with app.app_context(), write_session() as session:
        photo = add_media(session, workspace_id, png_bytes((120, 80), text=None), settings=media_settings(),
                          actor=Actor(label="test"), now=runtime().now(), alt="Loaves on a rack")
        media_id = photo.id
    first, second = add_actions(app, workspace_id, 2, payload={"text": "Fresh bread at nine", "media": [media_id]})
    summary = tick(app)
    assert summary["outcomes"] == {"published": 2}
    assert [call.nsid for call in pds.calls] == [SESSION, UPLOAD, CREATE, UPLOAD, CREATE]
    assert pds.named(SESSION)[0].json() == {"identifier": pds.handle, "password": pds.password}
    upload = pds.named(UPLOAD)[0]
    assert upload.headers["Content-Type"] == "image/png" and upload.headers["Authorization"].startswith("Bearer acc-")
    create = pds.named(CREATE)[0].json()
    assert create["repo"] == pds.did and create["collection"] == "app.bsky.feed.post"
    assert create["rkey"] == rkey(app, first)
    ((cid_of_blob, sent),) = pds.blobs.items()
    assert sent == upload.body  # a small PNG goes up as stored
    assert create["record"] == {
        "$type": "app.bsky.feed.post", "text": "Fresh bread at nine", "createdAt": "2026-06-01T12:00:00.000Z",
        "embed": {"$type": "app.bsky.embed.images", "images": [{
            "alt": "Loaves on a rack", "aspectRatio": {"width": 120, "height": 80},
            "image": {"$type": "blob", "ref": {"$link": cid_of_blob}, "mimeType": "image/png", "size": len(sent)}}]}}
    published = row(app, first)
    record, cid = pds.records[rkey(app, first)]
    assert published.provider_id == f"{pds.uri(rkey(app, first))} {cid}"
    assert bluesky.record_ref(published.provider_id) == (pds.uri(rkey(app, first)), cid)
    assert rkey(app, first) != rkey(app, second)


def test_a_4_mb_photo_is_downscaled_under_a_megabyte_for_bluesky(app, pds):
    workspace_id = channel(app, pds)
    heavy = noisy_jpeg((2400, 1800))
    assert len(heavy) > 1_000_000
    with app.app_context(), write_session() as session:
        media_id = add_media(session, workspace_id, heavy, settings=media_settings(), actor=Actor(label="test"),
                             now=runtime().now()).id
    (action_id,) = add_actions(app, workspace_id, 1, payload={"text": "", "media": [media_id]})
    tick(app)
    assert row(app, action_id).status == "published", row(app, action_id).last_error
    (sent,) = [call.body for call in pds.named(UPLOAD)]
    assert len(sent) <= 1_000_000
    assert pds.named(CREATE)[0].json()["record"]["embed"]["images"][0]["alt"] == ""


def test_an_emoji_before_a_link_puts_its_facet_at_utf8_byte_offsets_and_a_lone_link_gets_a_card(app, pds):
    workspace_id = channel(app, pds)
    text = "🥖🎉 New menu: https://bakery.example/menu. Ask @alice.bsky.social or @nobody.bsky.social #bread!"
    (action_id,) = add_actions(app, workspace_id, 1, payload={"text": text})
    tick(app)
    assert row(app, action_id).status == "published", row(app, action_id).last_error
    record = pds.named(CREATE)[0].json()["record"]
    link_start = len("🥖🎉 New menu: ".encode())
    assert link_start == len("🥖🎉 New menu: ") + 6  # two 4-byte emoji: byte offsets, not characters
    mention_start = text.encode().index(b"@alice")
    tag_start = text.encode().index(b"#bread")
    assert record["facets"] == [
        {"index": {"byteStart": link_start, "byteEnd": link_start + len("https://bakery.example/menu")},
         "features": [{"$type": "app.bsky.richtext.facet#link", "uri": "https://bakery.example/menu"}]},
        {"index": {"byteStart": mention_start, "byteEnd": mention_start + len("@alice.bsky.social")},
         "features": [{"$type": "app.bsky.richtext.facet#mention", "did": pds.known_handles["alice.bsky.social"]}]},
        {"index": {"byteStart": tag_start, "byteEnd": tag_start + len("#bread")},
         "features": [{"$type": "app.bsky.richtext.facet#tag", "tag": "bread"}]},
    ]  # @nobody does not resolve: left as plain text
    assert record["embed"] == {"$type": "app.bsky.embed.external", "external": {
        "uri": "https://bakery.example/menu", "title": "https://bakery.example/menu", "description": ""}}
    assert sorted(call.args["handle"] for call in pds.named("com.atproto.identity.resolveHandle")) == [
        "alice.bsky.social", "nobody.bsky.social"]


def _page(title="Our spring menu", image="/card.jpg") -> str:
    return (f"<!doctype html><html><head><title>Menu | Acme</title>"
            f'<meta property="og:title" content="{title}">'
            '<meta property="og:description" content="Rye, spelt &amp; a new sourdough.">'
            + (f'<meta property="og:image" content="{image}">' if image else "")
            + "</head><body>" + "<p>bread</p>" * 50 + "</body></html>")


def test_a_lone_links_card_carries_the_pages_title_description_and_its_image_resized_under_a_megabyte(
        app, pds, httpserver):
    heavy = noisy_jpeg((2400, 1800))
    assert len(heavy) > 1_000_000
    httpserver.expect_request("/menu").respond_with_data(_page(), content_type="text/html; charset=utf-8")
    httpserver.expect_request("/card.jpg").respond_with_data(heavy, content_type="image/jpeg")
    workspace_id = channel(app, pds)
    link = httpserver.url_for("/menu")
    (action_id,) = add_actions(app, workspace_id, 1, payload={"text": f"New menu: {link}"})
    tick(app)
    assert row(app, action_id).status == "published", row(app, action_id).last_error
    assert [call.nsid for call in pds.calls] == [SESSION, UPLOAD, CREATE]  # the thumbnail goes up before the post
    (thumb,) = [call.body for call in pds.named(UPLOAD)]
    assert len(thumb) <= 1_000_000 and thumb[:3] == b"\xff\xd8\xff"
    external = pds.named(CREATE)[0].json()["record"]["embed"]["external"]
    cid = next(iter(pds.blobs))
    assert external == {"uri": link, "title": "Our spring menu", "description": "Rye, spelt & a new sourdough.",
                        "thumb": {"$type": "blob", "ref": {"$link": cid}, "mimeType": "image/jpeg",
                                  "size": len(thumb)}}


def test_a_card_whose_page_fails_to_load_is_posted_with_the_link_as_its_title_and_no_thumbnail(
        app, pds, httpserver):
    httpserver.expect_request("/gone").respond_with_data("not here", status=404)
    workspace_id = channel(app, pds)
    link = httpserver.url_for("/gone")
    (action_id,) = add_actions(app, workspace_id, 1, payload={"text": f"Read {link}"})
    tick(app)
    assert row(app, action_id).status == "published", row(app, action_id).last_error
    assert pds.named(UPLOAD) == []
    assert pds.named(CREATE)[0].json()["record"]["embed"]["external"] == {"uri": link, "title": link, "description": ""}


def test_a_cards_image_that_is_not_an_image_is_left_out_and_the_card_keeps_the_pages_words(app, pds, httpserver):
    httpserver.expect_request("/menu").respond_with_data(_page(image="/fake.jpg"), content_type="text/html")
    httpserver.expect_request("/fake.jpg").respond_with_data(b"<html>not a picture</html>", content_type="image/jpeg")
    workspace_id = channel(app, pds)
    link = httpserver.url_for("/menu")
    (action_id,) = add_actions(app, workspace_id, 1, payload={"text": link})
    tick(app)
    assert row(app, action_id).status == "published", row(app, action_id).last_error
    external = pds.named(CREATE)[0].json()["record"]["embed"]["external"]
    assert pds.named(UPLOAD) == [] and "thumb" not in external and external["title"] == "Our spring menu"


def test_an_expired_access_token_is_refreshed_and_the_session_kept(app, pds):
    workspace_id = channel(app, pds)
    first, second = add_actions(app, workspace_id, 2, payload={"text": "Fresh bread"})
    from models.clock.dispatch import DispatchContext, dispatch_action

    with app.app_context():
        context = DispatchContext.of(runtime())
        assert dispatch_action(first, context).outcome == "published"
        pds.expire_access()
        assert dispatch_action(second, context).outcome == "published"
    assert [call.nsid for call in pds.calls] == [SESSION, CREATE, CREATE, "com.atproto.server.refreshSession", CREATE]


@pytest.mark.parametrize("step,status,error,outcome,code", [
    (CREATE, 400, "InvalidRequest", "failed", "permanent"),
    (SESSION, 401, "AuthenticationRequired", "failed", "reconnect_needed"),
    (SESSION, 400, "AccountTakedown", "failed", "reconnect_needed"),
    (UPLOAD, 502, "UpstreamFailure", "queued", None),  # before the create: nothing was posted
    (SESSION, 503, "NotEnoughResources", "queued", None),
])
def test_each_documented_error_has_its_outcome(app, pds, step, status, error, outcome, code):
    workspace_id = channel(app, pds)
    with app.app_context(), write_session() as session:
        media_id = add_media(session, workspace_id, png_bytes(text=None), settings=media_settings(),
                             actor=Actor(label="test"), now=runtime().now()).id
    pds.fail_next(step, status, error, "said the PDS")
    (action_id,) = add_actions(app, workspace_id, 1, payload={"text": "Fresh bread", "media": [media_id]})
    tick(app)
    after = row(app, action_id)
    assert after.status == outcome, after.last_error
    assert after.failure_code == code
    assert error in after.last_error and str(status) in after.last_error
    assert pds.records == {}


def test_a_wrong_app_password_fails_the_row_asking_to_reconnect(app, pds):
    workspace_id = make_channel(app, "bluesky", {"url": pds.url, "handle": pds.handle}, "not-the-password")
    (action_id,) = add_actions(app, workspace_id, 1, payload={"text": "Fresh bread"})
    with app.app_context():
        from models.clock.dispatch import DispatchContext, send

        from models.channels.tables import Channel
        from models.core.database import read_session
        with read_session() as session:
            action, chan = session.get(ScheduledAction, action_id), session.get(Channel, 1)
            result = send(action, chan, DispatchContext.of(runtime()))
    assert result.outcome.value == "permanent" and result.reconnect_needed, result.message
    assert "reconnect" in result.message and "Invalid identifier or password" in result.message


def test_a_429_waits_until_ratelimit_reset(app, pds, clock):
    workspace_id = channel(app, pds)
    reset = clock.now() + timedelta(minutes=7)
    pds.fail_next(CREATE, 429, "RateLimitExceeded", "Rate Limit Exceeded", headers={
        "ratelimit-limit": "5000", "ratelimit-remaining": "0", "ratelimit-reset": str(int(reset.timestamp())),
        "ratelimit-policy": "5000;w=3600"})
    (action_id,) = add_actions(app, workspace_id, 1, payload={"text": "Fresh bread"})
    tick(app)
    after = row(app, action_id)
    assert after.status == "queued" and after.next_attempt_at >= reset
    assert after.next_attempt_at - reset < timedelta(seconds=60)  # the reset, not the backoff's guess
    assert pds.named(GET) == []


def test_a_create_that_timed_out_but_landed_is_found_and_published_without_a_second_create(app, pds):
    workspace_id = channel(app, pds)
    pds.stall_next(CREATE, 0.5, create_anyway=True)
    (action_id,) = add_actions(app, workspace_id, 1, payload={"text": "Fresh bread"})
    tick(app)
    after = row(app, action_id)
    assert after.status == "published", after.last_error
    key = rkey(app, action_id)
    assert after.provider_id == f"{pds.uri(key)} {pds.records[key][1]}"
    assert len(pds.named(CREATE)) == 1 and pds.named(GET)[0].args == {
        "repo": pds.did, "collection": "app.bsky.feed.post", "rkey": key}
    reasons = [event.reason for event in events(app, action_id)]
    assert any("did not answer" in reason and "Bluesky has the post" in reason for reason in reasons if reason)


def test_a_create_that_failed_and_did_not_land_is_sent_once_more_under_the_same_key(app, pds, clock):
    workspace_id = channel(app, pds)
    pds.fail_next(CREATE, 502, "UpstreamFailure", "Bad Gateway")
    (action_id,) = add_actions(app, workspace_id, 1, payload={"text": "Fresh bread"})
    tick(app)
    after = row(app, action_id)
    assert after.status == "queued" and "never made" in after.last_error
    clock.advance(minutes=2)
    tick(app)
    assert row(app, action_id).status == "published"
    keys = [call.json()["rkey"] for call in pds.named(CREATE)]
    assert keys == [rkey(app, action_id)] * 2 and len(pds.records) == 1


def test_a_resend_refused_because_the_first_create_landed_is_settled_by_asking_again(app, pds, clock):
    workspace_id = channel(app, pds)
    pds.fail_next(CREATE, 504, "UpstreamTimeout", "Gateway Timeout", create_anyway=True)
    pds.fail_next(GET, 503, "NotEnoughResources", "try later")  # asking could not tell: retried under the key
    (action_id,) = add_actions(app, workspace_id, 1, payload={"text": "Fresh bread"})
    tick(app)
    assert row(app, action_id).status == "queued"
    clock.advance(minutes=2)
    tick(app)  # the PDS answers the second create with a 500 (the key exists); asking finds the first
    after = row(app, action_id)
    assert after.status == "published", after.last_error
    assert len(pds.named(CREATE)) == 2 and len(pds.records) == 1
    assert after.provider_id.startswith(pds.uri(rkey(app, action_id)))


def _lose_the_worker(app, action_id: int, clock) -> None:
    """The row as a worker that claimed it and died leaves it: submitted, long ago."""
    with app.app_context(), write_session() as session:
        session.execute(update(ScheduledAction).where(ScheduledAction.id == action_id).values(
            status="submitted", claim_token="dead-worker", submitted_at=clock.now(), attempt_count=1))
    clock.advance(minutes=1)


@pytest.mark.parametrize("landed", [True, False, None])
def test_dead_worker_recovery_asks_bluesky_before_giving_up(app, pds, clock, landed):
    workspace_id = channel(app, pds)
    (action_id,) = add_actions(app, workspace_id, 1, payload={"text": "Fresh bread"})
    key = rkey(app, action_id)
    _lose_the_worker(app, action_id, clock)
    if landed:  # the dead worker's create went through before it died
        pds.records[key] = ({"$type": "app.bsky.feed.post", "text": "Fresh bread"}, "bafyreifound")
    if landed is None:  # the PDS cannot answer the question
        pds.fail_next(GET, 503, "NotEnoughResources", "try later")
    summary = tick(app)
    after = row(app, action_id)
    assert summary["recovered"] == 1
    assert pds.named(GET)[0].args["rkey"] == key
    if landed is None:  # no answer: today's rule, failed for a person (a retry is safe: the key stays)
        assert after.status == "failed" and after.failure_code == "worker_lost"
        assert after.last_error.startswith("worker lost; outcome unknown") and "no answer" in after.last_error
        assert pds.named(CREATE) == []
    elif landed:
        assert after.status == "published" and after.provider_id == f"{pds.uri(key)} bafyreifound"
        assert pds.named(CREATE) == []
    else:  # never made: back to queued, and this very tick sends it under the same key
        assert after.status == "published" and after.attempt_count == 2, after.last_error
        assert [call.json()["rkey"] for call in pds.named(CREATE)] == [key]
        assert any("sent again under the same key" in (event.reason or "") for event in events(app, action_id))


def test_the_cli_adds_a_bluesky_channel(app, pds):
    runner = app.test_cli_runner()
    assert runner.invoke(args=["workspace", "create", "Acme", "--timezone", "UTC"]).exit_code == 0
    answer = runner.invoke(args=["channel", "add", "--workspace", "Acme", "--name", "sky", "--kind", "bluesky",
                                 "--url", pds.url, "--secret", pds.password, "--config", json.dumps({"handle": pds.handle})])
    assert answer.exit_code == 0, answer.output
    with app.app_context():
        from sqlalchemy import select

        from models.channels.tables import Channel
        from models.core.database import read_session
        with read_session() as session:
            made = session.scalar(select(Channel).where(Channel.name == "sky"))
            assert made.kind == "bluesky" and made.config == {"url": pds.url, "handle": pds.handle}
            assert made.secret(runtime().secret_box) == pds.password
    assert rows(app) == {}


def test_an_ask_under_a_claim_that_is_no_longer_the_workers_changes_nothing(app, pds, clock):
    from models.actions import lifecycle

    workspace_id = channel(app, pds)
    (action_id,) = add_actions(app, workspace_id, 1, payload={"text": "Fresh bread"})
    _lose_the_worker(app, action_id, clock)
    with app.app_context(), write_session() as session:
        stale = lifecycle.ask(session, action_id, claim_token="someone-else", message="asked", now=clock.now(),
                              actor=Actor(label="test"))
        mine = lifecycle.ask(session, action_id, claim_token="dead-worker", message="asked: not yet", now=clock.now(),
                             actor=Actor(label="test"))
    assert not stale.ok and stale.reason.value == "claim_lost"
    assert mine.ok and row(app, action_id).last_error == "asked: not yet"
    assert [(event.from_status, event.to_status) for event in events(app, action_id)][-1:] == [("submitted", "submitted")]



def test_a_pds_the_egress_policy_refuses_fails_the_row_and_sends_nothing(app, pds):
    workspace_id = make_channel(app, "bluesky", {"url": "http://10.255.255.1", "handle": pds.handle}, pds.password)
    (action_id,) = add_actions(app, workspace_id, 1, payload={"text": "Fresh bread"})
    tick(app)
    after = row(app, action_id)
    assert after.status == "failed" and after.failure_code == "permanent"
    assert "not allowed" in after.last_error and pds.calls == []


def test_a_channels_test_send_signs_in_and_posts_nothing(app, pds):
    from models.channels.providers import Delivery, SendContext, send_alone
    from models.channels.providers.http import http_client

    with app.app_context():
        now = runtime().now()
        delivery = Delivery(action_id=None, workspace_id=1, channel_id=1, channel_name="sky", action_type="test_send",
                            target_key="test", payload={"body": "A test message from Tickwork."}, publish_at=now,
                            attempt=1, config={"url": pds.url, "handle": pds.handle}, secret=pds.password)
        result = send_alone("bluesky", delivery, SendContext(now=now, timeout=1, http=http_client()))
    assert result.outcome.value == "success" and "nothing was posted" in result.message
    assert [call.nsid for call in pds.calls] == [SESSION] and pds.records == {}


@pytest.mark.parametrize("text,rule", [
    ("a" * 301, "text.graphemes"),
    ("👩‍👩‍👧‍👦" * 121, "text.utf8_bytes"),  # 121 graphemes, 3,025 bytes
])
def test_a_post_too_long_for_bluesky_is_refused_at_save_naming_the_rule(app, client, world, pds, text, rule):
    from models.channels.tables import Channel

    with app.app_context(), write_session() as session:
        session.add(Channel(workspace_id=world.workspace_id, name="sky", kind="bluesky", created_at=runtime().now(),
                            config={"url": pds.url, "handle": pds.handle}))
    answer = client.post("/api/v1/posts", headers=world.auth("marketer"), json={
        "body": text, "targets": ["sky"], "local_time": "2026-06-01T10:00"})
    assert answer.status_code == 422, answer.json
    error = answer.json["error"]
    assert error["code"] == "too_long" and error["rule"] == rule and error["channel"] == "sky"


def test_a_burst_of_sends_on_one_channel_signs_in_once(pds, egress_allow):
    """Bluesky allows an account 30 createSession calls per five minutes: 16 sends at once share one sign-in."""
    import threading

    from models.channels.providers import SendContext
    from models.channels.providers.base import Delivery
    from models.channels.providers.http import http_client
    from tests.conftest import EGRESS_ALLOW, T0

    egress_allow(EGRESS_ALLOW)
    results, start = [], threading.Barrier(16)

    def send(number: int) -> None:
        delivery = Delivery(action_id=number, workspace_id=1, channel_id=1, channel_name="main",
                            action_type="publish_post", target_key=f"t{number}", payload={"text": f"bread {number}"},
                            publish_at=T0, attempt=1, config={"url": pds.url, "handle": pds.handle},
                            secret=pds.password, created_at=T0)
        start.wait()
        results.append(bluesky.send(delivery, SendContext(now=T0, timeout=5, http=http_client())).outcome.value)

    threads = [threading.Thread(target=send, args=(n,)) for n in range(1, 17)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert results == ["success"] * 16
    assert len(pds.named(SESSION)) == 1 and len(pds.named(CREATE)) == 16
