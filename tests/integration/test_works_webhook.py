"""The webhook pipeline against a loopback receiver: a signed POST, waiting, the signed public callback, expiry."""

import hashlib
import hmac
import json
from datetime import timedelta

import pytest
from werkzeug import Response

from tests.integration.works_helpers import TEST_BASE_URL, Dispatcher, put_schedule, runs, schedule_row, work_row


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_BASE_URL"] = TEST_BASE_URL
    return app_config


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@pytest.fixture
def hooked(app, client, world, httpserver):
    """A webhook work whose receiver records each request and answers 202."""
    received = []

    def receive(request):
        received.append((request.get_data(), dict(request.headers)))
        return Response("", status=202)

    httpserver.expect_request("/generate", method="POST").respond_with_handler(receive)
    created = client.post("/api/v1/works", json={"name": "Site", "pipeline": "webhook",
                                                 "settings": {"url": httpserver.url_for("/generate")}},
                          headers=world.auth("ops"))
    assert created.status_code == 201, created.json
    return type("Hooked", (), {"work_id": created.json["id"], "secret": created.json["secret"], "received": received})


def callback(client, token: str, body: dict, secret: str | None, *, signature: str | None = None):
    raw = json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if secret is not None or signature is not None:
        headers["X-Tickwork-Signature"] = signature or sign(secret, raw)
    return client.post(f"/api/works/runs/{token}/callback", data=raw, headers=headers)


def test_the_webhook_pipeline_posts_signed_waits_and_its_signed_callback_ends_the_run(app, client, world, hooked):
    started = client.post(f"/api/works/{hooked.work_id}/schedule/run", headers=world.auth("ops"))
    assert started.status_code == 202 and started.json["run"]["status"] == "waiting"
    ((raw, headers),) = hooked.received
    assert headers["X-Tickwork-Signature"] == sign(hooked.secret, raw)
    body = json.loads(raw)
    token = body["run"]["token"]
    assert headers["Idempotency-Key"] == token
    assert body["callback_url"] == f"{TEST_BASE_URL}/api/works/runs/{token}/callback"
    assert body["work"] == {"id": hooked.work_id, "name": "Site"} and body["providers"] == {}
    assert work_row(app, hooked.work_id).generation_status == "generating"

    assert callback(client, token, {"status": "generated"}, None).status_code == 401
    forged = callback(client, token, {"status": "generated"}, "not the secret")
    assert forged.status_code == 401 and forged.json["error"]["code"] == "bad_signature"
    assert callback(client, "f" * 32, {"status": "generated"}, hooked.secret).status_code == 404
    for bad, field in (({"status": "done"}, "status"), ({"status": "error", "error": 5}, "error"),
                       ({"status": "generated", "extra": 1}, "extra")):
        answer = callback(client, token, bad, hooked.secret)
        assert answer.status_code == 422 and answer.json["error"]["field"] == field
    assert runs(app, hooked.work_id)[0].status == "waiting"

    done = callback(client, token, {"status": "generated"}, hooked.secret)
    assert done.status_code == 200 and done.json["recorded"] and done.json["run"]["status"] == "succeeded"
    again = callback(client, token, {"status": "error", "error": "late"}, hooked.secret)
    assert again.status_code == 200 and not again.json["recorded"]
    assert work_row(app, hooked.work_id).generation_status == "generated"


def test_a_failed_callback_counts_as_a_failure_of_the_claimed_slot(app, client, world, clock, hooked):
    put_schedule(client, world, hooked.work_id, cadence="daily")
    clock.set(schedule_row(app, hooked.work_id).next_run_at + timedelta(seconds=5))
    Dispatcher(app).pass_()
    token = json.loads(hooked.received[0][0])["run"]["token"]
    answer = callback(client, token, {"status": "error", "error": "the site build failed"}, hooked.secret)
    assert answer.status_code == 200 and answer.json["run"]["error"] == "the site build failed"
    schedule = schedule_row(app, hooked.work_id)
    assert (schedule.failure_count, schedule.next_run_at) == (1, clock.now() + timedelta(minutes=15))


def test_no_callback_within_the_pipeline_timeout_is_a_failed_run(app, client, world, clock, hooked):
    client.post(f"/api/works/{hooked.work_id}/schedule/run", headers=world.auth("ops"))
    dispatcher = Dispatcher(app)
    clock.advance(minutes=29, seconds=59)
    assert dispatcher.pass_()["expired"] == 0
    clock.advance(seconds=1)
    assert dispatcher.pass_()["expired"] == 1
    (run,) = runs(app, hooked.work_id)
    assert (run.status, run.error) == ("failed", "no callback within the pipeline timeout (30 min)")
    assert work_row(app, hooked.work_id).generation_status == "error"


def test_a_receiver_that_refuses_fails_the_run_with_its_words(app, client, world, httpserver):
    httpserver.expect_request("/refuse", method="POST").respond_with_data("bad token", status=401)
    created = client.post("/api/v1/works", json={"name": "Refused", "pipeline": "webhook",
                                                 "settings": {"url": httpserver.url_for("/refuse")}},
                          headers=world.auth("ops")).json
    started = client.post(f"/api/works/{created['id']}/schedule/run", headers=world.auth("ops"))
    assert started.json["run"]["status"] == "failed"
    assert started.json["run"]["error"] == "the webhook receiver answered 401: bad token"


def test_a_signed_but_hostile_callback_body_is_a_4xx_and_the_run_keeps_waiting(app, client, world, hooked):
    started = client.post(f"/api/works/{hooked.work_id}/schedule/run", headers=world.auth("ops"))
    token = json.loads(hooked.received[0][0])["run"]["token"]
    assert started.status_code == 202
    for raw, status in (("[" * 100_000 + "]" * 100_000, 422), ('{"status": "error", "error": "bad \\ud800"}', 422),
                        ('{"status": "error", "error": NaN}', 400), ('{"status": 1e999}', 400)):
        body = raw.encode()
        signed = {"Content-Type": "application/json", "X-Tickwork-Signature": sign(hooked.secret, body)}
        answer = client.post(f"/api/works/runs/{token}/callback", data=body, headers=signed)
        assert answer.status_code == status and answer.json["error"]["code"], raw[:40]
    assert runs(app, hooked.work_id)[0].status == "waiting"
