"""SMTP as it is deployed: STARTTLS against a relay with its own certificate, servers that never
answer, and logins refused for now or for good. Real loopback servers (aiosmtpd, raw sockets),
a CA made in the test; no network beyond 127.0.0.1."""

import socket
import threading
import time

import pytest

from models.channels.providers import smtp
from models.channels.providers.base import Delivery, SendContext, SendOutcome
from tests.conftest import T0
from tests.integration.clock_helpers import add_actions, make_channel, row, tick
from tests.integration.smtp_helpers import (
    PASSWORD,
    PAYLOAD,
    USERNAME,
    Logins,
    Mailbox,
    listener_that_never_accepts,
    listener_that_never_speaks,
    make_test_ca,
    smtp_server,  # noqa: F401  (a fixture)
)

TIMEOUT = 0.5
# A relay that answers is given this long instead: a TLS handshake on a loaded two-core machine can take
# longer than TIMEOUT, and a relay that does answer must not read as one that never does.
ANSWERING_TIMEOUT = 10
# How far past the provider timeout a send that met a silent server may end: the time to notice,
# on a busy two-core machine. A send that waited for a second timeout would overshoot it.
SLACK = 0.35


@pytest.fixture
def provider_timeout():
    """The dispatch's provider timeout; a test of a server that never answers asks for TIMEOUT (its tick waits it out)."""
    return ANSWERING_TIMEOUT


@pytest.fixture
def app_config(app_config, provider_timeout):
    app_config["TICKWORK_POLICY"] = {
        "provider_timeout": provider_timeout, "task_timeout": provider_timeout * 2, "recovery_timeout": 30,
    }
    return app_config


@pytest.fixture
def relay_ca(tmp_path):
    return make_test_ca(tmp_path)


def one_email(app, port: int, **settings) -> int:
    """A channel to the relay on ``port`` with ``settings`` (default security: starttls) and one email due now."""
    secret = settings.pop("password", None)
    config = {"host": "127.0.0.1", "port": port, "from": "shop@example.com", **settings}
    workspace_id = make_channel(app, "smtp", config, secret=secret)
    return add_actions(app, workspace_id, 1, action_type="send_email", payload=PAYLOAD)[0]


def send_directly(port: int, **settings):
    """One send through the provider, outside any dispatch: (result, seconds it took)."""
    config = {"host": "127.0.0.1", "port": port, "from": "shop@example.com", **settings}
    delivery = Delivery(action_id=1, workspace_id=1, channel_id=1, channel_name="main", action_type="send_email",
                        target_key="ann@example.com", payload=PAYLOAD, publish_at=T0, attempt=1, config=config)
    started = time.monotonic()
    result = smtp.send(delivery, SendContext(now=T0, timeout=TIMEOUT))
    return result, time.monotonic() - started


def tls_relay(smtp_server, relay_ca, mailbox, **options) -> int:
    """A loopback relay that offers STARTTLS with the test CA's certificate, and AUTH only after it."""
    return smtp_server(mailbox, tls_context=relay_ca.server_context(), require_starttls=True, **options)


# -- whose certificate is trusted -------------------------------------------------------------


def test_by_default_starttls_refuses_a_relay_whose_ca_is_not_in_the_system_store(app, smtp_server, relay_ca):
    mailbox = Mailbox()
    action_id = one_email(app, tls_relay(smtp_server, relay_ca, mailbox))
    tick(app)
    failed = row(app, action_id)
    assert failed.status == "failed" and failed.failure_code == "permanent"
    assert "certificate that cannot be trusted" in failed.last_error
    assert "self-signed certificate in certificate chain" in failed.last_error
    assert "set ca_file" in failed.last_error
    assert mailbox.messages == []


def test_with_ca_file_set_to_the_relays_ca_the_message_and_login_go_over_verified_tls(app, smtp_server, relay_ca):
    mailbox, logins = Mailbox(), Logins()
    port = tls_relay(smtp_server, relay_ca, mailbox, authenticator=logins)
    action_id = one_email(app, port, ca_file=str(relay_ca.ca_file), username=USERNAME, password=PASSWORD)
    tick(app)
    sent = row(app, action_id)
    assert sent.status == "published", sent.last_error
    assert mailbox.tls_sessions == [True] and logins.attempts == [("PLAIN", USERNAME, PASSWORD, True)]


