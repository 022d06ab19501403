"""Connected accounts against a loopback authorization server: renewal by the clock job, one refresher per
channel, "reconnect needed" and what it does to due rows, and its alert."""

import threading
from datetime import timedelta

import pytest
from sqlalchemy import select

from models.actions import lifecycle
from models.actions.tables import ActionEvent, ScheduledAction
from models.channels import connections
from models.channels.providers import PROVIDERS
from models.channels.providers.oauth import INSTAGRAM_REFRESH, NO_REFRESH, THREADS_REFRESH
from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.core.moves import Actor
from models.core.runtime import runtime
from models.notifications.tables import Notification
from tests.fakes.meta import MetaGraph
from tests.fakes.oauth import CLIENT_ID, CLIENT_SECRET, FakeAuthorizationServer
from tests.integration.alert_helpers import alerts_pass, subjects, tick
from tests.integration.clock_helpers import add_actions

BASE_URL = "http://tickwork.test"


@pytest.fixture
def app_config(app_config):
    return {**app_config, "TICKWORK_BASE_URL": BASE_URL,
            **{name: value for kind in ("x", "linkedin", "threads", "instagram", "facebook")
               for name, value in zip(connections.setting_names(kind), (CLIENT_ID, CLIENT_SECRET))}}


@pytest.fixture
def fake(httpserver):
    return FakeAuthorizationServer(httpserver)


def _channel_of(app, world, kind: str, monkeypatch, fake, **spec) -> int:
    monkeypatch.setitem(PROVIDERS, kind, fake.provider(kind, **spec))
    with app.app_context(), write_session() as session:
        channel = session.scalar(select(Channel).where(Channel.workspace_id == world.workspace_id))
        channel.kind = kind  # the world's channel "main", now a connected kind
        return channel.id


def _connect(app, world, fake, channel_id: int) -> None:
    """The whole Connect, through the domain functions the dashboard calls: authorize, approve, callback."""
    with app.app_context():
        rt = runtime()
        settings = app.config
        with write_session() as session:
            channel = session.get(Channel, channel_id)
            url = connections.start_authorization(session, channel, user_id=world.users["admin"],
                                                  app=connections.oauth_app(settings, channel.kind),
                                                  box=rt.secret_box, now=rt.now())
            kind, config = channel.kind, dict(channel.config or {})
        code, state = fake.approve(url)
        with write_session() as session:
            pending = connections.take_authorization(session, kind, state, user_id=world.users["admin"], now=rt.now())
            session.expunge(pending)
        tokens = connections.exchange_code(pending, code, channel_config=config,
                                           app=connections.oauth_app(settings, kind), box=rt.secret_box, now=rt.now())
        account = connections.read_account(kind, tokens, config)
        with write_session() as session:
            connections.store_connection(session, pending, tokens, account, box=rt.secret_box, now=rt.now(),
                                         actor=Actor(label="user:admin"))


def _channel(app, channel_id) -> Channel:
    with app.app_context(), read_session() as session:
        return session.get(Channel, channel_id)


def _refresh(app) -> dict:
    from jobs.clock import refresh_tokens_once

    with app.app_context():
        return refresh_tokens_once()


def _secret(app, channel_id) -> str:
    with app.app_context():
        return _channel(app, channel_id).secret(runtime().secret_box)


@pytest.fixture
def connected(app, world, fake, monkeypatch):
    channel_id = _channel_of(app, world, "x", monkeypatch, fake)
    _connect(app, world, fake, channel_id)
    return channel_id


def test_the_clock_job_renews_a_token_before_it_expires_with_the_refresh_grant(app, clock, fake, connected):
    first_access, first = _secret(app, connected), _channel(app, connected)
    assert first.token_expires_at == clock.now() + timedelta(hours=2)
    clock.advance(minutes=80)  # 40 minutes left: not yet within the 30 minutes ahead
    assert _refresh(app)["expiring"] == 0 and fake.refresh_requests == []
    clock.advance(minutes=15)
    summary = _refresh(app)
    assert summary["refreshed"] == 1
    (request,) = fake.refresh_requests
    assert request["grant_type"] == "refresh_token" and request["refresh_token"] in fake.refresh_tokens
    assert request["authorization"].startswith("Basic ")  # the app authenticates; nothing else is sent
    renewed = _channel(app, connected)
    assert _secret(app, connected) != first_access and _secret(app, connected) in fake.access_tokens
    assert renewed.token_expires_at == clock.now() + timedelta(hours=2)
    assert _refresh(app)["expiring"] == 0  # renewed: not due again


