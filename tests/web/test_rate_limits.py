"""Rate limits: failed sign-ins per account and per address, API calls per token; each refusal a 429 with Retry-After."""

import pytest

from tests.web.conftest import PASSWORD, TOKEN


@pytest.fixture
def app_config(app_config):
    app_config.update(TICKWORK_SIGNIN_LIMIT_PER_ACCOUNT="3 per 10 minutes",
                      TICKWORK_SIGNIN_LIMIT_PER_ADDRESS="5 per 10 minutes", TICKWORK_API_RATE_LIMIT="4 per minute")
    return app_config


def _attempt(client, email, password):
    token = TOKEN.search(client.get("/login").get_data(as_text=True)).group(1)
    return client.post("/login", data={"email": email, "password": password, "csrf_token": token})


def test_failed_sign_ins_are_limited_per_account_with_a_clear_message_and_retry_after(app, world):
    client = app.test_client()
    for _ in range(3):
        assert _attempt(client, "ops@acme.test", "wrong password").status_code == 401
    refused = _attempt(client, "ops@acme.test", PASSWORD)  # even the right password waits now
    assert refused.status_code == 429
    assert int(refused.headers["Retry-After"]) > 0
    assert "Too many failed sign-ins" in refused.get_data(as_text=True)
    # Another account is not locked by the first one's failures.
    assert _attempt(client, "admin@acme.test", PASSWORD).status_code == 303


def test_successful_sign_ins_do_not_count(app, world):
    client = app.test_client()
    for _ in range(6):
        assert _attempt(client, "ops@acme.test", PASSWORD).status_code == 303
        client.post("/logout", data={"csrf_token": TOKEN.search(client.get("/queue").get_data(as_text=True)).group(1)})


def test_failed_sign_ins_are_limited_per_address_across_accounts(app, world):
    client = app.test_client()
    for n in range(5):
        assert _attempt(client, f"nobody{n}@acme.test", "wrong password").status_code == 401
    refused = _attempt(client, "admin@acme.test", PASSWORD)
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0


def test_api_calls_are_limited_per_token_in_json(app, world):
    client = app.test_client()
    for _ in range(4):
        assert client.get("/api/v1/actions", headers=world.auth("ops")).status_code == 200
    refused = client.get("/api/v1/actions", headers=world.auth("ops"))
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
    assert refused.json["error"]["code"] == "too_many_requests"
    assert "Too many requests with this token" in refused.json["error"]["message"]
    assert client.get("/api/v1/actions", headers=world.auth("admin")).status_code == 200  # another token


def test_web_processes_share_their_counts_through_redis(app_config, world):
    """Two apps stand for two web processes (or hosts): with Redis storage the limit holds across both."""
    import uuid

    import redis

    from webapp import create_app

    from models.core.database import db

    config = dict(app_config, TICKWORK_RATELIMIT_STORAGE_URI="redis://127.0.0.1:6379/0",
                  RATELIMIT_KEY_PREFIX=f"tickwork-test-{uuid.uuid4().hex}")
    apps = [create_app(config), create_app(config)]
    first, second = (each.test_client() for each in apps)
    try:
        assert _attempt(first, "ops@acme.test", "wrong").status_code == 401
        assert _attempt(second, "ops@acme.test", "wrong").status_code == 401
        assert _attempt(first, "ops@acme.test", "wrong").status_code == 401
        assert _attempt(second, "ops@acme.test", PASSWORD).status_code == 429
    finally:
        connection = redis.Redis.from_url("redis://127.0.0.1:6379/0")
        for key in connection.scan_iter(f"*{config['RATELIMIT_KEY_PREFIX']}*"):
            connection.delete(key)
        connection.close()
        for each in apps:
            with each.app_context():
                db.engine.dispose()


def _api_routes(app) -> list[tuple[str, str]]:
    """Every API route from the URL map, with 1 for each of its ids, and one of its methods."""
    import re

    routes = []
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/api/"):
            url = re.sub(r"<(?:int:)?[^>]+>", "1", rule.rule)
            routes.append((sorted(rule.methods - {"HEAD", "OPTIONS"})[0], url))
    return routes


def test_one_budget_per_token_covers_every_api_route_the_wings_included(app, world):
    """Calls to any API route spend the token's one budget, and any API route refuses once it is spent."""
    client = app.test_client()
    routes = _api_routes(app)
    wings = ("/api/v1/recurring", "/api/works/", "/api/v1/works", "/api/v1/campaigns", "/api/v1/contacts",
             "/api/v1/enrollments")
    for prefix in wings:
        assert any(url.startswith(prefix) for _, url in routes), prefix
    limiter = app.extensions["tickwork_limiter"]
    for method, url in routes:
        limiter.reset()
        for spent in ("/api/v1/recurring", "/api/v1/works", "/api/v1/contacts"):  # the budget is four calls
            assert client.get(spent, headers=world.auth("ops")).status_code == 200
        assert client.get("/api/works/1/schedule", headers=world.auth("ops")).status_code == 404
        refused = client.open(url, method=method, headers=world.auth("ops"))
        assert refused.status_code == 429, (method, url, refused.status_code)
        assert int(refused.headers["Retry-After"]) > 0 and refused.json["error"]["code"] == "too_many_requests"
    assert client.get("/api/v1/campaigns", headers=world.auth("admin")).status_code == 200  # another token's budget


def test_callers_without_a_token_do_not_share_one_budget_with_each_other(app, world):
    client = app.test_client()
    for _ in range(4):
        assert client.post("/api/works/runs/nothing/callback", json={"status": "generated"}).status_code == 401
    assert client.post("/api/works/runs/nothing/callback", json={"status": "generated"}).status_code == 429
    other = client.post("/api/works/runs/nothing/callback", json={"status": "generated"},
                        environ_base={"REMOTE_ADDR": "192.0.2.7"})
    assert other.status_code == 401  # another address: its own budget
