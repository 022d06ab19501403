"""Helpers for the dashboard tests: sign in as a role, read the CSRF token, make rows and runs.

Rows are written through the domain functions, and moved through the lifecycle, never
around them.
"""

import re
from datetime import timedelta

import pytest
from sqlalchemy import select

from models import lifecycle
from models.actions import FailureCode, Origin
from models.channels import Channel
from models.database import write_session
from models.lifecycle import Actor
from models.scheduling import NewAction, insert_action

PASSWORD = "correct horse battery"
HX = {"HX-Request": "true"}
TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')
TICK = Actor.job("tick")


class Browser:
    """A test client signed in as one member, carrying the session's CSRF token."""

    def __init__(self, client, role: str | None, world):
        self.client = client
        self.role = role
        self.world = world
        self.token = None
        if role:
            self.sign_in(f"{role}@acme.test")

    def fresh_token(self) -> str:
        page = self.client.get("/login" if self.role is None else "/queue")
        found = TOKEN.search(page.get_data(as_text=True))
        assert found, page.get_data(as_text=True)[:500]
        self.token = found.group(1)
        return self.token

    def sign_in(self, email: str, password: str = PASSWORD):
        login_page = self.client.get("/login")
        token = TOKEN.search(login_page.get_data(as_text=True)).group(1)
        answer = self.client.post("/login", data={"email": email, "password": password, "csrf_token": token})
        assert answer.status_code == 303, answer.get_data(as_text=True)[:500]
        self.fresh_token()
        return answer

    def get(self, url, *, htmx=False, **kwargs):
        return self.client.get(url, headers=HX if htmx else {}, **kwargs)

    def post(self, url, data=None, *, htmx=False, csrf=True, **kwargs):
        data = dict(data or {})
        headers = dict(HX if htmx else {})
        if csrf and htmx:
            headers["X-CSRFToken"] = self.token
        elif csrf:
            data["csrf_token"] = self.token
        return self.client.post(url, data=data, headers=headers, **kwargs)


@pytest.fixture
def browser_for(app, world):
    """``browser_for("ops")``: a fresh client signed in as that role (None: signed out)."""

    def make(role):
        return Browser(app.test_client(), role, world)

    return make


def channel_of(session, world) -> Channel:
    return session.scalar(select(Channel).where(Channel.workspace_id == world.workspace_id, Channel.name == "main"))


def make_action(app, world, *, minutes=60, payload=None, action_type="send_email", target="a@example.test",
                origin=Origin.PERSON, thing_id=None, created_by=None, publish_at=None):
    """One queued action ``minutes`` from now; returns its id."""
    from webapp.runtime import runtime

    with app.app_context():
        now = runtime().now()
        with write_session() as session:
            row = insert_action(
                session, world.workspace_id,
                NewAction(action_type=action_type, channel=channel_of(session, world), target_key=target,
                          payload=payload if payload is not None else {"body": "hello"},
                          publish_at=publish_at or now + timedelta(minutes=minutes), thing_id=thing_id),
                now=now, actor=Actor(label="user:test", user_id=created_by), origin=origin, reason="created",
            )
            return row.id


def claim_and(app, action_id, outcome: str, *, message="the provider said no", provider_id="prov-1",
              at=None):
    """Move a queued row through a claim to ``published`` or ``failed``, as the tick would."""
    from webapp.runtime import runtime

    with app.app_context():
        now = at or runtime().now()
        with write_session() as session:
            row = session.get(lifecycle.ScheduledAction, action_id)
            claimed = lifecycle.claim(session, action_id, now=max(now, row.publish_at), actor=TICK)
            assert claimed.ok, claimed
            token = claimed.action.claim_token
            when = max(now, row.publish_at)
            if outcome == "published":
                done = lifecycle.publish(session, action_id, claim_token=token, provider_id=provider_id, now=when,
                                         actor=TICK)
            elif outcome == "failed":
                done = lifecycle.fail(session, action_id, claim_token=token, code=FailureCode.PERMANENT,
                                      message=message, now=when, actor=TICK)
            else:
                return claimed.action
            assert done.ok, done
            return done.action
