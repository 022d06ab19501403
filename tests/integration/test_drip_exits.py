"""Pausing and the exits, against real databases and real servers: a loopback SMTP server (aiosmtpd) and
webhook receiver (pytest-httpserver), and the app served on a real port for the unsubscribe link."""

import email
import re
import socket
import threading
from email import policy as email_policy

import httpx
import pytest
from aiosmtpd.controller import Controller
from werkzeug.serving import make_server

from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.core.moves import Actor
from models.core.runtime import runtime
from models.drips import contacts as contact_moves
from models.drips.tables import Contact
from models.drips.webhooks import postmark_url, twilio_signature, twilio_url
from tests.conftest import make_world
from tests.integration.drip_helpers import (
    BASE_URL,
    advance,
    attempts,
    campaign,
    contacts,
    enroll,
    enrollments,
    outbox_count,
    sends,
    tick,
)

ONE_STEP = [{"delay": "PT0S", "subject": "Hello {{ contact.first_name }}", "body": "Fresh bread at nine."}]


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_BASE_URL"] = BASE_URL
    return app_config


def _channel(app, world, name: str, kind: str, config: dict, secret: str | None = None) -> int:
    with app.app_context(), write_session() as session:
        channel = Channel(workspace_id=world.workspace_id, name=name, kind=kind, config=config,
                          created_at=runtime().now())
        channel.set_secret(runtime().secret_box, secret)
        session.add(channel)
        session.flush()
        return channel.id


def _contact(app, contact_id: int) -> Contact:
    with app.app_context(), read_session() as session:
        return session.get(Contact, contact_id)


def test_pause_and_resume_re_mint_held_sends_once(app, world, client):
    campaign_id = campaign(app, world.workspace_id, steps=ONE_STEP)
    people = contacts(app, world.workspace_id, 3)
    queued = enroll(app, world.workspace_id, campaign_id, people)
    paused = client.post(f"/api/v1/campaigns/{campaign_id}/pause", headers=world.auth("marketer"))
    assert paused.status_code == 200 and paused.json["status"] == "paused"
    assert paused.json["followed"]["held"] == 3
    assert {(a.status, a.cancel_kind) for a in attempts(app)} == {("cancelled", "paused")}
    assert {s.status for s in sends(app)} == {"held"}
    assert advance(app)["minted"] == 0 and tick(app)["due"] == 0
    for _ in range(2):  # a double click, and the clock's own pass, re-mint nothing more
        resumed = client.post(f"/api/v1/campaigns/{campaign_id}/resume", headers=world.auth("marketer"))
        assert resumed.status_code == 200 and resumed.json["status"] == "active"
        advance(app)
    fresh = [a for a in attempts(app) if a.status == "queued"]
    assert sorted(a.rescheduled_from_id for a in fresh) == sorted(a.id for a in queued)
    assert {s.attempt_id for s in sends(app)} == {a.id for a in fresh}
    tick(app)
    advance(app)
    assert outbox_count(app) == 3
    assert [(e.status, e.current_step) for e in enrollments(app, campaign_id)] == [("completed", 1)] * 3


def test_an_attempt_queued_when_the_contact_unsubscribes_never_reaches_the_provider(app, world, client, httpserver):
    httpserver.expect_request("/hook", method="POST").respond_with_json({"id": "ok"})
    _channel(app, world, "hook", "webhook", {"url": httpserver.url_for("/hook")})
    campaign_id = campaign(app, world.workspace_id, steps=ONE_STEP, channel="hook")
    first, second = contacts(app, world.workspace_id, 2)
    [one, two] = enroll(app, world.workspace_id, campaign_id, [first, second])
    # The unsubscribe cancels the contact's queued attempt at once.
    answer = client.post(f"/api/v1/contacts/{first}/unsubscribe", headers=world.auth("marketer"))
    assert answer.status_code == 200 and (answer.json["exited"], answer.json["cancelled"]) == (1, 1)
    # An unsubscribe that lands after the dispatch looked at the row (here: the contact's move alone,
    # its cancel not made) meets the pre-send check in the claim's transaction instead.
    with app.app_context(), write_session() as session:
        contact = session.get(Contact, second)
        assert contact_moves.unsubscribe(session, contact, now=runtime().now(), actor=Actor(label="race"),
                                         reason="in flight").ok
    summary = tick(app)
    assert summary["outcomes"] == {"stopped:exited": 1}
    assert httpserver.log == []
    by_id = {a.id: a for a in attempts(app)}
    assert (by_id[one.id].status, by_id[one.id].cancel_kind) == ("cancelled", "exited")
    assert (by_id[two.id].status, by_id[two.id].cancel_kind) == ("cancelled", "exited")
    advance(app)
    assert {(e.status, e.exit_reason) for e in enrollments(app, campaign_id)} == {("exited", "unsubscribed")}
    assert {s.status for s in sends(app)} == {"exited"}


