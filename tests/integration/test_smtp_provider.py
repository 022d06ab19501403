"""The smtp provider against a real SMTP server on loopback (aiosmtpd)."""

import socket
import time

import pytest
from aiosmtpd.controller import Controller

from tests.integration.clock_helpers import add_actions, make_channel, row, tick

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


PAYLOAD = {"subject": "Bread", "text": "Fresh bread at nine", "to": "ann@example.com"}


class Mailbox:
    """An SMTP handler that records what it accepts and refuses as told."""

    def __init__(self, rcpt_reply: str | None = None, data_delay: float = 0.0):
        self.messages = []
        self.rcpt_reply = rcpt_reply
        self.data_delay = data_delay

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if self.rcpt_reply:
            return self.rcpt_reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        if self.data_delay:
            import asyncio

            await asyncio.sleep(self.data_delay)
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content.decode()))
        return "250 2.0.0 Ok: queued as ABC123"


@pytest.fixture
def smtp_server():
    started = []

    def start(handler: Mailbox):
        controller = Controller(handler, hostname="127.0.0.1", port=free_port())
        controller.start()
        started.append(controller)
        return controller.port

    yield start
    for controller in started:
        controller.stop()


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_POLICY"] = {"provider_timeout": 0.5, "task_timeout": 1, "recovery_timeout": 5}
    return app_config


def one_email(app, port: int) -> int:
    workspace_id = make_channel(app, "smtp", {"host": "127.0.0.1", "port": port, "from": "shop@example.com",
                                              "security": "none"})
    return add_actions(app, workspace_id, 1, action_type="send_email", payload=PAYLOAD)[0]


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
    assert after.status == "queued" and "could not hand the message" in after.last_error


def test_no_answer_after_the_message_was_sent_is_an_unknown_outcome(app, smtp_server):
    mailbox = Mailbox(data_delay=1.5)
    action_id = one_email(app, smtp_server(mailbox))
    tick(app)
    after = row(app, action_id)
    assert after.status == "failed" and after.failure_code == "outcome_unknown"
    time.sleep(1.2)  # let the server finish the slow DATA before it is stopped
