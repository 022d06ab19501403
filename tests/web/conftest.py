"""Helpers for the dashboard tests: sign in as a role, read the CSRF token, make rows and runs.

Rows are written through the domain functions, and moved through the lifecycle, never
around them.
"""

import re
from datetime import timedelta

import pytest
from sqlalchemy import select

from models.actions import lifecycle
from models.actions.tables import FailureCode, Origin
from models.channels.tables import Channel
from models.core.database import write_session
from models.core.moves import Actor
from models.actions.scheduling import NewAction, insert_action

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
        self.role = self.role or email.split("@")[0]  # signed in: tokens now come from a dashboard page
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
    from models.core.runtime import runtime

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
    from models.core.runtime import runtime

    with app.app_context():
        now = at or runtime().now()
        with write_session() as session:
            row = session.get(lifecycle.ScheduledAction, action_id)
            claimed = lifecycle.claim(session, action_id, now=max(now, row.publish_at), actor=TICK)
            assert claimed.ok, claimed
            token = claimed.row.claim_token
            when = max(now, row.publish_at)
            if outcome == "published":
                done = lifecycle.publish(session, action_id, claim_token=token, provider_id=provider_id, now=when,
                                         actor=TICK)
            elif outcome == "failed":
                done = lifecycle.fail(session, action_id, claim_token=token, code=FailureCode.PERMANENT,
                                      message=message, now=when, actor=TICK)
            else:
                return claimed.row
            assert done.ok, done
            return done.row


def make_post(app, world, *, body="Fresh bread at nine", day="2026-06-10", at="09:00", approve=True,
              targets=("main",), role="marketer"):
    """A post written and (by default) approved through the domain functions; returns its id."""
    from datetime import date, time

    from models.accounts.tables import User
    from models.posts.operations import approve_post, create_post
    from models.core.runtime import runtime

    with app.app_context():
        rt = runtime()
        with write_session() as session:
            actor = Actor.person(session.get(User, world.users[role]))
            change = create_post(session, world.workspace_id, body=body, targets=list(targets),
                                 wall_date=date.fromisoformat(day), wall_time=time.fromisoformat(at), media=[],
                                 actor=actor, now=rt.now(), policy=rt.policy)
            if approve:
                approve_post(session, world.workspace_id, change.post.id, actor=actor, now=rt.now(),
                             policy=rt.policy)
            return change.post.id


def rows_of_post(app, world, post_id):
    from models.posts.reading import post_rows

    with app.app_context():
        from models.core.database import read_session

        with read_session() as session:
            return post_rows(session, world.workspace_id, [post_id])[post_id]


@pytest.fixture
def acme(app, world):
    """The world plus one row in each interesting state, and an approved post."""
    queued = make_action(app, world, minutes=60, target="queued@example.test")
    failed = make_action(app, world, minutes=-5, target="failed@example.test")
    claim_and(app, failed, "failed", message="mailbox unavailable (550)")
    published = make_action(app, world, minutes=-4, target="sent@example.test")
    claim_and(app, published, "published", provider_id="prov-42")
    post = make_post(app, world)
    post_row = rows_of_post(app, world, post)[0].id
    return type("Acme", (), dict(world=world, queued=queued, failed=failed, published=published, post=post,
                                 post_row=post_row, channel_id=_channel_id(app, world)))


def _channel_id(app, world):
    with app.app_context():
        from models.core.database import read_session

        with read_session() as session:
            return channel_of(session, world).id
