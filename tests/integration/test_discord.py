"""Discord through a channel's webhook, against a loopback fake of Execute Webhook: the exact request (JSON, or
multipart with ``payload_json`` and ``files[n]``), no pings, the message id back, each documented error's outcome."""

import json
from datetime import timedelta

import pytest

from models.channels.providers import discord
from tests.fakes.discord import FakeDiscord
from tests.integration.chat_helpers import add_channel, direct_send, new_post, send_post, send_row, upload
from tests.integration.clock_helpers import channel_needs_reconnecting, events, give_a_new_secret
from tests.media_files import png_bytes


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_POLICY"] = {"provider_timeout": 2, "backoff_base": 30, "backoff_cap": 600}
    return app_config


@pytest.fixture
def fake(httpserver):
    return FakeDiscord(httpserver)


@pytest.fixture
def channel(app, world, fake):
    add_channel(app, "discord", fake.url, fake.token, {"rate": "none"})
    return "discord"


def test_a_post_with_images_is_one_multipart_execute_webhook_with_alt_text_and_no_pings(
        app, client, world, clock, fake, channel):
    first = upload(client, world, png_bytes(size=(40, 30)), alt="Loaves on a rack")
    second = upload(client, world, png_bytes(size=(30, 40), text=None))
    body = "Fresh bread at nine, @everyone **welcome**"
    sent = send_post(app, client, world, clock, channel, body, [first, second])
    assert sent.status == "published", sent.last_error
    [request] = fake.received
    assert request.path == f"/api/webhooks/{fake.webhook_id}/{fake.token}" and request.query == {"wait": "true"}
    assert request.headers["Content-Type"].startswith("multipart/form-data")
    assert json.loads(request.form["payload_json"]) == {
        "content": body,  # verbatim: Discord renders the markdown, and the mention pings nobody
        "allowed_mentions": {"parse": []},
        "attachments": [{"id": 0, "filename": f"{first}.png", "description": "Loaves on a rack"},
                        {"id": 1, "filename": f"{second}.png"}]}
    stored = client.get(f"/api/v1/media/{first}/file", headers=world.auth())
    assert request.files["files[0]"] == (f"{first}.png", "image/png", stored.get_data())
    stored.close()
    assert set(request.files) == {"files[0]", "files[1]"}
    assert sent.provider_id == fake.messages[0]["id"]


def test_text_alone_is_json_and_mentions_ping_only_what_the_channel_allows(app, world, fake, httpserver):
    add_channel(app, "discord", fake.url, fake.token, {"rate": "none", "allowed_mentions": ["users"]},
                name="pings")
    sent = send_row(app, world.workspace_id, {"body": "Hello <@80351110224678912>"}, channel="pings")
    assert sent.status == "published", sent.last_error
    assert fake.received[0].json == {"content": "Hello <@80351110224678912>", "allowed_mentions": {"parse": ["users"]}}
    assert fake.received[0].query == {"wait": "true"}


def test_a_429_waits_as_long_as_discord_asks(app, world, clock, fake, channel):
    fake.answer_next(429, {"message": "You are being rate limited.", "retry_after": 64.57, "global": False},
                     {"X-RateLimit-Reset-After": "64.57", "Retry-After": "65", "X-RateLimit-Bucket": "abcd"})
    later = send_row(app, world.workspace_id, {"body": "Bread"}, channel=channel)
    assert later.status == "queued" and later.attempt_count == 1
    assert later.next_attempt_at == clock.now() + timedelta(seconds=65)  # the longest of the three, beyond backoff
    assert "rate limiting" in later.last_error and "You are being rate limited" in later.last_error


def test_a_deleted_webhook_or_a_wrong_token_fails_for_good_and_needs_reconnecting(app, world, fake, channel):
    for status, body in ((404, {"message": "Unknown Webhook", "code": 10015}),
                         (401, {"message": "Invalid Webhook Token", "code": 50027})):
        fake.answer_next(status, body)
        failed = send_row(app, world.workspace_id, {"body": "Bread"}, channel=channel)
        assert failed.status == "failed" and failed.failure_code == "reconnect_needed"
        assert body["message"] in failed.last_error and "make a new webhook" in failed.last_error
        assert fake.token not in failed.last_error
        assert channel_needs_reconnecting(app, failed.channel_id)
        give_a_new_secret(app, failed.channel_id)
    result = direct_send(discord, {"url": fake.url}, "not-the-token", {"body": "Bread"})  # the fake's own 401
    assert result.outcome.value == "permanent" and result.reconnect_needed


def test_a_refused_message_fails_with_discords_words_and_a_5xx_is_an_unknown_outcome(app, world, clock, fake,
                                                                                    channel):
    too_long = send_row(app, world.workspace_id, {"body": "x" * 2001}, channel=channel)  # past the save's check
    assert too_long.status == "failed" and too_long.failure_code == "permanent"
    assert "Invalid Form Body" in too_long.last_error and "400" in too_long.last_error
    fake.answer_next(502, {"message": "Bad Gateway"})
    doubtful = send_row(app, world.workspace_id, {"body": "Bread"}, channel=channel)
    assert doubtful.status == "failed" and doubtful.failure_code == "outcome_unknown"  # no idempotency key to retry on
    assert [event.to_status for event in events(app, doubtful.id)][-1] == "failed"


def test_a_post_discord_would_refuse_is_refused_at_save_naming_the_channel_and_the_rule(app, client, world, fake,
                                                                                        channel):
    answer = new_post(client, world, [channel], "x" * 2001)
    assert answer.status_code == 422
    error = answer.json["error"]
    assert (error["field"], error["channel"], error["rule"]) == ("body", channel, "text.characters")
    assert new_post(client, world, [channel], "x" * 2000).status_code == 201
    # And a channel whose url carries the webhook's token is refused: the token belongs in the sealed secret.
    result = app.test_cli_runner().invoke(args=[
        "channel", "add", "--workspace", "Acme", "--name", "leaky", "--kind", "discord",
        "--url", f"{fake.url}/{fake.token}", "--secret", fake.token])
    assert result.exit_code != 0 and "without its token" in result.output
