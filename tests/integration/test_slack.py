"""Slack through a bot token, against a loopback fake of the Web API: ``chat.postMessage``, files uploaded (still
private) before the message and shared into its thread after it, and errors that come as HTTP 200 ``ok: false``
mapped by their ``error``."""

from datetime import timedelta

import pytest

from models.channels.providers import slack
from tests.fakes.slack import FakeSlack
from tests.integration.chat_helpers import add_channel, direct_send, send_post, send_row, upload
from tests.integration.clock_helpers import channel_needs_reconnecting, give_a_new_secret, row, tick
from tests.media_files import png_bytes

CHANNEL_ID = "C0TICKWORK"


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_POLICY"] = {"provider_timeout": 2, "backoff_base": 30, "backoff_cap": 600}
    return app_config


@pytest.fixture
def fake(httpserver):
    return FakeSlack(httpserver, channels=(CHANNEL_ID,))


@pytest.fixture
def channel(app, world, fake):
    add_channel(app, "slack", fake.url, fake.token, {"channel": CHANNEL_ID, "rate": "none"})
    return "slack"


def test_a_post_with_images_uploads_them_then_posts_then_shares_them_into_the_messages_thread(
        app, client, world, clock, fake, channel):
    photo = png_bytes(size=(40, 30))
    first = upload(client, world, photo, alt="Loaves on a rack")
    second = upload(client, world, png_bytes(size=(30, 40), text=None))
    body = "Fresh bread at nine: <https://bakery.example|our menu> *today*"
    sent = send_post(app, client, world, clock, channel, body, [first, second])
    assert sent.status == "published", sent.last_error
    paths = [request.path for request in fake.received]
    assert paths == ["/api/files.getUploadURLExternal", "/upload/v1/F0000000001",
                     "/api/files.getUploadURLExternal", "/upload/v1/F0000000002",
                     "/api/chat.postMessage", "/api/files.completeUploadExternal"]
    ask = fake.requests_to("files.getUploadURLExternal")[0]
    assert ask.headers["Authorization"] == f"Bearer {fake.token}"
    stored = client.get(f"/api/v1/media/{first}/file", headers=world.auth())
    assert ask.form == {"filename": f"{first}.png", "length": str(len(stored.get_data())), "alt_txt": "Loaves on a rack"}
    assert "alt_txt" not in fake.requests_to("files.getUploadURLExternal")[1].form
    assert fake.uploads["F0000000001"]["bytes"] == stored.get_data()
    stored.close()
    assert "Authorization" not in fake.received[1].headers  # the token stays with the Web API
    [message] = fake.requests_to("chat.postMessage")
    assert message.headers["Content-Type"] == "application/json; charset=utf-8"  # else Slack warns missing_charset
    assert message.json == {"channel": CHANNEL_ID, "text": body, "unfurl_links": True}
    ts = fake.messages[0]["ts"]
    assert fake.shared == [{"files": [{"id": "F0000000001", "title": "Loaves on a rack"},
                                      {"id": "F0000000002", "title": f"{second}.png"}],
                            "channel_id": CHANNEL_ID, "thread_ts": ts}]
    assert sent.provider_id == f"{CHANNEL_ID}:{ts}"


def test_text_alone_is_one_chat_post_message_to_the_conversation_the_channel_names(app, world, fake):
    nowhere = app.test_cli_runner().invoke(args=[
        "channel", "add", "--workspace", "Acme", "--name", "nowhere", "--kind", "slack", "--url", fake.url,
        "--secret", fake.token])
    assert nowhere.exit_code != 0 and "conversation's id" in nowhere.output
    add_channel(app, "slack", fake.url, fake.token, {"channel": CHANNEL_ID, "unfurl_links": False}, name="quiet")
    sent = send_row(app, world.workspace_id, {"body": "Bread"}, channel="quiet")
    assert sent.status == "published", sent.last_error
    assert [request.path for request in fake.received] == ["/api/chat.postMessage"]
    assert fake.received[0].json == {"channel": CHANNEL_ID, "text": "Bread", "unfurl_links": False}


ERRORS = [  # (Slack's error, the row's status, its failure code)
    ("channel_not_found", "failed", "permanent"),
    ("not_in_channel", "failed", "permanent"),
    ("is_archived", "failed", "permanent"),
    ("msg_too_long", "failed", "permanent"),
    ("no_text", "failed", "permanent"),
    ("invalid_auth", "failed", "reconnect_needed"),
    ("token_revoked", "failed", "reconnect_needed"),
    ("internal_error", "failed", "outcome_unknown"),
    ("fatal_error", "failed", "outcome_unknown"),
    ("service_unavailable", "failed", "outcome_unknown"),
    ("request_timeout", "failed", "outcome_unknown"),
]


def test_each_documented_error_that_comes_as_http_200_ok_false_is_mapped_by_its_error(app, world, fake, channel):
    for error, status, code in ERRORS:
        fake.answer_next("chat.postMessage", {"ok": False, "error": error})
        after = send_row(app, world.workspace_id, {"body": f"Bread for {error}"}, channel=channel)
        assert (after.status, after.failure_code) == (status, code), (error, after.last_error)
        assert error in after.last_error
        assert channel_needs_reconnecting(app, after.channel_id) == (code == "reconnect_needed")
        give_a_new_secret(app, after.channel_id)


@pytest.mark.parametrize("error", ["invalid_auth", "token_revoked", "account_inactive", "token_expired"])
def test_a_revoked_or_refused_token_needs_reconnecting(fake, error, egress_allow):
    fake.answer_next("chat.postMessage", {"ok": False, "error": error})
    result = direct_send(slack, {"url": fake.url, "channel": CHANNEL_ID}, fake.token, {"body": "Bread"})
    assert result.outcome.value == "permanent" and result.reconnect_needed and "reconnect" in result.message
    refused = direct_send(slack, {"url": fake.url, "channel": "C0UNKNOWN"}, fake.token, {"body": "Bread"})
    assert refused.outcome.value == "permanent" and not refused.reconnect_needed


def test_a_rate_limit_waits_for_retry_after_whether_as_http_429_or_ok_false(app, world, clock, fake, channel):
    add_channel(app, "slack", fake.url, fake.token, {"channel": CHANNEL_ID, "rate": "none"}, name="other")
    for status, name in ((429, channel), (200, "other")):  # two channels: a pause holds every row of its own
        fake.answer_next("chat.postMessage", {"ok": False, "error": "ratelimited"}, status=status,
                         headers={"Retry-After": "90"})
        later = send_row(app, world.workspace_id, {"body": f"Bread {status}"}, channel=name)
        assert later.status == "queued" and later.next_attempt_at == clock.now() + timedelta(seconds=90), status
        assert "ratelimited" in later.last_error, status


def test_an_upload_that_fails_posts_nothing_and_a_failed_share_keeps_the_message_published(
        app, client, world, clock, fake, channel):
    photo = upload(client, world, png_bytes(), alt="Loaf")
    fake.answer_next("files.getUploadURLExternal", {"ok": False, "error": "internal_error"})
    not_yet = send_post(app, client, world, clock, channel, "Bread", [photo])
    assert not_yet.status == "queued" and "nothing was posted" in not_yet.last_error  # never in doubt: it was private
    assert fake.messages == []
    fake.answer_next("files.completeUploadExternal", {"ok": False, "error": "internal_error"})
    clock.advance(minutes=15)
    tick(app)
    posted = row(app, not_yet.id)
    assert posted.status == "published" and len(fake.messages) == 1  # a retry would post the message twice