def test_a_ca_file_trusts_only_its_own_ca_not_another(app, smtp_server, relay_ca, tmp_path):
    (tmp_path / "other").mkdir()
    other = make_test_ca(tmp_path / "other")
    mailbox = Mailbox()
    action_id = one_email(app, tls_relay(smtp_server, relay_ca, mailbox), ca_file=str(other.ca_file))
    tick(app)
    failed = row(app, action_id)
    assert failed.status == "failed" and "certificate that cannot be trusted" in failed.last_error
    assert mailbox.messages == []


def test_tls_verify_false_sends_over_tls_without_checking_the_certificate(app, smtp_server, relay_ca):
    mailbox = Mailbox()
    action_id = one_email(app, tls_relay(smtp_server, relay_ca, mailbox), tls_verify=False)
    tick(app)
    assert row(app, action_id).status == "published", row(app, action_id).last_error
    assert mailbox.tls_sessions == [True]


def test_implicit_tls_checks_the_certificate_the_same_way(smtp_server, relay_ca):
    """``security = ssl`` (port 465 style): refused on the system store, accepted with the relay's CA."""
    mailbox = Mailbox()
    port = smtp_server(mailbox, ssl_context=relay_ca.server_context())
    refused, _ = send_directly(port, security="ssl")
    assert refused.outcome is SendOutcome.PERMANENT and "cannot be trusted" in refused.message
    accepted, _ = send_directly(port, security="ssl", ca_file=str(relay_ca.ca_file))
    assert accepted.outcome is SendOutcome.SUCCESS, accepted.message
    assert mailbox.tls_sessions == [True]


def test_a_server_without_starttls_is_refused_for_good_rather_than_sent_to_in_clear(app, smtp_server):
    mailbox = Mailbox()
    action_id = one_email(app, smtp_server(mailbox))  # no tls_context: aiosmtpd offers no STARTTLS
    tick(app)
    failed = row(app, action_id)
    assert failed.status == "failed" and failed.failure_code == "permanent"
    assert "does not offer STARTTLS" in failed.last_error and mailbox.messages == []


def test_a_security_the_provider_does_not_know_never_falls_back_to_plain_text(smtp_server):
    """A channel saved before its settings were checked may hold a typo; nothing goes out in clear."""
    mailbox = Mailbox()
    result, _ = send_directly(smtp_server(mailbox), security="starttsl")
    assert result.outcome is SendOutcome.PERMANENT and "security 'starttsl' is not one of" in result.message
    assert mailbox.messages == []


def test_a_ca_file_gone_from_the_sending_host_means_not_sent_with_the_reason(smtp_server, relay_ca):
    port = tls_relay(smtp_server, relay_ca, Mailbox())
    missing = relay_ca.ca_file.with_name("gone.pem")
    result, _ = send_directly(port, ca_file=str(missing))
    assert result.outcome is SendOutcome.NOT_SENT
    assert f"ca_file {missing} cannot be loaded on this host" in result.message


# -- servers that never answer ----------------------------------------------------------------


@pytest.mark.parametrize("provider_timeout", [TIMEOUT])
def test_an_address_that_never_accepts_the_connection_is_not_sent_within_the_timeout(app):
    listener, fillers = listener_that_never_accepts()
    try:
        port = listener.getsockname()[1]
        result, took = send_directly(port)
        assert result.outcome is SendOutcome.NOT_SENT and took < TIMEOUT + SLACK, (result, took)
        assert f"could not reach the relay at 127.0.0.1:{port}" in result.message
        action_id = one_email(app, port)
        tick(app)
        after = row(app, action_id)
        assert after.status == "queued" and after.next_attempt_at is not None and after.attempt_count == 1
        assert "could not reach the relay" in after.last_error and "tried again" in after.last_error
    finally:
        for sock in (*fillers, listener):
            sock.close()


