"""Connecting a channel's account from its page, against a loopback authorization server: the redirect with
state and an S256 challenge, the callback's checks, the exchange, sealed tokens, and the channel's health."""

import base64
import hashlib
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import select, text

from models.actions.tables import FailureCode
from models.channels import connections
from models.channels.providers import PROVIDERS
from models.channels.providers.base import SendOutcome, SendResult
from models.channels.tables import Channel, OAuthAuthorization
from models.core.database import read_session, write_session
from models.core.runtime import runtime
from tests.fakes.oauth import CLIENT_ID, CLIENT_SECRET, FakeAuthorizationServer
from tests.web.conftest import channel_of, claim_and, make_action

BASE_URL = "http://tickwork.test"


@pytest.fixture
def app_config(app_config):
    id_name, secret_name = connections.setting_names("x")
    return {**app_config, "TICKWORK_BASE_URL": BASE_URL, id_name: CLIENT_ID, secret_name: CLIENT_SECRET}


@pytest.fixture
def fake(httpserver, monkeypatch):
    server = FakeAuthorizationServer(httpserver)
    monkeypatch.setitem(PROVIDERS, "x", server.provider("x"))
    return server


@pytest.fixture
def channel_id(app, world, fake):
    with app.app_context(), write_session() as session:
        channel = channel_of(session, world)
        channel.kind = "x"
        return channel.id


def _query(url: str) -> dict:
    return {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}


def _pending(app) -> list[OAuthAuthorization]:
    with app.app_context(), read_session() as session:
        return list(session.scalars(select(OAuthAuthorization).order_by(OAuthAuthorization.id)))


def _channel(app, channel_id) -> Channel:
    with app.app_context(), read_session() as session:
        return session.get(Channel, channel_id)


def _start(admin, channel_id) -> str:
    answer = admin.post(f"/channels/{channel_id}/connect")
    assert answer.status_code == 303, answer.get_data(as_text=True)[:500]
    return answer.headers["Location"]


def _callback(browser, code, state, **extra):
    return browser.get("/oauth/callback/x", query_string={"code": code, "state": state, **extra})


