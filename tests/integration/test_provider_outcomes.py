"""Every provider against a loopback server speaking its protocol: request shape, auth, and
what each class of answer does to the row (the brief's outcome table)."""

import base64
import hashlib
import hmac
import json
import socket
import threading
import time
from datetime import timedelta
from urllib.parse import parse_qs

import pytest
from werkzeug import Response

from tests.integration.clock_helpers import add_actions, events, make_channel, row, tick, wait_until

SECRET = "s3cret-token"
HTTP_KINDS = ["webhook", "postmark", "twilio", "mastodon"]
IDEMPOTENT = {"webhook", "mastodon"}
# Asked what became of the send (its search lags): an unknown outcome stays submitted for recovery to ask again.
ASKED_LATER = {"postmark"}
PATHS = {
    "webhook": "/hook",
    "postmark": "/email",
    "twilio": "/2010-04-01/Accounts/AC123/Messages.json",
    "mastodon": "/api/v1/statuses",
}
SUCCESS_BODIES = {
    "webhook": {"id": "wh-1"},
    "postmark": {"To": "a@example.com", "MessageID": "pm-1", "ErrorCode": 0, "Message": "OK"},
    "twilio": {"sid": "SM1", "status": "queued"},
    "mastodon": {"id": "10901", "url": "https://masto.test/@acme/10901"},
}
PROVIDER_IDS = {"webhook": "wh-1", "postmark": "pm-1", "twilio": "SM1", "mastodon": "10901"}
PAYLOAD = {"body": "Fresh bread at nine", "subject": "Bread", "to": "a@example.com"}


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_POLICY"] = {"provider_timeout": 0.5, "task_timeout": 1, "recovery_timeout": 5,
                                     "backoff_base": 30, "backoff_cap": 600}
    return app_config


def channel_config(kind: str, base: str) -> dict:
    return {
        "webhook": {"url": base + PATHS["webhook"]},
        "postmark": {"url": base, "from": "shop@example.com", "message_stream": "outbound"},
        "twilio": {"url": base, "account_sid": "AC123", "from": "+15555550000"},
        "mastodon": {"url": base, "visibility": "public"},
    }[kind]


def setup_one(app, kind: str, base: str) -> int:
    workspace_id = make_channel(app, kind, channel_config(kind, base), SECRET)
    return add_actions(app, workspace_id, 1, payload=PAYLOAD)[0]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("kind", HTTP_KINDS)
def test_a_2xx_publishes_the_row_with_the_providers_id(app, httpserver, kind):
    httpserver.expect_request(PATHS[kind], method="POST").respond_with_json(SUCCESS_BODIES[kind])
    action_id = setup_one(app, kind, httpserver.url_for("").rstrip("/"))
    summary = tick(app)
    published = row(app, action_id)
    assert published.status == "published", published.last_error
    assert published.provider_id == PROVIDER_IDS[kind]
    assert published.finished_at is not None
    assert summary["outcomes"] == {"published": 1}
    assert all(event.clock_run_id == summary["clock_run_id"] for event in events(app, action_id)[1:])


def test_webhook_sends_the_contract_body_signature_and_idempotency_key(app, httpserver):
    seen = []

    def handler(request):
        seen.append((request.headers, request.get_data()))
        return Response("{}", status=200, content_type="application/json")

    httpserver.expect_request("/hook", method="POST").respond_with_handler(handler)
    action_id = setup_one(app, "webhook", httpserver.url_for("").rstrip("/"))
    tick(app)
    headers, body = seen[0]
    expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert headers["X-Tickwork-Signature"] == expected
    assert headers["Idempotency-Key"] == str(action_id)
    assert headers["Content-Type"] == "application/json"
    document = json.loads(body)
    assert set(document) == {"id", "action_type", "target_key", "payload", "publish_at", "attempt"}
    assert document["id"] == action_id and document["attempt"] == 1 and document["payload"] == PAYLOAD
    assert document["publish_at"].endswith("Z")
    assert SECRET not in body.decode()


