"""Server-side request forgery, tried as an attacker would, through every channel kind and the works
pipeline: each internal destination in every notation is refused when saved and again at send time,
and the loopback fake it points at, which would have answered, hears nothing.

The suite's allow list opens loopback for its fakes; these tests narrow it (``egress_allow``), so
a refusal is the policy's. A second fake on ``127.0.0.2`` stands for an internal service that the
narrowed list (``127.0.0.1/32``) does not open.
"""

import os
import socket
import subprocess
import sys
import threading

import pytest
from pytest_httpserver import HTTPServer

from models.channels.operations import validate_channel
from models.channels.providers import mastodon, postmark, smtp, twilio, webhook
from models.channels.providers.base import Delivery, SendContext, SendOutcome
from models.channels.providers.http import http_client
from models.core.errors import InvalidInput
from models.works.pipelines import Generation
from models.works.pipelines import webhook_pipeline
from tests.conftest import ROOT, T0, TEST_SECRET
from tests.integration.clock_helpers import add_actions, make_channel, row, tick
from tests.integration.smtp_helpers import Mailbox, smtp_server  # noqa: F401  (a fixture)
from tests.integration.works_helpers import TEST_BASE_URL

PROVIDERS = {"webhook": webhook, "mastodon": mastodon, "postmark": postmark, "twilio": twilio}
PATHS = {"webhook": "/hook", "mastodon": "/api/v1/statuses", "postmark": "/email",
         "twilio": "/2010-04-01/Accounts/AC1/Messages.json"}
SUCCESS = {"webhook": {"id": "w1"}, "mastodon": {"id": "m1"}, "postmark": {"MessageID": "p1"}, "twilio": {"sid": "t1"}}
PAYLOAD = {"body": "hello", "status": "hello", "subject": "hi", "to": "a@example.com"}


def authorities(port: int) -> list[str]:
    """127.0.0.1:port (and ::1) written every way an attacker would, each of which reaches the fake."""
    return [f"127.0.0.1:{port}", f"localhost:{port}", f"2130706433:{port}", f"0x7f000001:{port}",
            f"0177.0.0.1:{port}", f"127.1:{port}", f"[::1]:{port}", f"0.0.0.0:{port}", f"x@127.0.0.1:{port}",
            f"user:pw@localhost:{port}", f"[::ffff:127.0.0.1]:{port}", "169.254.169.254", "[fd00:ec2::254]"]


def channel_config(kind: str, base: str) -> dict:
    return {"webhook": {"url": base + PATHS["webhook"]}, "mastodon": {"url": base},
            "postmark": {"url": base, "from": "shop@example.com"},
            "twilio": {"url": base, "account_sid": "AC1", "from": "+15555550000"}}[kind]


def delivery(config: dict, secret: str | None = "token-123") -> Delivery:
    return Delivery(action_id=1, workspace_id=1, channel_id=1, channel_name="main", action_type="send",
                    target_key="a@example.com", payload=PAYLOAD, publish_at=T0, attempt=1, config=config,
                    secret=secret)


@pytest.fixture
def both_loopbacks(httpserver):
    """The session's fake on 127.0.0.1 and one on ::1 on the same port, both answering every path."""
    v6 = HTTPServer(host="::1", port=httpserver.port)
    v6.start()
    servers = (httpserver, v6)
    for server in servers:
        for kind, path in PATHS.items():
            server.expect_request(path, method="POST").respond_with_json(SUCCESS[kind])
    yield servers
    v6.clear()
    v6.stop()


@pytest.mark.parametrize("kind", sorted(PROVIDERS))
def test_an_internal_destination_is_refused_at_send_time_in_every_notation(kind, both_loopbacks, egress_allow):
    provider = PROVIDERS[kind]
    port = both_loopbacks[0].port
    context = SendContext(now=T0, timeout=2, http=http_client())
    # The same fake, allowed, takes the send: what is refused below would have reached it.
    assert provider.send(delivery(channel_config(kind, f"http://127.0.0.1:{port}")), context).outcome \
        is SendOutcome.SUCCESS
    egress_allow("")
    heard = sum(len(server.log) for server in both_loopbacks)
    for authority in authorities(port):
        result = provider.send(delivery(channel_config(kind, f"http://{authority}")), context)
        assert result.outcome is SendOutcome.PERMANENT, (authority, result)
        assert "destination not allowed" in result.message, (authority, result)
    assert sum(len(server.log) for server in both_loopbacks) == heard, "no internal request went out"