def test_connect_sends_the_person_to_the_network_with_state_and_an_s256_challenge_of_a_verifier_kept_sealed(
        app, browser_for, fake, channel_id):
    admin = browser_for("admin")
    page = admin.get(f"/channels/{channel_id}").get_data(as_text=True)
    assert 'id="connect"' in page and 'name="secret"' not in page  # a Connect button, no secret field
    answer = admin.post(f"/channels/{channel_id}/connect")
    location = answer.headers["Location"]
    assert location.startswith(fake.url("/i/oauth2/authorize") + "?")
    query = _query(location)
    assert query["response_type"] == "code" and query["client_id"] == CLIENT_ID
    assert query["redirect_uri"] == f"{BASE_URL}/oauth/callback/x"
    assert query["scope"] == "tweet.write users.read offline.access"
    assert query["code_challenge_method"] == "S256" and len(query["state"]) >= 32
    (pending,) = _pending(app)
    with app.app_context():
        verifier = runtime().secret_box.open(pending.verifier_sealed)
    assert 43 <= len(verifier) <= 128
    assert query["code_challenge"] == base64.urlsafe_b64encode(
        hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    assert pending.state_hash == hashlib.sha256(query["state"].encode()).hexdigest()  # the state is not stored
    assert verifier not in pending.verifier_sealed
    assert pending.expires_at - pending.created_at == timedelta(minutes=10)
    assert all(verifier not in value for value in answer.headers.getlist("Set-Cookie"))  # not in the cookie


def test_the_callback_exchanges_the_code_with_its_verifier_seals_the_tokens_and_shows_the_account(
        app, browser_for, fake, channel_id):
    admin = browser_for("admin")
    code, state = fake.approve(_start(admin, channel_id))
    with app.app_context():
        verifier = runtime().secret_box.open(_pending(app)[0].verifier_sealed)
    answer = _callback(admin, code, state)
    assert answer.status_code == 303 and answer.headers["Location"].endswith(f"/channels/{channel_id}")
    (request,) = fake.token_requests
    assert request["grant_type"] == "authorization_code" and request["code"] == code
    assert request["code_verifier"] == verifier and request["redirect_uri"] == f"{BASE_URL}/oauth/callback/x"
    assert request["authorization"] == "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
    assert request["content_type"].startswith("application/x-www-form-urlencoded")
    channel = _channel(app, channel_id)
    with app.app_context():
        box = runtime().secret_box
        access, refresh = channel.secret(box), box.open(channel.refresh_token_sealed)
    assert access in fake.access_tokens and refresh in fake.refresh_tokens
    with app.app_context(), read_session() as session:  # no token anywhere in the database in plaintext
        for table in ("channels", "channel_events", "oauth_authorizations"):
            for row in session.execute(text(f"SELECT * FROM {table}")):
                assert access not in str(tuple(row)) and refresh not in str(tuple(row)), table
    assert channel.connected_account["name"] == "Acme Bakery" and channel.connected_account["username"] == "acmebakery"
    page = admin.get(f"/channels/{channel_id}").get_data(as_text=True)
    assert "Acme Bakery" in page and "@acmebakery" in page and 'src="data:image/png;base64,' in page
    assert "Connected as acmebakery" in page
    assert "2026-06-01 14:00 UTC" in page  # the token's expiry, two hours on


def test_a_wrong_state_is_refused_with_a_clear_page_and_changes_nothing(app, browser_for, fake, channel_id):
    admin = browser_for("admin")
    code, _ = fake.approve(_start(admin, channel_id))
    answer = _callback(admin, code, "a-state-tickwork-never-issued-0123456789")
    assert answer.status_code == 400
    assert "does not match a connection Tickwork started" in answer.get_data(as_text=True)
    assert fake.token_requests == [] and _channel(app, channel_id).secret_sealed is None
    assert _pending(app)[0].used_at is None
    assert _callback(admin, code, "").status_code == 400


def test_a_state_answers_once_and_only_within_ten_minutes(app, browser_for, fake, channel_id, clock):
    admin = browser_for("admin")
    code, state = fake.approve(_start(admin, channel_id))
    assert _callback(admin, code, state).status_code == 303
    again = _callback(admin, code, state)
    assert again.status_code == 400 and "already used" in again.get_data(as_text=True)
    assert len(fake.token_requests) == 1
    code, state = fake.approve(_start(admin, channel_id))
    clock.advance(minutes=10, seconds=1)
    late = _callback(admin, code, state)
    assert late.status_code == 400 and "expired" in late.get_data(as_text=True)
    assert len(fake.token_requests) == 1


def test_only_the_person_who_started_it_may_answer_and_only_an_admin_may_start(app, browser_for, fake, channel_id):
    admin, ops, nobody = browser_for("admin"), browser_for("ops"), browser_for(None)
    assert ops.post(f"/channels/{channel_id}/connect").status_code == 403
    code, state = fake.approve(_start(admin, channel_id))
    for other in (ops, nobody):
        refused = _callback(other, code, state)
        assert refused.status_code == 400 and "someone else" in refused.get_data(as_text=True)
    assert fake.token_requests == []
    assert _callback(admin, code, state).status_code == 303  # still the admin's to answer


def test_a_network_that_says_no_changes_nothing_and_uses_up_the_state(app, browser_for, fake, channel_id):
    admin = browser_for("admin")
    _, state = fake.approve(_start(admin, channel_id))
    answer = admin.get("/oauth/callback/x", query_string={"state": state, "error": "access_denied"})
    assert answer.status_code == 400 and "access_denied" in answer.get_data(as_text=True)
    assert fake.token_requests == [] and _channel(app, channel_id).secret_sealed is None


def test_a_kind_without_an_app_says_how_to_register_one_instead_of_connect(app, browser_for, fake, channel_id):
    app.config.pop(connections.setting_names("x")[0])
    admin = browser_for("admin")
    page = admin.get(f"/channels/{channel_id}").get_data(as_text=True)
    assert "register an app with X and set TICKWORK_OAUTH_X_CLIENT_ID and TICKWORK_OAUTH_X_CLIENT_SECRET" in page
    assert 'id="connect"' not in page
    assert admin.post(f"/channels/{channel_id}/connect").status_code == 409 and _pending(app) == []


def test_reconnecting_clears_reconnect_needed(app, browser_for, fake, channel_id):
    with app.app_context(), write_session() as session:
        connections.mark_reconnect_needed(session, channel_id, reason="X refused the token (401)", now=runtime().now())
    admin = browser_for("admin")
    page = admin.get(f"/channels/{channel_id}").get_data(as_text=True)
    assert 'id="reconnect-needed"' in page and "X refused the token (401)" in page
    code, state = fake.approve(_start(admin, channel_id))
    assert _callback(admin, code, state).status_code == 303
    assert _channel(app, channel_id).reconnect_needed_since is None
    assert 'id="reconnect-needed"' not in admin.get(f"/channels/{channel_id}").get_data(as_text=True)


def test_the_channel_page_shows_its_health(app, world, browser_for, fake, channel_id, clock):
    published = make_action(app, world, minutes=0)
    claim_and(app, published, "published", provider_id="1445880548472328192")
    for n in range(2):
        failed = make_action(app, world, minutes=0, target=f"t{n}@example.test")
        claim_and(app, failed, "failed", message="X refused the request (403): duplicate content")
    with app.app_context(), write_session() as session:
        channel = session.get(Channel, channel_id)
        channel.config = {"rate": "50/min"}
        channel.token_expires_at = clock.now() + timedelta(hours=2)
    page = browser_for("admin").get(f"/channels/{channel_id}").get_data(as_text=True)
    health = page.split('id="channel-health"', 1)[1].split("</dl>", 1)[0]
    assert f"#{published}" in health and "2026-06-01 12:00 UTC" in health
    failures = health.split('id="failures-24h">', 1)[1]
    assert failures.startswith("2") and "X refused the request (403): duplicate content (2)" in failures
    assert "50/min" in health.split('id="held-to">', 1)[1]
    assert "2026-06-01 14:00 UTC" in health.split('id="token-expiry">', 1)[1]
    clock.advance(hours=25)
    later = browser_for("admin").get(f"/channels/{channel_id}").get_data(as_text=True)
    assert later.split('id="failures-24h">', 1)[1].startswith("0")
    assert FailureCode.PERMANENT.value in health


def test_send_test_checks_the_credentials_without_posting_where_the_provider_offers_check(
        app, browser_for, fake, channel_id):
    checked = []

    def check(delivery, context):
        checked.append(delivery.secret)
        return SendResult(SendOutcome.SUCCESS, "the token is valid for @acmebakery")

    PROVIDERS["x"].check = check
    with app.app_context(), write_session() as session:
        session.get(Channel, channel_id).set_secret(runtime().secret_box, "typed-token")
    answer = browser_for("admin").post(f"/channels/{channel_id}/test", {"target": "me"}, htmx=True)
    assert answer.status_code == 200
    assert "Credentials checked, nothing posted" in answer.get_data(as_text=True)
    assert checked == ["typed-token"] and [r for r, _ in fake.server.log if r.path == "/2/tweets"] == []


def test_a_test_send_the_network_refuses_as_expired_marks_the_channel(app, browser_for, fake, channel_id):
    with app.app_context(), write_session() as session:
        session.get(Channel, channel_id).set_secret(runtime().secret_box, "an-expired-token")
    answer = browser_for("admin").post(f"/channels/{channel_id}/test", {"target": "me"}, htmx=True)
    assert answer.status_code == 502 and "reconnect" in answer.get_data(as_text=True)
    assert _channel(app, channel_id).reconnect_needed_since is not None


def test_reconnect_needed_shows_on_the_composer_and_the_health_page(app, browser_for, fake, channel_id):
    with app.app_context(), write_session() as session:
        connections.mark_reconnect_needed(session, channel_id, reason="X refused the token (401)", now=runtime().now())
    composer = browser_for("marketer").get("/posts/new").get_data(as_text=True)
    target = composer.split('value="main"', 1)[1].split("</label>", 1)[0]
    assert "reconnect needed" in target
    health = browser_for("ops").get("/health").get_data(as_text=True)
    banner = health.split('id="reconnect-needed"', 1)[1].split("</p>", 1)[0]
    assert "main" in banner and "X refused the token (401)" in banner


def test_pointing_a_connected_channel_at_another_token_endpoint_needs_connecting_again(
        app, browser_for, fake, channel_id):
    admin = browser_for("admin")
    code, state = fake.approve(_start(admin, channel_id))
    assert _callback(admin, code, state).status_code == 303
    moved = f"token_url = {fake.url('/staging/oauth2/token')}"
    answer = admin.post(f"/channels/{channel_id}", {"name": "main", "kind": "x", "settings": moved})
    assert answer.status_code == 422 and "needs connecting again: tick Disconnect" in answer.get_data(as_text=True)
    assert _channel(app, channel_id).config == {}
    answer = admin.post(f"/channels/{channel_id}", {"name": "main", "kind": "x", "clear_secret": "yes",
                                                    "settings": moved})
    assert answer.status_code == 303
    channel = _channel(app, channel_id)
    assert channel.secret_sealed is None and channel.refresh_token_sealed is None and channel.connected_account is None


def test_a_setting_may_point_the_oauth_endpoints_only_at_the_network_or_where_the_operator_allows(
        app, browser_for, fake, channel_id):
    admin = browser_for("admin")
    for key in ("token_url", "authorize_url", "refresh_url"):
        answer = admin.post(f"/channels/{channel_id}", {"name": "main", "kind": "x",
                                                        "settings": f"{key} = https://collector.example/steal"})
        assert answer.status_code == 422, key
        assert "may name only the network" in answer.get_data(as_text=True)
    assert _channel(app, channel_id).config == {}


def test_a_connect_pages_policy_lets_its_form_go_on_to_the_networks_authorization_origin_only(
        app, browser_for, fake, channel_id):
    admin = browser_for("admin")
    policy = admin.get(f"/channels/{channel_id}").headers["Content-Security-Policy"]
    origin = fake.url("/").rstrip("/")
    assert f"form-action 'self' {origin};" in policy  # a browser enforces form-action on the 303 to the network
    with app.app_context(), write_session() as session:
        session.get(Channel, channel_id).kind = "log"
    assert "form-action 'self';" in admin.get(f"/channels/{channel_id}").headers["Content-Security-Policy"]