def test_two_refreshers_for_one_channel_spend_its_single_use_refresh_token_once(app, clock, fake, connected):
    clock.advance(minutes=100)
    fake.hold_refresh = threading.Event()
    outcomes = {}

    def refresher(name):
        with app.app_context():
            from models.core.database import write_session as each

            rt = runtime()
            outcomes[name] = connections.refresh_connections(each, now_fn=rt.now, box=rt.secret_box,
                                                             settings=app.config, timeout=10)

    first = threading.Thread(target=refresher, args=("first",))
    first.start()
    assert fake.refresh_arrived.wait(10)  # the first holds the lease, its request at the network
    second = threading.Thread(target=refresher, args=("second",))
    second.start()
    second.join(10)
    fake.hold_refresh.set()
    first.join(10)
    assert [o.outcome for o in outcomes["second"]] == ["busy"]
    assert [o.outcome for o in outcomes["first"]] == ["refreshed"]
    assert len(fake.refresh_requests) == 1
    assert _secret(app, connected) in fake.access_tokens
    assert _channel(app, connected).reconnect_needed_since is None


def _workspace_notifications(app, world) -> list[Notification]:
    with app.app_context(), read_session() as session:
        return list(session.scalars(select(Notification).where(Notification.workspace_id == world.workspace_id)))


def test_a_refused_refresh_puts_the_channel_in_reconnect_needed_with_exactly_one_notification(
        app, world, clock, fake, connected):
    fake.refuse_refresh = "invalid_grant"
    clock.advance(minutes=100)
    assert _refresh(app)["reconnect_needed"] == 1
    channel = _channel(app, connected)
    assert channel.reconnect_needed_since == clock.now() and "invalid_grant" in channel.reconnect_reason
    alerts_pass(app, rules=["channel_reconnect_needed"])
    clock.advance(minutes=5)
    assert _refresh(app)["expiring"] == 0  # in reconnect needed: left to a person
    alerts_pass(app, rules=["channel_reconnect_needed"])
    (notice,) = _workspace_notifications(app, world)
    assert "Reconnect the X channel 'main'" in notice.title and "invalid_grant" in notice.body


def test_a_passing_failure_of_the_network_leaves_the_token_to_the_next_pass_while_it_works(
        app, clock, fake, connected, httpserver):
    clock.advance(minutes=100)
    httpserver.clear()  # the token endpoint answers 503 now
    httpserver.expect_request("/2/oauth2/token", method="POST").respond_with_data("busy", status=503)
    assert _refresh(app)["later"] == 1
    assert _channel(app, connected).reconnect_needed_since is None
    clock.advance(minutes=25)  # the token has expired meanwhile: now it needs a person
    assert _refresh(app)["reconnect_needed"] == 1


def _events(app, action_id):
    with app.app_context(), read_session() as session:
        return [(e.from_status, e.to_status) for e in session.scalars(
            select(ActionEvent).where(ActionEvent.action_id == action_id).order_by(ActionEvent.id))]


def _row(app, action_id) -> ScheduledAction:
    with app.app_context(), read_session() as session:
        return session.get(ScheduledAction, action_id)


def _mark(app, channel_id, reason="the token was revoked"):
    with app.app_context(), write_session() as session:
        assert connections.mark_reconnect_needed(session, channel_id, reason=reason, now=runtime().now())


def test_a_due_row_on_a_reconnect_needed_channel_fails_as_reconnect_needed_without_a_claim_or_an_attempt(
        app, world, fake, connected):
    _mark(app, connected)
    (action_id,) = add_actions(app, world.workspace_id, 1)
    summary = tick(app)
    row = _row(app, action_id)
    assert (row.status, row.failure_code, row.attempt_count) == ("failed", "reconnect_needed", 0)
    assert "needs reconnecting" in row.last_error and "X channel 'main'" in row.last_error
    assert _events(app, action_id) == [(None, "queued"), ("queued", "failed")]  # no claim
    assert [r for r, _ in fake.server.log if r.path == "/2/tweets"] == []
    assert summary["outcomes"] == {"missed:reconnect_needed": 1}


