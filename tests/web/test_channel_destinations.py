"""The channel form and the egress policy: an internal destination is a 422 naming its field, a test
send to one says "destination not allowed" and shows nothing of it, and a stored secret never follows
a changed destination: it must be typed again, and the change is an event on the channel."""

import re

import pytest
from pytest_httpserver import HTTPServer
from sqlalchemy import select

from models.channels.tables import Channel, ChannelEvent
from models.core.database import read_session, write_session
from models.core.runtime import runtime

HOOKS = "/channels"


def text(answer) -> str:
    return answer.get_data(as_text=True)


def channel_named(app, name: str) -> Channel | None:
    with app.app_context(), read_session() as session:
        return session.scalar(select(Channel).where(Channel.name == name))


def events_of(app, channel_id: int) -> list[ChannelEvent]:
    with app.app_context(), read_session() as session:
        return list(session.scalars(select(ChannelEvent).where(ChannelEvent.channel_id == channel_id)
                                    .order_by(ChannelEvent.id)))


@pytest.mark.parametrize("kind, settings, field", [
    ("webhook", "url = http://127.0.0.1:8080/hook", "url"),
    ("webhook", "url = http://2130706433/hook", "url"),
    ("webhook", "url = http://x@127.0.0.1/", "url"),
    ("mastodon", "url = file:///etc/passwd", "url"),
    ("mastodon", "url = http://[::1]/", "url"),
    ("postmark", "from = a@example.com\nurl = http://169.254.169.254/latest/meta-data/", "url"),
    ("twilio", "account_sid = AC1\nfrom = +15555550000\nurl = http://0x7f000001/", "url"),
    ("smtp", "host = localhost\nport = 25\nfrom = a@example.com", "host"),
    ("smtp", "host = 127.1\nfrom = a@example.com", "host"),
])
def test_an_internal_destination_is_a_422_naming_the_field_and_nothing_is_saved(app, world, browser_for, egress_allow,
                                                                                 kind, settings, field):
    egress_allow("")
    admin = browser_for("admin")
    answer = admin.post(HOOKS, {"name": "inside", "kind": kind, "settings": settings, "secret": "tok"})
    assert answer.status_code == 422
    page = text(answer)
    assert f"{field}" in page and ("destination not allowed" in page or "http(s) url" in page)
    assert 'aria-invalid="true"' in page
    assert channel_named(app, "inside") is None


def test_a_test_send_to_an_internal_address_says_so_and_shows_nothing_of_it(app, world, browser_for, httpserver,
                                                                             egress_allow):
    inside = HTTPServer(host="127.0.0.2", port=0)
    inside.expect_request("/admin", method="POST").respond_with_data("root:x:0:0 internal", status=400)
    inside.start()
    try:
        with app.app_context(), write_session() as session:  # saved before the policy
            channel = session.scalar(select(Channel).where(Channel.workspace_id == world.workspace_id))
            channel.kind, channel.config = "webhook", {"url": inside.url_for("/admin")}
            channel_id = channel.id
        egress_allow("127.0.0.1/32")
        admin = browser_for("admin")
        answer = admin.post(f"/channels/{channel_id}/test", {"target": "x"}, htmx=True)
        assert answer.status_code == 502
        assert "destination not allowed" in text(answer) and "root:x" not in text(answer)
        assert inside.log == []
        # From an allowed receiver its words are shown, trimmed and without control characters.
        httpserver.expect_request("/noisy", method="POST").respond_with_data(
            "\x1b[31mbad token\x1b[0m\r\n" + "z" * 3000, status=400)
        with app.app_context(), write_session() as session:
            session.get(Channel, channel_id).config = {"url": httpserver.url_for("/noisy")}
        noisy = text(admin.post(f"/channels/{channel_id}/test", {"target": "x"}, htmx=True))
        assert "bad token" in noisy and "\x1b" not in noisy and "z" * 400 not in noisy
    finally:
        inside.clear()
        inside.stop()