def test_postmark_sends_the_server_token_and_the_email_as_json(app, httpserver):
    httpserver.expect_request("/email", method="POST", headers={"X-Postmark-Server-Token": SECRET},
                              json={"From": "shop@example.com", "To": "a@example.com", "Subject": "Bread",
                                    "TextBody": "Fresh bread at nine", "MessageStream": "outbound",
                                    "Headers": [{"Name": "X-Tickwork-Action", "Value": "1"}],
                                    "Metadata": {"tickwork_action": "1"}}
                              ).respond_with_json(SUCCESS_BODIES["postmark"])
    action_id = setup_one(app, "postmark", httpserver.url_for("").rstrip("/"))
    assert action_id == 1
    tick(app)
    assert row(app, action_id).status == "published"


def test_twilio_sends_basic_auth_and_the_message_form(app, httpserver):
    seen = []

    def handler(request):
        seen.append((request.headers.get("Authorization"), parse_qs(request.get_data(as_text=True))))
        return Response(json.dumps(SUCCESS_BODIES["twilio"]), status=201, content_type="application/json")

    httpserver.expect_request(PATHS["twilio"], method="POST").respond_with_handler(handler)
    action_id = setup_one(app, "twilio", httpserver.url_for("").rstrip("/"))
    tick(app)
    auth, form = seen[0]
    assert auth == "Basic " + base64.b64encode(f"AC123:{SECRET}".encode()).decode()
    assert form == {"To": ["a@example.com"], "From": ["+15555550000"], "Body": ["Fresh bread at nine"]}
    assert row(app, action_id).provider_id == "SM1"


def test_mastodon_sends_the_bearer_token_and_its_idempotency_key(app, httpserver):
    httpserver.expect_request("/api/v1/statuses", method="POST",
                              headers={"Authorization": f"Bearer {SECRET}", "Idempotency-Key": "1"},
                              data="status=Fresh+bread+at+nine&visibility=public",
                              ).respond_with_json(SUCCESS_BODIES["mastodon"])
    action_id = setup_one(app, "mastodon", httpserver.url_for("").rstrip("/"))
    tick(app)
    assert row(app, action_id).status == "published"


# Each status's class is pinned in tests/unit/test_queue_config.py; here each provider meets one of each.
@pytest.mark.parametrize("kind,status", [("webhook", 429), ("postmark", 503), ("twilio", 429), ("mastodon", 503)])
def test_refused_for_now_goes_back_to_queued_honouring_retry_after(app, httpserver, clock, kind, status):
    httpserver.expect_request(PATHS[kind], method="POST").respond_with_json(
        {"error": "slow down"}, status=status, headers={"Retry-After": "240"})
    action_id = setup_one(app, kind, httpserver.url_for("").rstrip("/"))
    summary = tick(app)
    reverted = row(app, action_id)
    assert reverted.status == "queued"
    assert reverted.attempt_count == 1
    # Backoff for a first attempt is at most 30 s; Retry-After asked for 240.
    assert reverted.next_attempt_at == clock.now() + timedelta(seconds=240)
    assert "slow down" in reverted.last_error and str(status) in reverted.last_error
    assert summary["outcomes"] == {"reverted:retry_later": 1}


@pytest.mark.parametrize("kind,status,words", [
    ("webhook", 400, "bad payload"),
    ("postmark", 422, "Invalid 'To' address"),
    ("twilio", 400, "not a valid phone number"),
    ("mastodon", 422, "Validation failed"),
    ("postmark", 401, "credentials"),
])
def test_a_permanent_refusal_fails_the_row_with_the_providers_words(app, httpserver, kind, status, words):
    body = {"webhook": {"error": "bad payload"},
            "postmark": {"ErrorCode": 300, "Message": "Invalid 'To' address: 'nobody'."},
            "twilio": {"code": 21211, "message": "The 'To' number is not a valid phone number."},
            "mastodon": {"error": "Validation failed: Text can't be blank"}}[kind]
    httpserver.expect_request(PATHS[kind], method="POST").respond_with_json(body, status=status)
    action_id = setup_one(app, kind, httpserver.url_for("").rstrip("/"))
    tick(app)
    failed = row(app, action_id)
    assert failed.status == "failed" and failed.failure_code == "permanent"
    assert words in failed.last_error and str(status) in failed.last_error