def test_a_row_on_a_channel_reconnected_meanwhile_is_not_stranded(app, world, clock, connected):
    (action_id,) = add_actions(app, world.workspace_id, 1)
    with app.app_context(), write_session() as session:
        moved = lifecycle.strand(session, action_id, message="not sent", now=clock.now(), actor=Actor(label="test"))
    assert not moved.ok and _row(app, action_id).status == "queued"


def test_a_row_not_yet_due_on_a_reconnect_needed_channel_waits(app, world, clock, connected):
    _mark(app, connected)
    (action_id,) = add_actions(app, world.workspace_id, 1, due_in=timedelta(hours=1))
    with app.app_context(), write_session() as session:
        moved = lifecycle.strand(session, action_id, message="not sent", now=clock.now(), actor=Actor(label="test"))
    assert not moved.ok and _row(app, action_id).status == "queued"


def test_a_send_refused_as_a_revoked_token_puts_the_channel_in_reconnect_needed(app, world, clock, fake, connected):
    fake.revoke_all()
    (first,) = add_actions(app, world.workspace_id, 1)
    tick(app)
    row = _row(app, first)
    assert (row.status, row.attempt_count) == ("queued", 1)  # refused before anything was posted: renew, then retry
    assert _channel(app, connected).token_expires_at == clock.now()
    assert _refresh(app)["reconnect_needed"] == 1  # the refresh token was revoked too
    clock.advance(minutes=6)
    (later,) = add_actions(app, world.workspace_id, 1, thing_prefix="later")
    tick(app)
    assert (_row(app, first).status, _row(app, first).failure_code, _row(app, first).attempt_count) == (
        "failed", "reconnect_needed", 1)
    assert (_row(app, later).failure_code, _row(app, later).attempt_count) == ("reconnect_needed", 0)


def test_a_token_the_network_expired_early_is_renewed_and_the_row_goes_after_it(app, world, clock, fake, connected):
    fake.access_tokens.clear()  # the access token stopped working; the refresh token still does
    (action_id,) = add_actions(app, world.workspace_id, 1)
    tick(app)
    assert _refresh(app)["refreshed"] == 1
    clock.advance(minutes=6)
    tick(app)
    row = _row(app, action_id)
    assert (row.status, row.attempt_count) == ("published", 2)
    assert _channel(app, connected).reconnect_needed_since is None


def test_a_send_refused_as_revoked_on_a_channel_without_refresh_fails_and_needs_reconnecting(
        app, world, fake, connected):
    with app.app_context(), write_session() as session:
        session.get(Channel, connected).refresh_token_sealed = None  # a token typed in: nothing renews it
    fake.revoke_all()
    (action_id,) = add_actions(app, world.workspace_id, 1)
    tick(app)
    row = _row(app, action_id)
    assert (row.status, row.failure_code, row.attempt_count) == ("failed", "reconnect_needed", 1)
    assert "reconnect" in row.last_error and _channel(app, connected).reconnect_needed_since is not None


def test_the_reconnect_alert_fires_and_resolves_once_the_channel_is_connected_again(app, world, fake, connected):
    _mark(app, connected)
    fired = alerts_pass(app, rules=["channel_reconnect_needed"])
    assert subjects(fired, "fired", "channel_reconnect_needed") == [f"channel:{connected}"]
    _connect(app, world, fake, connected)
    assert _channel(app, connected).reconnect_needed_since is None  # reconnecting clears it
    resolved = alerts_pass(app, rules=["channel_reconnect_needed"])
    assert subjects(resolved, "resolved", "channel_reconnect_needed") == [f"channel:{connected}"]


