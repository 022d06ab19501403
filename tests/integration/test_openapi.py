"""The OpenAPI document is held to the code: every route is documented and every documented route
served, each documented example is accepted, each required field is refused when missing, and
Schemathesis drives the live API with what the document says, expecting no 5xx and answers that
match the document."""

import logging
import re
import subprocess
import sys
import threading

import pytest
from werkzeug.serving import make_server

from tests.factories import add_action

DOCUMENT = "/api/v1/openapi.json"


def documented(app) -> set[tuple[str, str]]:
    spec = app.test_client().get(DOCUMENT).json
    return {(path, method.upper()) for path, item in spec["paths"].items() for method in item
            if method in ("get", "post", "put", "patch", "delete")}


def served(app) -> set[tuple[str, str]]:
    routes = set()
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/") or rule.rule == DOCUMENT:
            continue
        path = re.sub(r"<(?:[^:>]+:)?([^>]+)>", r"{\1}", rule.rule)
        routes |= {(path, method) for method in rule.methods - {"HEAD", "OPTIONS"}}
    return routes


def test_every_api_route_is_documented_and_every_documented_route_is_served(app):
    assert documented(app) == served(app)


def test_every_create_honours_an_idempotency_key_and_says_so(app):
    """A POST that answers 201 or 202 creates something: it wears @idempotent, and the document lists the header."""
    spec = app.test_client().get(DOCUMENT).json
    honouring = set()
    for rule in app.url_map.iter_rules():
        if getattr(app.view_functions[rule.endpoint], "honours_idempotency_key", False):
            honouring.add(re.sub(r"<(?:[^:>]+:)?([^>]+)>", r"{\1}", rule.rule))
    said, creates = set(), set()
    for path, method, operation in _operations(spec):
        if any(p.get("name") == "Idempotency-Key" for p in operation.get("parameters", [])):
            said.add(path)
        if method == "post" and {"201", "202"} & set(operation["responses"]):
            creates.add(path)
    assert creates <= honouring, creates - honouring
    assert honouring == said


def _operations(spec):
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if isinstance(operation, dict) and "responses" in operation:
                yield path, method, operation


def _made(response, status: int = 201) -> int:
    assert response.status_code == status, response.json
    return response.json["id"]


def one_of_each_kind(client, world) -> dict:
    """An object of every kind a documented path names, made through the API as a client would."""
    admin = world.auth("admin")
    return {
        "post_id": _made(client.post("/api/v1/posts", headers=admin, json={
            "body": "Hello", "targets": ["main"], "local_time": "2027-01-04T09:00"})),
        "rule_id": _made(client.post("/api/v1/recurring", headers=admin, json={
            "action_type": "send_email", "channel": "main", "target_key": "ops@example.com", "payload": {},
            "rrule": "FREQ=DAILY", "starts_local": "2027-01-04T08:00"})),
        "work_id": _made(client.post("/api/v1/works", headers=admin, json={"name": "Digest", "pipeline": "log"})),
        "campaign_id": _made(client.post("/api/v1/campaigns", headers=admin, json={
            "name": "Onboarding", "channel": "main", "steps": [{"delay": "P1D", "subject": "Hi", "body": "Hello"}]})),
        "contact_id": _made(client.post("/api/v1/contacts", headers=admin, json={"email": "ada@example.com"})),
    }


def test_each_documented_example_is_accepted_and_each_required_field_refused_without_it(app, client, world, clock):
    spec = client.get(DOCUMENT).json
    schemas = spec["components"]["schemas"]
    ids = {"action_id": add_action(app, world, publish_at=clock.now()), "channel_name": "main",
           **one_of_each_kind(client, world)}
    activated = client.post(f"/api/v1/campaigns/{ids['campaign_id']}/activate", headers=world.auth("admin"))
    assert activated.status_code == 200, activated.json  # enrolling needs an active campaign
    tried = []
    for path, method, operation in _operations(spec):
        content = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if not content or "example" not in content:
            continue
        url = path.format(**ids)
        if path.endswith("/post-now"):  # Post now sends an approved post only (409 not_approved otherwise)
            approved = client.post(f"/api/v1/posts/{ids['post_id']}/approve", headers=world.auth("admin"))
            assert approved.status_code in (200, 409), approved.json
        # A body field naming an object (an enrollment's contact_id) names this test's object.
        example = {key: ids.get(key, value) for key, value in content["example"].items()}
        successes = {code for code in operation["responses"] if code.startswith("2")}
        schema = content["schema"]
        schema = schemas[schema["$ref"].rsplit("/", 1)[1]] if "$ref" in schema else schema
        for field in schema.get("required", []):
            missing = {key: value for key, value in example.items() if key != field}
            refused = client.open(url, method=method.upper(), json=missing, headers=world.auth("admin"))
            assert refused.status_code == 422 and refused.json["error"]["field"] == field, (path, method, field,
                                                                                             refused.json)
        accepted = client.open(url, method=method.upper(), json=example, headers=world.auth("admin"))
        assert str(accepted.status_code) in successes, (path, method, accepted.json)
        tried.append((method, path))
    # actions create and reschedule; posts create, change and post-now; and each wing's creates and changes
    assert len(tried) >= 14, tried
    for created in ("/api/v1/recurring", "/api/v1/works", "/api/works/{work_id}/schedule", "/api/v1/campaigns",
                    "/api/v1/campaigns/{campaign_id}/enrollments", "/api/v1/contacts"):
        assert any(path == created for _, path in tried), created


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_API_RATE_LIMIT"] = "100000 per minute"  # the fuzzer is not the client the limit is for
    app_config["TICKWORK_BASE_URL"] = "https://tickwork.example"  # email drips and the webhook pipeline need it
    # A fuzzed work may ask its log pipeline to take an hour; Run Now runs it inline here, so bound it.
    app_config["TICKWORK_POLICY"] = {**app_config["TICKWORK_POLICY"], "work_pipeline_timeout": 1,
                                     "work_task_timeout": 2, "work_stuck_timeout": 3}
    return app_config


@pytest.mark.slow
@pytest.mark.only_backend("sqlite")
def test_schemathesis_finds_no_server_error_and_no_answer_outside_the_document(app, client, world, clock, tmp_path):
    add_action(app, world, publish_at=clock.now())
    one_of_each_kind(client, world)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a thousand request lines say nothing here
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "schemathesis.cli", "run", f"http://127.0.0.1:{server.port}{DOCUMENT}",
             "-H", f"Authorization: Bearer {world.tokens['admin']}",
             "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,"
                         "response_schema_conformance",
             "--max-examples", "12", "--seed", "20261201", "--generation-database", "none",
             "--workers", "1", "--no-color", "--max-failures", "20"],
            cwd=tmp_path, capture_output=True, text=True, timeout=600)
    finally:
        server.shutdown()
        thread.join(timeout=10)
    report = result.stdout[-6000:] + result.stderr[-2000:]
    assert result.returncode == 0, report
    assert re.search(r"\b\d+ (?:test cases|cases) generated", report) or "passed" in report, report