@pytest.mark.parametrize("kind,status", [("webhook", 500), ("postmark", 502), ("twilio", 504), ("mastodon", 502)])
def test_an_unknown_outcome_fails_unless_the_provider_honours_the_idempotency_key(app, httpserver, kind, status):
    httpserver.expect_request(PATHS[kind], method="POST").respond_with_data("upstream trouble", status=status)
    action_id = setup_one(app, kind, httpserver.url_for("").rstrip("/"))
    tick(app)
    after = row(app, action_id)
    if kind in IDEMPOTENT:
        assert after.status == "queued" and after.next_attempt_at is not None
        assert "same Idempotency-Key" in after.last_error
    elif kind in ASKED_LATER:
        assert after.status == "submitted" and "asked again" in after.last_error
        assert str(status) in after.last_error
    else:
        assert after.status == "failed" and after.failure_code == "outcome_unknown"
        assert str(status) in after.last_error


@pytest.mark.parametrize("kind", sorted(IDEMPOTENT))
def test_a_retried_unknown_outcome_reuses_the_same_idempotency_key(app, httpserver, clock, kind):
    keys = []

    def handler(request):
        keys.append(request.headers.get("Idempotency-Key"))
        if len(keys) == 1:
            return Response("gateway timeout", status=504)
        return Response(json.dumps(SUCCESS_BODIES[kind]), status=200, content_type="application/json")

    httpserver.expect_request(PATHS[kind], method="POST").respond_with_handler(handler)
    action_id = setup_one(app, kind, httpserver.url_for("").rstrip("/"))
    tick(app)
    clock.advance(minutes=2)
    tick(app)
    assert keys == [str(action_id), str(action_id)]
    assert row(app, action_id).status == "published"


@pytest.mark.parametrize("kind", HTTP_KINDS)
def test_connection_refused_means_not_sent_and_the_row_is_retried_later(app, kind):
    action_id = setup_one(app, kind, f"http://127.0.0.1:{closed_port()}")
    summary = tick(app)
    after = row(app, action_id)
    assert after.status == "queued" and after.next_attempt_at is not None
    assert "could not reach" in after.last_error
    assert summary["outcomes"] == {"reverted:not_sent": 1}


@pytest.mark.parametrize("kind", HTTP_KINDS)
def test_no_answer_within_the_provider_timeout_is_an_unknown_outcome(app, httpserver, kind):
    def slow(_request):
        time.sleep(1.0)
        return Response("{}", status=200)

    httpserver.expect_request(PATHS[kind], method="POST").respond_with_handler(slow)
    action_id = setup_one(app, kind, httpserver.url_for("").rstrip("/"))
    tick(app)
    after = row(app, action_id)
    if kind in IDEMPOTENT:
        assert after.status == "queued"
    elif kind in ASKED_LATER:
        assert after.status == "submitted"
    else:
        assert after.status == "failed" and after.failure_code == "outcome_unknown"
    assert "did not answer within 0.5s" in after.last_error
    # The server answers half a second after the send gave up; it is let finish here, or its answer would be
    # logged in the next test's log (the server is the session's).
    answered = lambda: [request for request, _ in httpserver.log if request.method == "POST"]  # noqa: E731
    wait_until(answered, 10, "the slow server's answer")
    assert len(answered()) == 1


@pytest.fixture
def resetting_server():
    """A server that reads the request and closes the connection without an answer."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    stop = threading.Event()

    def serve():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    conn.recv(65536)
                except OSError:
                    pass
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    listener.close()


@pytest.mark.parametrize("kind", HTTP_KINDS)
def test_a_connection_reset_after_the_request_is_an_unknown_outcome(app, resetting_server, kind):
    action_id = setup_one(app, kind, resetting_server)
    tick(app)
    after = row(app, action_id)
    if kind in IDEMPOTENT:
        assert after.status == "queued" and "same Idempotency-Key" in after.last_error
    elif kind in ASKED_LATER:
        assert after.status == "submitted"
    else:
        assert after.status == "failed" and after.failure_code == "outcome_unknown"
    assert "broke during the request" in after.last_error