def test_a_token_without_refresh_is_announced_days_ahead_and_needs_reconnecting_at_expiry(
        app, world, clock, fake, monkeypatch):
    fake.expires_in = 60 * 86400
    channel_id = _channel_of(app, world, "linkedin", monkeypatch, fake, refresh=NO_REFRESH, network="LinkedIn")
    _connect(app, world, fake, channel_id)
    clock.advance(days=52)
    assert alerts_pass(app, rules=["channel_reconnect_needed"])["fired"] == []
    clock.advance(days=2)  # 6 days left
    (fired,) = alerts_pass(app, rules=["channel_reconnect_needed"])["fired"]
    assert "LinkedIn" in fired["figures"]["network"] and fired["figures"]["since"] is None
    with app.app_context():
        assert connections.connection_state(_channel(app, channel_id), clock.now()).state == "expiring"
    assert _refresh(app)["expiring"] == 0 and fake.refresh_requests == []  # the token still works: sends go on
    clock.advance(days=6, minutes=1)
    assert _refresh(app)["reconnect_needed"] == 1
    assert "no refresh" in _channel(app, channel_id).reconnect_reason


@pytest.mark.parametrize("kind, rule", [("threads", THREADS_REFRESH), ("instagram", INSTAGRAM_REFRESH)])
def test_meta_tokens_are_renewed_at_the_networks_own_refresh_endpoint(app, world, clock, fake, monkeypatch, kind, rule):
    fake.expires_in = 60 * 86400
    channel_id = _channel_of(app, world, kind, monkeypatch, fake, refresh=rule, network=kind.title())
    _connect(app, world, fake, channel_id)
    old = _secret(app, channel_id)
    clock.advance(days=52)
    assert _refresh(app)["expiring"] == 0
    clock.advance(days=2)  # 6 days left: within the 7 days ahead
    assert _refresh(app)["refreshed"] == 1
    (request,) = fake.refresh_requests
    assert request == {"grant_type": rule, "access_token": old}
    assert _secret(app, channel_id) != old
    assert _channel(app, channel_id).token_expires_at == clock.now() + timedelta(seconds=5183944)


def test_a_provider_may_exchange_the_codes_short_lived_token_for_a_long_lived_one(
        app, world, clock, fake, monkeypatch):
    fake.expires_in = 3600  # Threads answers the code with a token good for an hour
    channel_id = _channel_of(app, world, "threads", monkeypatch, fake, refresh=THREADS_REFRESH, network="Threads")

    def finish_connect(answer, *, http, client_id, client_secret, config, **endpoints):
        long_lived = http.get(fake.url("/access_token"), params={
            "grant_type": "th_exchange_token", "client_secret": client_secret, "access_token": answer["access_token"]})
        long_lived.raise_for_status()
        return {**long_lived.json(), "user_id": answer.get("user_id")}

    PROVIDERS["threads"].finish_connect = finish_connect
    _connect(app, world, fake, channel_id)
    (exchange,) = fake.exchange_requests
    assert exchange["grant_type"] == "th_exchange_token" and exchange["client_secret"] == CLIENT_SECRET
    assert exchange["access_token"] != _secret(app, channel_id)  # the short-lived one, traded in
    assert _channel(app, channel_id).token_expires_at == clock.now() + timedelta(seconds=5183944)


# -- Meta's networks, through their real providers, against the fake of Meta's Graph API and OAuth -----

META_ACCOUNT = "17841400000000001"
META_ID_KEYS = {"threads": "user_id", "facebook": "page_id", "instagram": "ig_user_id"}


def _meta_channel(app, world, meta: MetaGraph, **config) -> int:
    with app.app_context(), write_session() as session:
        channel = session.scalar(select(Channel).where(Channel.workspace_id == world.workspace_id))
        channel.kind = meta.network
        channel.config = {"url": meta.base, "authorize_url": meta.base + "/oauth/authorize",
                          "token_url": meta.base + "/oauth/access_token", META_ID_KEYS[meta.network]: META_ACCOUNT,
                          "rate": "none", **config}
        channel.set_secret(runtime().secret_box, None)
        return channel.id


@pytest.fixture
def meta_for(httpserver):
    return lambda network: MetaGraph(httpserver, network, account=META_ACCOUNT)


@pytest.mark.parametrize("network, grant, refresh", [("threads", "th_exchange_token", THREADS_REFRESH),
                                                     ("instagram", "ig_exchange_token", INSTAGRAM_REFRESH)])