@pytest.mark.parametrize("kind", ["webhook", "mastodon", "postmark", "twilio"])
def test_an_internal_destination_is_refused_when_the_channel_is_saved(kind, egress_allow):
    egress_allow("")
    for authority in authorities(8080):
        with pytest.raises(InvalidInput) as refused:
            validate_channel("main", kind, channel_config(kind, f"http://{authority}"))
        assert refused.value.field == "url" and "destination not allowed" in refused.value.message, authority
    for url in ("file:///etc/passwd", "gopher://127.0.0.1:25/", "ftp://example.com/"):
        with pytest.raises(InvalidInput) as refused:
            validate_channel("main", kind, {**channel_config(kind, "https://x.example"), "url": url})
        assert refused.value.field == "url", url
    validate_channel("main", kind, channel_config(kind, "https://no-such-host.invalid"))  # checked at connect


def test_a_mastodon_instance_url_of_file_is_refused_and_never_read(egress_allow):
    with pytest.raises(InvalidInput, match="http"):
        validate_channel("m", "mastodon", {"url": "file:///etc/passwd"})
    result = mastodon.send(delivery({"url": "file:///etc/passwd"}), SendContext(now=T0, timeout=1, http=http_client()))
    assert result.outcome is SendOutcome.PERMANENT and "destination not allowed" in result.message
    assert "root:" not in result.message


def test_a_redirect_from_an_allowed_receiver_to_an_internal_address_is_refused(httpserver, egress_allow):
    inside = HTTPServer(host="127.0.0.2", port=0)
    inside.expect_request("/latest/meta-data/").respond_with_data("ami-id\nsecret-role")
    inside.start()
    try:
        egress_allow("127.0.0.1/32")
        httpserver.expect_request("/hook", method="POST").respond_with_data(
            "moved", status=307, headers={"Location": inside.url_for("/latest/meta-data/")})
        result = webhook.send(delivery({"url": httpserver.url_for("/hook")}),
                              SendContext(now=T0, timeout=2, http=http_client()))
        assert result.outcome is SendOutcome.PERMANENT
        assert "redirected (307) to a destination not allowed" in result.message
        assert "secret-role" not in result.message and inside.log == []
    finally:
        inside.clear()
        inside.stop()


def test_an_answer_is_shown_trimmed_and_without_control_characters(httpserver):
    httpserver.expect_request("/hook", method="POST").respond_with_data(
        "\x1b[2J\x1b[31mdenied\r\nSet-Cookie: x=1\u202e" + "A" * 5000, status=400)
    result = webhook.send(delivery({"url": httpserver.url_for("/hook")}),
                          SendContext(now=T0, timeout=2, http=http_client()))
    assert result.outcome is SendOutcome.PERMANENT
    assert "\x1b" not in result.message and "\r" not in result.message and "\u202e" not in result.message
    assert "denied Set-Cookie: x=1" in result.message and len(result.message) < 400


# -- the dispatch: a channel saved before the policy ----------------------------------------


def test_a_channel_saved_before_the_policy_fails_for_good_at_send_time(app, httpserver, egress_allow):
    httpserver.expect_request("/hook", method="POST").respond_with_json({"id": "w1"})
    workspace_id = make_channel(app, "webhook", {"url": f"http://2130706433:{httpserver.port}/hook"}, "shh")
    action_id = add_actions(app, workspace_id, 1, payload=PAYLOAD)[0]
    egress_allow("")
    tick(app)
    after = row(app, action_id)
    assert after.status == "failed" and "destination not allowed" in after.last_error
    assert httpserver.log == []


# -- SMTP -----------------------------------------------------------------------------------


def smtp_config(host: str, port: int) -> dict:
    return {"host": host, "port": port, "from": "shop@example.com", "security": "none"}


