"""Telegram through a bot token, against a loopback fake of the Bot API: ``sendMessage``, ``sendPhoto`` and
``sendMediaGroup`` (the caption on the first item), each documented error's outcome, ``parameters.retry_after``
honoured, and the caption's 1,024 characters refused at save."""

import json
from datetime import timedelta

import pytest

from models.channels.providers import telegram
from tests.fakes.telegram import FakeTelegram
from tests.integration.chat_helpers import add_channel, direct_send, new_post, send_post, send_row, upload
from tests.media_files import png_bytes

CHAT = "-1001234567890"


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_POLICY"] = {"provider_timeout": 2, "backoff_base": 30, "backoff_cap": 600}
    return app_config


@pytest.fixture
def fake(httpserver):
    return FakeTelegram(httpserver, chats=(CHAT,))


@pytest.fixture
def channel(app, world, fake):
    add_channel(app, "telegram", fake.url, fake.token, {"chat_id": CHAT, "rate": "none"})
    return "telegram"


def test_text_alone_is_send_message_with_the_text_verbatim(app, world, fake, channel):
    body = "Fresh <b>bread</b> at *nine*"  # no parse mode: nothing in it is markup
    sent = send_row(app, world.workspace_id, {"body": body}, channel=channel)
    assert sent.status == "published", sent.last_error
    [request] = fake.received
    assert request.path == f"/bot{fake.token}/sendMessage"
    assert request.json == {"chat_id": CHAT, "text": body}
    assert sent.provider_id == f"{CHAT}:{fake.messages[0]['message_id']}"


def test_one_image_is_send_photo_with_the_text_as_its_caption(app, client, world, clock, fake, channel):
    photo = upload(client, world, png_bytes(size=(40, 30)), alt="Loaves")
    sent = send_post(app, client, world, clock, channel, "Fresh bread", [photo])
    assert sent.status == "published", sent.last_error
    [request] = fake.received
    assert request.path == f"/bot{fake.token}/sendPhoto"
    assert request.form == {"chat_id": CHAT, "caption": "Fresh bread"}
    stored = client.get(f"/api/v1/media/{photo}/file", headers=world.auth())
    assert request.files == {"photo": (f"{photo}.png", "image/png", stored.get_data())}
    stored.close()


def test_several_images_are_one_media_group_with_the_caption_on_the_first(app, client, world, clock, fake, channel):
    photos = [upload(client, world, png_bytes(size=(30 + n, 30), text=None)) for n in range(3)]
    sent = send_post(app, client, world, clock, channel, "Three loaves", photos)
    assert sent.status == "published", sent.last_error
    [request] = fake.received
    assert request.path == f"/bot{fake.token}/sendMediaGroup"
    assert request.form["chat_id"] == CHAT
    assert json.loads(request.form["media"]) == [
        {"type": "photo", "media": "attach://file0", "caption": "Three loaves"},
        {"type": "photo", "media": "attach://file1"}, {"type": "photo", "media": "attach://file2"}]
    assert [request.files[f"file{n}"][0] for n in range(3)] == [f"{photo}.png" for photo in photos]
    assert sent.provider_id == f"{CHAT}:{fake.messages[0]['message_id']}"  # the album's first message


def test_a_caption_over_1024_characters_is_refused_at_save_naming_the_channel_and_the_rule(app, client, world,
                                                                                          channel):
    photo = upload(client, world, png_bytes())
    answer = new_post(client, world, [channel], "x" * 1025, [photo])
    assert answer.status_code == 422
    error = answer.json["error"]
    assert (error["field"], error["channel"], error["rule"]) == ("body", channel, "caption.characters")
    assert channel in error["message"] and "1,024" in error["message"]
    assert new_post(client, world, [channel], "x" * 1024, [photo]).status_code == 201
    assert new_post(client, world, [channel], "x" * 4096).status_code == 201  # without media, a message's 4,096
    longest = new_post(client, world, [channel], "x" * 4097)
    assert longest.status_code == 422 and longest.json["error"]["rule"] == "text.characters"


def test_a_429_waits_for_the_retry_after_in_its_body(app, world, clock, fake, channel):
    fake.answer_next("sendMessage", {"ok": False, "error_code": 429, "description": "Too Many Requests: retry after 120",
                                     "parameters": {"retry_after": 120}}, 429)
    later = send_row(app, world.workspace_id, {"body": "Bread"}, channel=channel)
    assert later.status == "queued" and later.next_attempt_at == clock.now() + timedelta(seconds=120)
    assert "Too Many Requests" in later.last_error


def test_each_documented_error_is_mapped(app, world, fake, channel):
    cases = [
        (403, "Forbidden: bot was blocked by the user", "permanent"),
        (403, "Forbidden: bot was kicked from the supergroup chat", "permanent"),
        (400, "Bad Request: chat not found", "permanent"),
        (502, "Bad Gateway", "outcome_unknown"),
    ]
    for status, description, code in cases:
        fake.answer_next("sendMessage", {"ok": False, "error_code": status, "description": description}, status)
        after = send_row(app, world.workspace_id, {"body": "Bread"}, channel=channel)
        assert (after.status, after.failure_code) == ("failed", code), (description, after.last_error)
        assert description in after.last_error
    too_long = send_row(app, world.workspace_id, {"body": "x" * 4097}, channel=channel)  # past the save's check
    assert too_long.failure_code == "permanent" and "message is too long" in too_long.last_error


def test_a_refused_token_fails_for_good_needs_reconnecting_and_never_shows_the_token(app, world, fake):
    add_channel(app, "telegram", fake.url, "999:wrong-token", {"chat_id": CHAT}, name="stale")
    failed = send_row(app, world.workspace_id, {"body": "Bread"}, channel="stale")
    assert failed.status == "failed" and failed.failure_code == "reconnect_needed" and "Unauthorized" in failed.last_error
    assert "wrong-token" not in failed.last_error
    result = direct_send(telegram, {"url": fake.url, "chat_id": CHAT}, "999:wrong-token", {"body": "Bread"})
    assert result.reconnect_needed and "401" in result.message
    unknown_chat = direct_send(telegram, {"url": fake.url, "chat_id": "-100999"}, fake.token, {"body": "Bread"})
    assert unknown_chat.outcome.value == "permanent" and not unknown_chat.reconnect_needed