def test_a_threads_or_instagram_connection_keeps_the_60_day_token_traded_for_the_codes_one_hour_token(
        app, world, clock, meta_for, network, grant, refresh):
    meta = meta_for(network)
    channel_id = _meta_channel(app, world, meta)
    _connect(app, world, meta, channel_id)
    (code,) = meta.oauth("code")
    assert code.form["client_id"] == CLIENT_ID and code.form["client_secret"] == CLIENT_SECRET  # in the form
    assert code.form["grant_type"] == "authorization_code"
    (exchange,) = meta.oauth("exchange")
    assert exchange.method == "GET" and exchange.query["grant_type"] == grant
    assert exchange.query["client_secret"] == CLIENT_SECRET and exchange.query["access_token"] in meta.short_tokens
    kept = _secret(app, channel_id)
    assert kept in meta.long_tokens and kept not in meta.short_tokens
    channel = _channel(app, channel_id)
    assert channel.token_expires_at == clock.now() + timedelta(seconds=5183944)
    assert channel.connected_account["username"] == "acmebakery"
    assert channel.connected_account["avatar"].startswith("data:image/png;base64,")
    (action_id,) = add_actions(app, world.workspace_id, 1, payload={"body": "fresh loaves at nine"} | (
        {"media": []} if network == "threads" else {}))
    if network == "threads":  # Instagram takes no text-only post; Threads posts with the kept token
        tick(app)
        assert _row(app, action_id).status == "published"
    clock.advance(days=54)  # 6 days left: renewed at the network's own endpoint, which renews long-lived tokens only
    assert _refresh(app)["refreshed"] == 1
    (renewal,) = meta.oauth("refresh")
    assert renewal.query == {"grant_type": refresh, "access_token": kept}
    assert _secret(app, channel_id) in meta.long_tokens and _secret(app, channel_id) != kept


def test_a_facebook_connection_keeps_the_pages_own_token_read_with_the_long_lived_user_token(
        app, world, clock, meta_for):
    meta = meta_for("facebook")
    channel_id = _meta_channel(app, world, meta)
    _connect(app, world, meta, channel_id)
    (exchange,) = meta.oauth("exchange")
    assert exchange.query["grant_type"] == "fb_exchange_token" and exchange.query["client_id"] == CLIENT_ID
    assert exchange.query["client_secret"] == CLIENT_SECRET and exchange.query["fb_exchange_token"] in meta.short_tokens
    page = [seen for seen in meta.oauth("profile") if seen.path.endswith(f"/{META_ACCOUNT}")]
    assert len(page) == 1 and "access_token" in page[0].query["fields"]
    assert page[0].headers["Authorization"][7:] in meta.user_tokens  # read with the long-lived user token
    kept = _secret(app, channel_id)
    assert kept in meta.long_tokens and kept not in meta.user_tokens | meta.short_tokens
    channel = _channel(app, channel_id)
    assert channel.token_expires_at is None  # a Page token read with a long-lived user token does not expire
    assert channel.connected_account["name"] == "Acme Bakery"  # /me with the Page's token is the Page
    (action_id,) = add_actions(app, world.workspace_id, 1, payload={"body": "fresh loaves at nine"})
    tick(app)
    assert _row(app, action_id).status == "published"
    (feed,) = meta.of("feed")
    assert feed.headers["Authorization"] == f"Bearer {kept}" and feed.form["message"] == "fresh loaves at nine"


def test_a_facebook_connection_without_a_page_id_names_the_pages_and_stores_nothing(app, world, meta_for):
    meta = meta_for("facebook")
    channel_id = _meta_channel(app, world, meta)
    with app.app_context(), write_session() as session:
        channel = session.get(Channel, channel_id)
        channel.config = {k: v for k, v in channel.config.items() if k != "page_id"}
    with pytest.raises(connections.ConnectionFailed) as refused:
        _connect(app, world, meta, channel_id)
    assert "page_id" in refused.value.message and f"Acme Bakery ({META_ACCOUNT})" in refused.value.message
    assert _channel(app, channel_id).secret_sealed is None


def test_a_long_lived_exchange_meta_refuses_fails_the_connection_with_metas_words_and_stores_nothing(
        app, world, meta_for):
    meta = meta_for("threads")
    meta.client_secret = "another-secret"  # the app's secret was reset at Meta
    channel_id = _meta_channel(app, world, meta)
    with pytest.raises(connections.ConnectionFailed) as refused:
        _connect(app, world, meta, channel_id)
    assert "client secret" in refused.value.message
    assert _channel(app, channel_id).secret_sealed is None and meta.oauth("exchange") == []