def test_an_smtp_relay_on_an_internal_address_is_refused_when_saved_and_at_send_time(smtp_server, egress_allow):
    mailbox = Mailbox()
    port = smtp_server(mailbox)
    ok = smtp.send(delivery(smtp_config("127.0.0.1", port)), SendContext(now=T0, timeout=2))
    assert ok.outcome is SendOutcome.SUCCESS and len(mailbox.messages) == 1
    egress_allow("")
    for host in ("127.0.0.1", "localhost", "2130706433", "0x7f000001", "0177.0.0.1", "127.1", "[::1]", "::1",
                 "0.0.0.0", "::ffff:127.0.0.1", "169.254.169.254"):
        with pytest.raises(InvalidInput) as refused:
            validate_channel("relay", "smtp", smtp_config(host, port))
        assert refused.value.field == "host" and "destination not allowed" in refused.value.message, host
        result = smtp.send(delivery(smtp_config(host, port)), SendContext(now=T0, timeout=2))
        assert result.outcome is SendOutcome.PERMANENT and "destination not allowed" in result.message, (host, result)
    assert len(mailbox.messages) == 1


class Talker(threading.Thread):
    """A port that speaks first, as SSH does, or greets with an SMTP refusal: each connection gets ``banner``."""

    def __init__(self, banner: bytes):
        super().__init__(daemon=True)
        self.banner = banner
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stopping = threading.Event()

    def run(self):
        self.listener.settimeout(0.05)
        while not self.stopping.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                try:
                    conn.sendall(self.banner)
                    conn.settimeout(1)
                    conn.recv(1024)
                except OSError:
                    pass

    def stop(self):
        self.stopping.set()
        self.join(timeout=5)
        self.listener.close()


