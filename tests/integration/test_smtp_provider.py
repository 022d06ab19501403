"""The smtp provider against a real SMTP server on loopback (aiosmtpd)."""

import logging
import smtplib
import time

import pytest
from sqlalchemy import select

from models.channels.tables import Channel
from models.core.database import read_session
from tests.integration.clock_helpers import add_actions, events, make_channel, row, tick
from tests.integration.smtp_helpers import PASSWORD, PAYLOAD, USERNAME, Logins, Mailbox, free_port, smtp_server  # noqa: F401


@pytest.fixture
def app_config(app_config):
    # Long enough that a loaded box's slow greeting is not taken for a silent server; the one silent server
    # below (a DATA answered after 4 s) is well past it.
    app_config["TICKWORK_POLICY"] = {"provider_timeout": 2, "task_timeout": 3, "recovery_timeout": 10}
    return app_config


def one_email(app, port: int, *, username: str | None = None, password: str | None = None) -> int:
    config = {"host": "127.0.0.1", "port": port, "from": "shop@example.com", "security": "none"}
    if username:
        config["username"] = username
    workspace_id = make_channel(app, "smtp", config, secret=password)
    return add_actions(app, workspace_id, 1, action_type="send_email", payload=PAYLOAD)[0]


def assert_password_kept_out(app, action_id: int, caplog, password: str = PASSWORD) -> None:
    """The plaintext password is in neither the row, its events nor any log record."""
    after = row(app, action_id)
    assert password not in (after.last_error or "") and password not in (after.provider_id or "")
    assert not [event.reason for event in events(app, action_id) if password in (event.reason or "")]
    assert password not in caplog.text


def test_an_accepted_message_publishes_the_row_with_its_message_id(app, smtp_server):
    mailbox = Mailbox()
    action_id = one_email(app, smtp_server(mailbox))
    tick(app)
    sent = row(app, action_id)
    assert sent.status == "published", sent.last_error
    assert sent.provider_id == f"tickwork-action-{action_id}@example.com"
    sender, recipients, content = mailbox.messages[0]
    assert sender == "shop@example.com" and recipients == ["ann@example.com"]
    assert "Subject: Bread" in content and "Fresh bread at nine" in content
    assert f"Message-ID: <tickwork-action-{action_id}@example.com>" in content


def test_a_recipient_refused_for_good_fails_the_row_permanently(app, smtp_server):
    action_id = one_email(app, smtp_server(Mailbox(rcpt_reply="550 5.1.1 No such user here")))
    tick(app)
    failed = row(app, action_id)
    assert failed.status == "failed" and failed.failure_code == "permanent"
    assert "550" in failed.last_error and "No such user" in failed.last_error


def test_a_recipient_refused_for_now_is_retried_later(app, smtp_server):
    action_id = one_email(app, smtp_server(Mailbox(rcpt_reply="451 4.7.1 Greylisted, try again")))
    tick(app)
    after = row(app, action_id)
    assert after.status == "queued" and after.next_attempt_at is not None
    assert "451" in after.last_error


def test_a_server_that_is_not_there_means_not_sent(app):
    action_id = one_email(app, free_port())
    tick(app)
    after = row(app, action_id)
    assert after.status == "queued" and "could not reach the relay" in after.last_error


def test_no_answer_after_the_message_was_sent_is_an_unknown_outcome(app, smtp_server):
    mailbox = Mailbox(data_delay=4)
    action_id = one_email(app, smtp_server(mailbox))
    tick(app)
    after = row(app, action_id)
    assert after.status == "failed" and after.failure_code == "outcome_unknown"
    time.sleep(2.2)  # let the server finish the slow DATA before it is stopped


def test_smtp_login_uses_the_channel_secret_decrypted_at_send_time(app, smtp_server, caplog):
    caplog.set_level(logging.DEBUG)
    logins, mailbox = Logins(), Mailbox()
    port = smtp_server(mailbox, authenticator=logins, auth_require_tls=False)
    action_id = one_email(app, port, username=USERNAME, password=PASSWORD)
    with app.app_context(), read_session() as session:
        sealed = session.scalar(select(Channel.secret_sealed).where(Channel.kind == "smtp"))
    assert sealed and PASSWORD not in sealed
    tick(app)
    sent = row(app, action_id)
    assert sent.status == "published", sent.last_error
    assert logins.attempts == [("PLAIN", USERNAME, PASSWORD, True)]
    assert len(mailbox.messages) == 1
    assert_password_kept_out(app, action_id, caplog)