def test_a_stored_secret_never_follows_a_changed_url_and_the_change_is_an_event(app, world, browser_for, httpserver):
    """The reported attack: a Postmark channel's url edited to another host, the secret left blank."""
    elsewhere = HTTPServer(host="127.0.0.1", port=0)
    seen_tokens = []

    def record(request):
        from werkzeug import Response

        seen_tokens.append(request.headers.get("X-Postmark-Server-Token"))
        return Response('{"MessageID": "m1"}', status=200, content_type="application/json")

    elsewhere.expect_request("/email", method="POST").respond_with_handler(record)
    elsewhere.start()
    try:
        admin = browser_for("admin")
        made = admin.post(HOOKS, {"name": "mail", "kind": "postmark", "secret": "old-server-token",
                                  "settings": f"from = shop@example.com\nurl = {httpserver.url_for('/').rstrip('/')}"})
        assert made.status_code == 303, text(made)[:400]
        channel = channel_named(app, "mail")
        edit = f"/channels/{channel.id}"
        moved_settings = f"from = shop@example.com\nurl = http://127.0.0.1:{elsewhere.port}"
        refused = admin.post(edit, {"name": "mail", "kind": "postmark", "settings": moved_settings})
        assert refused.status_code == 422
        page = text(refused)
        assert "needs its secret again" in page and 'id="secret" name="secret" type="password"' in page
        assert re.search(r'id="secret"[^>]*aria-invalid="true"', page)  # the secret field is the one marked
        unchanged = channel_named(app, "mail")
        assert unchanged.config == channel.config and [e.change for e in events_of(app, channel.id)] == ["created"]
        for other in ({"kind": "webhook", "settings": f"url = {httpserver.url_for('/')}"},  # a kind that sends it elsewhere
                      {"kind": "postmark", "settings": moved_settings.replace("127.0.0.1", "localhost")}):
            assert admin.post(edit, {"name": "mail", **other}).status_code == 422

        saved = admin.post(edit, {"name": "mail", "kind": "postmark", "settings": moved_settings,
                                  "secret": "new-server-token"})
        assert saved.status_code == 303
        created, changed = events_of(app, channel.id)
        assert created.change == "created" and created.actor == "user:admin@acme.test"
        assert changed.change == "destination_changed" and changed.actor_user_id == world.users["admin"]
        assert changed.detail == {"from_kind": "postmark", "from_destination": httpserver.url_for("/").rstrip("/"),
                                  "to_kind": "postmark", "to_destination": f"http://127.0.0.1:{elsewhere.port}",
                                  "secret": "replaced"}
        assert "token" not in repr([(e.detail, e.actor) for e in (created, changed)])
        history = text(admin.get(edit))
        assert "destination changed from" in history and f"127.0.0.1:{elsewhere.port}" in history

        sent = admin.post(f"/channels/{channel.id}/test", {"target": "ann@example.com"}, htmx=True)
        assert sent.status_code == 200, text(sent)
        assert seen_tokens == ["new-server-token"]  # the old token never went to the new host
        with app.app_context():
            assert channel_named(app, "mail").secret(runtime().secret_box) == "new-server-token"
    finally:
        elsewhere.clear()
        elsewhere.stop()


def test_an_smtp_relay_moved_to_another_host_or_port_needs_its_password_again(app, world, browser_for):
    admin = browser_for("admin")
    base = "from = shop@example.com\nusername = shop\n"
    made = admin.post(HOOKS, {"name": "relay", "kind": "smtp", "secret": "pw-1",
                              "settings": base + "host = smtp.example.com\nport = 587"})
    assert made.status_code == 303
    edit = made.headers["Location"]
    for settings in ("host = smtp.other.example\nport = 587", "host = smtp.example.com\nport = 2525"):
        answer = admin.post(edit, {"name": "relay", "kind": "smtp", "settings": base + settings})
        assert answer.status_code == 422 and "needs its secret again" in text(answer)
    renamed = admin.post(edit, {"name": "relay2", "kind": "smtp", "settings": base + "host = smtp.example.com\n"
                                                                                     "port = 587\nsecurity = ssl"})
    assert renamed.status_code == 303  # another setting, the same destination: the password stays
    cleared = admin.post(edit, {"name": "relay2", "kind": "smtp", "clear_secret": "yes",
                                "settings": base + "host = smtp.other.example\nport = 587"})
    assert cleared.status_code == 303  # no secret goes anywhere: nothing to retype
    channel = channel_named(app, "relay2")
    assert channel.secret_sealed is None
    assert [(e.change, e.detail.get("secret")) for e in events_of(app, channel.id)] == [
        ("created", "set"), ("destination_changed", "removed")]


def test_the_works_form_refuses_an_internal_webhook_url(app, world, browser_for, egress_allow):
    egress_allow("")
    ops = browser_for("ops")
    answer = ops.post("/works", {"name": "Site", "pipeline": "webhook", "url": "http://0x7f000001:8080/generate"})
    assert answer.status_code == 422
    assert "settings.url: destination not allowed" in text(answer)
    from models.works.tables import Work

    with app.app_context(), read_session() as session:
        assert session.scalar(select(Work.id)) is None