def test_smtp_to_a_closed_port_and_to_ports_that_talk_says_the_same_words_without_the_banner(httpserver):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    talkers = [Talker(b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13 internal-bastion\r\n"),
               Talker(b"554 5.7.1 mail.internal.corp ESMTP Postfix (Debian) not for you\r\n")]
    for talker in talkers:
        talker.start()
    try:
        ports = [closed, *(t.port for t in talkers), httpserver.port]  # the last: HTTP, silent until asked
        results = [smtp.send(delivery(smtp_config("127.0.0.1", port)), SendContext(now=T0, timeout=0.5))
                   for port in ports]
    finally:
        for talker in talkers:
            talker.stop()
    # The port masked: it differs by server, and a port number may itself hold "554".
    said = [result.message.replace(str(port), "PORT") for result, port in zip(results, ports)]
    assert set(said) == {"could not reach the relay at 127.0.0.1:PORT; nothing was sent, so it will be tried again"}
    assert {result.outcome for result in results} == {SendOutcome.NOT_SENT}
    for message in said:
        for leaked in ("SSH", "OpenSSH", "bastion", "Postfix", "internal", "554", "HTTP", "refused"):
            assert leaked not in message


# -- the works pipeline ---------------------------------------------------------------------


def generation(url: str) -> Generation:
    return Generation(work_id=1, work_name="Site", workspace_id=1, run_id=1, run_kind="manual", token="t" * 32,
                      slot=None, settings={"url": url}, secret="work-secret",
                      callback_url=f"{TEST_BASE_URL}/api/works/runs/{'t' * 32}/callback")


def test_the_webhook_pipeline_refuses_an_internal_url_in_every_notation(both_loopbacks, egress_allow):
    for server in both_loopbacks:
        server.expect_request("/generate", method="POST").respond_with_data("internal body", status=500)
    port = both_loopbacks[0].port
    assert "internal body" in webhook_pipeline.run(generation(f"http://127.0.0.1:{port}/generate")).error
    egress_allow("")
    heard = sum(len(server.log) for server in both_loopbacks)
    for authority in authorities(port):
        url = f"http://{authority}/generate"
        with pytest.raises(InvalidInput) as refused:
            webhook_pipeline.check_settings({"url": url}, TEST_BASE_URL)
        assert refused.value.field == "settings.url" and refused.value.code == "destination_not_allowed", url
        result = webhook_pipeline.run(generation(url))
        assert result.status == "error" and "destination not allowed" in result.error, (url, result)
        assert "internal body" not in result.error
    assert sum(len(server.log) for server in both_loopbacks) == heard


def test_the_webhook_pipeline_refuses_a_redirect_inside_and_shows_an_answer_cleaned(httpserver, egress_allow):
    egress_allow("127.0.0.1/32")
    httpserver.expect_request("/moved", method="POST").respond_with_data(
        "", status=302, headers={"Location": "http://127.0.0.2:8080/admin"})
    result = webhook_pipeline.run(generation(httpserver.url_for("/moved")))
    assert result.status == "error" and "redirected (302) to a destination not allowed" in result.error
    httpserver.expect_request("/noisy", method="POST").respond_with_data("\x07\x1b]0;pwned\x07" + "b" * 900,
                                                                         status=418)
    noisy = webhook_pipeline.run(generation(httpserver.url_for("/noisy")))
    assert "\x1b" not in noisy.error and "\x07" not in noisy.error and len(noisy.error) < 400


@pytest.fixture
def works_app_config(app_config):
    app_config["TICKWORK_BASE_URL"] = TEST_BASE_URL
    return app_config


def test_an_ops_member_cannot_save_a_work_pointing_inside(works_app_config, app, client, world, egress_allow):
    egress_allow("")
    for url in ("http://127.0.0.1:9/x", "http://localhost/", "http://2130706433/", "http://[::1]/",
                "http://169.254.169.254/latest/meta-data/", "http://x@127.0.0.1/"):
        answer = client.post("/api/v1/works", json={"name": "Site", "pipeline": "webhook", "settings": {"url": url}},
                             headers=world.auth("ops"))
        assert answer.status_code == 422, (url, answer.json)
        assert answer.json["error"]["field"] == "settings.url"
        assert answer.json["error"]["code"] == "destination_not_allowed"
    listed = client.get("/api/v1/works", headers=world.auth("ops"))
    assert listed.status_code == 200 and listed.json["works"] == []


# -- the command line -----------------------------------------------------------------------


def test_channel_add_exits_non_zero_with_the_reason(app, world, egress_allow):
    egress_allow("")
    runner = app.test_cli_runner()
    for args in (["--kind", "webhook", "--url", "http://127.1:8080/hook"],
                 ["--kind", "mastodon", "--url", "file:///etc/passwd"],
                 ["--kind", "smtp", "--config", '{"host": "localhost", "port": 25, "from": "a@example.com"}']):
        result = runner.invoke(args=["channel", "add", "--workspace", "Acme", "--name", "inside", *args])
        assert result.exit_code == 1, result.output
        assert ("destination not allowed" in result.output or "http(s) url" in result.output), result.output
        assert "Traceback" not in result.output


def test_db_upgrade_lists_the_channels_and_works_the_policy_now_refuses(app, database_url, egress_allow):
    make_channel(app, "smtp", {"host": "localhost", "port": 25, "from": "shop@example.com"}, name="relay")
    workspace_id = make_channel(app, "webhook", {"url": "https://example.com/hook"}, name="outside")
    from models.core.database import write_session
    from models.works.tables import Work

    with app.app_context(), write_session() as session:  # saved before the policy
        session.add(Work(workspace_id=workspace_id, name="Site", pipeline="webhook", created_at=T0, updated_at=T0,
                         settings={"url": "http://[::1]:8080/generate"}))
    env = dict(os.environ, TICKWORK_DATABASE_URL=database_url, TICKWORK_SECRET_KEY=TEST_SECRET,
               TICKWORK_QUEUE_URL="immediate", TICKWORK_EGRESS_ALLOW="")
    upgraded = subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", "db", "upgrade"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
    assert upgraded.returncode == 0, upgraded.stderr
    assert "channel relay (smtp) in workspace Acme: host: localhost resolves to a loopback address" in upgraded.stdout
    assert "work Site (webhook pipeline) in workspace Acme: settings.url: ::1 is a loopback address" in upgraded.stdout
    assert "outside" not in upgraded.stdout
    assert "TICKWORK_EGRESS_ALLOW" in upgraded.stdout

    from webapp.cli import report_refused_destinations

    egress_allow("localhost,::1/128")  # what the README says to do: neither is listed any more
    with app.app_context():
        assert report_refused_destinations() == []