class Mailbox:
    def __init__(self):
        self.messages = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append(email.message_from_bytes(envelope.content, policy=email_policy.default))
        return "250 OK"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def live(app):
    """The app on a real port, and TICKWORK_BASE_URL pointing at it."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    app.config["TICKWORK_BASE_URL"] = f"http://127.0.0.1:{server.server_port}"
    yield app.config["TICKWORK_BASE_URL"]
    server.shutdown()
    thread.join(timeout=5)


def test_one_click_unsubscribe_from_the_email_with_rfc_8058s_body_and_a_link_that_changes_nothing(app, world, live):
    mailbox = Mailbox()
    controller = Controller(mailbox, hostname="127.0.0.1", port=_free_port())
    controller.start()
    try:
        _channel(app, world, "mail", "smtp", {"host": "127.0.0.1", "port": controller.port, "from": "shop@example.com",
                                              "security": "none", "unsubscribe_mailbox": "leave@shop.example"})
        campaign_id = campaign(app, world.workspace_id, steps=ONE_STEP + [{"delay": "P1D", "subject": "b", "body": "b"}],
                               channel="mail")
        [person] = contacts(app, world.workspace_id, 1)
        enroll(app, world.workspace_id, campaign_id, [person])
        tick(app)
    finally:
        controller.stop()
    [message] = mailbox.messages
    header = message["List-Unsubscribe"].strip()  # folded by the mail library; unfolded here
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    link = re.match(r"<(http[^>]+)>, <mailto:leave@shop\.example\?subject=unsubscribe>$", header).group(1)
    assert link.startswith(live + f"/unsubscribe/{world.workspace_id}/")
    assert f"Unsubscribe: {link}" in message.get_body(("plain",)).get_content()  # the visible link
    with httpx.Client(timeout=10) as browser:
        # A mail scanner following the link changes nothing.
        page = browser.get(link)
        assert page.status_code == 200 and "Unsubscribe?" in page.text
        assert _contact(app, person).status == "subscribed"
        # Tampered tokens, and a token made for another workspace, are refused alike.
        other = make_world(app, name="Globex")
        token = link.rsplit("/", 1)[1]
        refusals = [browser.post(url, content=b"List-Unsubscribe=One-Click",
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
                    for url in (link[:-2] + "xx", link.replace(f"/{world.workspace_id}/", f"/{other.workspace_id}/"),
                                f"{live}/unsubscribe/{world.workspace_id}/{token.split('.')[0]}")]
        assert {(r.status_code, "This unsubscribe link is not valid" in r.text) for r in refusals} == {(404, True)}
        assert _contact(app, person).status == "subscribed"
        # The mail provider's one-click POST, exactly as RFC 8058 has it: no session, no CSRF token.
        clicked = browser.post(link, content=b"List-Unsubscribe=One-Click",
                               headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert clicked.status_code == 200 and "You are unsubscribed" in clicked.text
        assert browser.post(link, content=b"List-Unsubscribe=One-Click",
                            headers={"Content-Type": "application/x-www-form-urlencoded"}).status_code == 200
    assert _contact(app, person).status == "unsubscribed"
    assert [(e.status, e.exit_reason) for e in enrollments(app, campaign_id)] == [("exited", "unsubscribed")]


@pytest.mark.only_backend("sqlite")  # what it proves does not depend on the database
def test_stop_from_a_signed_twilio_post_and_a_postmark_hard_bounce_end_the_contacts_enrollments(app, world, client):
    sms = _channel(app, world, "sms", "twilio", {"account_sid": "AC1", "from": "+15555550000"}, secret="auth-token")
    mail = _channel(app, world, "pm", "postmark", {"from": "shop@example.com"}, secret="server-token")
    texts = campaign(app, world.workspace_id, steps=[{"delay": "P1D", "body": "Fresh bread"}], channel="sms", name="SMS")
    mails = campaign(app, world.workspace_id, steps=[{"delay": "P1D", "subject": "Hi", "body": "Bread"}], channel="pm",
                     name="Mail")
    texter, mailer = contacts(app, world.workspace_id, 2, phone=True)
    enroll(app, world.workspace_id, texts, [texter])
    enroll(app, world.workspace_id, mails, [mailer])
    url = twilio_url(BASE_URL, sms)
    form = {"From": "+15550000000", "To": "+15555550000", "Body": " Stop ", "MessageSid": "SM1"}
    signature = twilio_signature("auth-token", url, list(form.items()))
    forged = client.post(url.removeprefix(BASE_URL), data=form, headers={"X-Twilio-Signature": signature[:-2] + "xx"})
    assert forged.status_code == 403 and _contact(app, texter).status == "subscribed"
    signed = client.post(url.removeprefix(BASE_URL), data=form, headers={"X-Twilio-Signature": signature})
    assert signed.status_code == 200 and signed.mimetype == "text/xml" and "<Response>" in signed.text
    assert _contact(app, texter).status == "unsubscribed"
    assert [e.exit_reason for e in enrollments(app, texts)] == ["unsubscribed"]

    with app.app_context():
        hook = postmark_url(BASE_URL, mail, "server-token").removeprefix(BASE_URL)
    bounce = {"RecordType": "Bounce", "Type": "HardBounce", "Email": "Person1@example.com", "MessageID": "m-1"}
    wrong = client.post(hook.replace(hook.split("/")[4], "0" * 40), json=bounce)
    assert wrong.status_code == 404 and _contact(app, mailer).status == "subscribed"
    soft = client.post(hook, json={**bounce, "Type": "SoftBounce"})
    assert soft.status_code == 200 and _contact(app, mailer).status == "subscribed"
    hard = client.post(hook, json=bounce)
    assert hard.status_code == 200 and hard.json == {"ok": True}
    assert _contact(app, mailer).status == "bounced"
    assert [e.exit_reason for e in enrollments(app, mails)] == ["bounced"]
    # Neither webhook says whether an address is known.
    assert client.post(hook, json={**bounce, "Email": "nobody@example.com"}).json == {"ok": True}


@pytest.mark.only_backend("sqlite")  # what it proves does not depend on the database
def test_activating_a_campaign_with_email_steps_is_refused_while_tickwork_base_url_is_unset(app, world, client):
    app.config["TICKWORK_BASE_URL"] = None
    sms = _channel(app, world, "sms", "twilio", {"account_sid": "AC1", "from": "+15555550000"}, secret="t")
    made = client.post("/api/v1/campaigns", headers=world.auth("marketer"),
                       json={"name": "Mail", "channel": "main", "steps": [{"delay": "PT0S", "subject": "a", "body": "b"}]})
    refused = client.post(f"/api/v1/campaigns/{made.json['id']}/activate", headers=world.auth("marketer"))
    assert refused.status_code == 409 and refused.json["error"]["code"] == "base_url_missing"
    assert client.get(f"/api/v1/campaigns/{made.json['id']}", headers=world.auth("marketer")).json["status"] == "draft"
    texts = client.post("/api/v1/campaigns", headers=world.auth("marketer"),
                        json={"name": "Texts", "channel": "sms", "steps": [{"delay": "PT0S", "body": "b"}]})
    assert client.post(f"/api/v1/campaigns/{texts.json['id']}/activate",
                       headers=world.auth("marketer")).json["status"] == "active"
    assert sms


@pytest.mark.only_backend("sqlite")  # what it proves is the providers' requests
def test_drip_email_carries_list_unsubscribe_through_postmark_and_sms_ends_with_the_opt_out_line(app, world,
                                                                                                 httpserver):
    httpserver.expect_request("/email", method="POST").respond_with_json({"MessageID": "pm-1", "ErrorCode": 0})
    httpserver.expect_request("/2010-04-01/Accounts/AC1/Messages.json", method="POST").respond_with_json(
        {"sid": "SM1"})
    base = httpserver.url_for("").rstrip("/")
    _channel(app, world, "pm", "postmark", {"from": "shop@example.com", "url": base}, secret="server-token")
    _channel(app, world, "sms", "twilio", {"account_sid": "AC1", "from": "+15555550000", "url": base}, secret="t")
    mails = campaign(app, world.workspace_id, steps=ONE_STEP, channel="pm", name="Mail")
    texts = campaign(app, world.workspace_id, steps=[{"delay": "PT0S", "body": "Bread at nine"}], channel="sms",
                     name="Texts")
    [person] = contacts(app, world.workspace_id, 1, phone=True)
    enroll(app, world.workspace_id, mails, [person])
    enroll(app, world.workspace_id, texts, [person])
    assert tick(app)["outcomes"] == {"published": 2}
    by_path = {request.path: request for request, _ in httpserver.log}
    email_request, sms_request = by_path["/email"], by_path["/2010-04-01/Accounts/AC1/Messages.json"]
    headers = {h["Name"]: h["Value"] for h in email_request.get_json()["Headers"]}
    assert headers["List-Unsubscribe"].startswith(f"<{BASE_URL}/unsubscribe/{world.workspace_id}/")
    assert headers["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert email_request.get_json()["Subject"] == "Hello Person"
    assert sms_request.form["Body"] == "Bread at nine\nReply STOP to unsubscribe."
