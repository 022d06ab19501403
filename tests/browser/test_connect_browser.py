"""Connecting an account in real Chromium: an admin presses Connect on an X channel, approves at the loopback
authorization server, comes back through /oauth/callback/x, and the channel's page shows the account."""

import re

import pytest
from playwright.sync_api import expect

from models.channels import connections
from models.channels.tables import Channel
from models.core.database import write_session
from models.core.runtime import runtime
from tests.fakes.oauth import CLIENT_ID, CLIENT_SECRET, FakeAuthorizationServer

pytestmark = pytest.mark.browser


def test_an_admin_presses_connect_approves_at_the_network_and_sees_the_connected_account(
        open_as, live, httpserver, monkeypatch, screens):
    fake = FakeAuthorizationServer(httpserver)
    for name, value in zip(connections.setting_names("x"), (CLIENT_ID, CLIENT_SECRET)):
        monkeypatch.setitem(live.app.config, name, value)
    monkeypatch.setitem(live.app.config, "TICKWORK_BASE_URL", live.url)  # the network sends the browser back here
    with live.app.app_context(), write_session() as session:
        channel = Channel(workspace_id=live.world.workspace_id, name="acme-x", kind="x", created_at=runtime().now(),
                          config={"url": fake.url("/").rstrip("/"), "authorize_url": fake.url("/i/oauth2/authorize"),
                                  "token_url": fake.url("/2/oauth2/token"), "rate": "none"})
        session.add(channel)
        session.flush()
        channel_id = channel.id
    page = open_as("admin")
    page.goto(f"/channels/{channel_id}")
    expect(page.locator("#connection")).to_contain_text("Not connected")
    page.get_by_role("button", name="Connect").click()
    expect(page.get_by_role("heading", name="Authorize Tickwork to use your account?")).to_be_visible()
    assert page.url.startswith(fake.url("/i/oauth2/authorize") + "?")
    page.get_by_role("button", name="Authorize app").click()
    expect(page).to_have_url(re.compile(rf"/channels/{channel_id}$"))
    expect(page.locator("#account-name")).to_have_text("Acme Bakery")
    expect(page.locator("#connection")).to_contain_text("@acmebakery")
    expect(page.locator("body")).to_contain_text("Connected as acmebakery")
    expect(page.get_by_role("button", name="Reconnect")).to_be_visible()
    (exchange,) = fake.token_requests
    assert exchange["grant_type"] == "authorization_code" and exchange["redirect_uri"] == f"{live.url}/oauth/callback/x"
    page.screenshot(path=str(screens / "channel-connected.png"), full_page=True)