@pytest.mark.parametrize("provider_timeout", [TIMEOUT])
def test_a_server_that_never_says_hello_is_not_sent_within_the_timeout(app):
    with listener_that_never_speaks() as listener:
        port = listener.getsockname()[1]
        result, took = send_directly(port)
        assert result.outcome is SendOutcome.NOT_SENT and took < TIMEOUT + SLACK, (result, took)
        assert "could not reach the relay" in result.message
        action_id = one_email(app, port)
        tick(app)
        after = row(app, action_id)
        assert after.status == "queued" and after.next_attempt_at is not None
        assert "could not reach the relay" in after.last_error


class TrickleServer(threading.Thread):
    """A plain SMTP server that answers every command correctly, each after ``delay`` seconds.

    Every single wait is shorter than the provider timeout, so only a deadline over the whole
    setup stops a client from spending many timeouts on it. ``commands`` records what arrived.
    """

    def __init__(self, delay: float):
        super().__init__(daemon=True)
        self.delay, self.commands = delay, []
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.port = self.listener.getsockname()[1]

    def run(self):
        conn, _ = self.listener.accept()
        conn.settimeout(10)
        with conn, conn.makefile("rb") as lines:
            time.sleep(self.delay)
            conn.sendall(b"220 slow.test ESMTP\r\n")
            in_data = False
            for line in lines:
                if in_data:
                    if line == b".\r\n":
                        in_data = False
                        conn.sendall(b"250 OK\r\n")
                    continue
                verb = line[:4].upper()
                self.commands.append(verb.decode())
                time.sleep(self.delay)
                conn.sendall({b"EHLO": b"250-slow.test\r\n250 8BITMIME\r\n", b"DATA": b"354 go on\r\n",
                              b"QUIT": b"221 bye\r\n"}.get(verb, b"250 OK\r\n"))
                in_data = verb == b"DATA"
                if verb == b"QUIT":
                    return

    def stop(self):
        self.listener.close()
        self.join(timeout=10)


def test_a_server_that_trickles_its_answers_cannot_stretch_the_setup_past_the_timeout():
    server = TrickleServer(delay=TIMEOUT * 0.6)
    server.start()
    try:
        result, took = send_directly(server.port, security="none")
    finally:
        server.stop()
    assert result.outcome is SendOutcome.NOT_SENT and took < TIMEOUT + SLACK, (result, took)
    assert "could not reach the relay" in result.message
    assert "MAIL" not in server.commands


# -- logins refused for now, and for good -----------------------------------------------------


def test_a_login_refused_for_now_is_retried_and_then_sends(app, clock, smtp_server, relay_ca):
    mailbox, logins = Mailbox(), Logins(refusal="454 4.7.0 Temporary authentication failure")
    port = tls_relay(smtp_server, relay_ca, mailbox, authenticator=logins)
    action_id = one_email(app, port, ca_file=str(relay_ca.ca_file), username=USERNAME, password=PASSWORD)
    tick(app)
    waiting = row(app, action_id)
    assert waiting.status == "queued" and waiting.next_attempt_at > clock.now()
    assert "refused the login for now (454): 4.7.0 Temporary authentication failure" in waiting.last_error
    assert mailbox.messages == []
    logins.refusal = None
    clock.set(waiting.next_attempt_at)
    tick(app)
    sent = row(app, action_id)
    assert sent.status == "published" and sent.attempt_count == 2, sent.last_error
    assert len(mailbox.messages) == 1 and logins.attempts[-1] == ("PLAIN", USERNAME, PASSWORD, True)


def test_a_login_refused_for_good_fails_the_row_with_the_servers_reason(app, smtp_server, relay_ca):
    mailbox, logins = Mailbox(), Logins(refusal="535 5.7.8 Account disabled")
    port = tls_relay(smtp_server, relay_ca, mailbox, authenticator=logins)
    action_id = one_email(app, port, ca_file=str(relay_ca.ca_file), username=USERNAME, password=PASSWORD)
    tick(app)
    failed = row(app, action_id)
    assert failed.status == "failed" and failed.failure_code == "permanent"
    assert "refused the login (535): 5.7.8 Account disabled" in failed.last_error
    assert PASSWORD not in failed.last_error and mailbox.messages == []