def test_a_login_the_server_refuses_fails_the_row_for_good_and_sends_nothing(app, smtp_server, caplog):
    caplog.set_level(logging.DEBUG)
    logins, mailbox = Logins(), Mailbox()
    port = smtp_server(mailbox, authenticator=logins, auth_require_tls=False)
    wrong = "not-the-oven-password-0042"
    action_id = one_email(app, port, username=USERNAME, password=wrong)
    tick(app)
    failed = row(app, action_id)
    assert failed.status == "failed" and failed.failure_code == "permanent"
    assert "refused the login (535): 5.7.8 Authentication credentials invalid" in failed.last_error
    assert "username and password" in failed.last_error
    assert logins.attempts and all(attempt[1:] == (USERNAME, wrong, False) for attempt in logins.attempts)
    assert mailbox.messages == []
    assert_password_kept_out(app, action_id, caplog, password=wrong)


def test_a_server_that_offers_no_login_fails_a_channel_with_a_username_for_good(app, smtp_server, caplog):
    caplog.set_level(logging.DEBUG)
    mailbox = Mailbox()
    port = smtp_server(mailbox)  # aiosmtpd offers AUTH only over TLS unless told otherwise
    with smtplib.SMTP("127.0.0.1", port, timeout=2) as probe:
        probe.ehlo()
        assert not probe.has_extn("auth")
    action_id = one_email(app, port, username=USERNAME, password=PASSWORD)
    tick(app)
    failed = row(app, action_id)
    assert failed.status == "failed" and failed.failure_code == "permanent"
    assert "does not offer AUTH" in failed.last_error and "username" in failed.last_error
    assert mailbox.messages == []
    assert_password_kept_out(app, action_id, caplog)


# -- one connection for a chunk's messages ----------------------------------------------------


class CountingMailbox(Mailbox):
    """Records which connection (the client's address and port) carried each message, and can drop
    a connection at the ``drop_at``-th message: during its DATA (``drop_during_data``), or just
    after accepting it, as a server closing an idle connection would."""

    def __init__(self, drop_at: int | None = None, drop_during_data: bool = True):
        super().__init__()
        self.peers, self.drop_at, self.drop_during_data, self.seen = [], drop_at, drop_during_data, 0

    async def handle_DATA(self, server, session, envelope):
        import asyncio

        self.seen += 1
        if self.seen == self.drop_at and self.drop_during_data:
            server.transport.close()  # the message arrived, the answer never leaves
            return "250 OK"
        self.peers.append(session.peer)
        if self.seen == self.drop_at:
            asyncio.get_running_loop().call_soon(server.transport.close)
        return await super().handle_DATA(server, session, envelope)


def many_emails(app, port: int, count: int) -> list[int]:
    config = {"host": "127.0.0.1", "port": port, "from": "shop@example.com", "security": "none"}
    workspace_id = make_channel(app, "smtp", config)
    return add_actions(app, workspace_id, count, action_type="send_email", payload=PAYLOAD)


def test_the_messages_of_one_chunk_go_over_one_reused_smtp_connection(app, smtp_server):
    mailbox = CountingMailbox()
    many_emails(app, smtp_server(mailbox), 10)
    assert tick(app)["outcomes"] == {"published": 10}
    assert len(mailbox.messages) == 10 and len(set(mailbox.peers)) == 1


def test_a_connection_dropped_during_a_message_leaves_that_one_unknown_and_the_rest_go_on_a_new_one(
        app, smtp_server):
    mailbox = CountingMailbox(drop_at=4, drop_during_data=True)
    ids = many_emails(app, smtp_server(mailbox), 10)
    tick(app)
    after = [row(app, i) for i in ids]
    assert [(r.status, r.failure_code) for r in after] == (
        [("published", None)] * 3 + [("failed", "outcome_unknown")] + [("published", None)] * 6)
    assert "broke while the message was being sent" in after[3].last_error
    assert len(mailbox.messages) == 9 and len(set(mailbox.peers)) == 2


def test_a_reused_connection_the_server_closed_between_messages_costs_no_attempt(app, smtp_server):
    """Nothing was sent on it before DATA, so the next message is handed over on a fresh connection."""
    mailbox = CountingMailbox(drop_at=3, drop_during_data=False)
    ids = many_emails(app, smtp_server(mailbox), 6)
    assert tick(app)["outcomes"] == {"published": 6}
    assert [row(app, i).attempt_count for i in ids] == [1] * 6
    assert len(mailbox.messages) == 6 and len(set(mailbox.peers)) == 2
