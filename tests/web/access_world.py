"""A workspace holding one object of every id kind a route takes, for the access matrix and the walker.

Objects are made the way people make them: rows and posts through the domain functions,
everything the wings own through the API with the workspace's own tokens. ``ids`` maps
each path parameter name found in the url map to an id of this workspace.
"""

import io
from dataclasses import dataclass, field

from sqlalchemy import text

from models.accounts.members import add_member
from models.core.database import db, read_session, write_session
from models.core.runtime import runtime
from tests.media_files import png_bytes
from tests.web.conftest import claim_and, make_action, make_post, rows_of_post

BASE_URL = "https://tickwork.example"
STEPS = [{"delay": "PT0S", "subject": "Hi {{ contact.first_name }}", "body": "Hello"},
         {"delay": "P2D", "subject": "Again", "body": "More"}]


@dataclass
class Furnished:
    """A world and the ids of everything in it, by the name routes give them."""

    world: object
    ids: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)


def _created(answer, what: str) -> dict:
    assert answer.status_code in (200, 201), (what, answer.status_code, answer.get_data(as_text=True)[:500])
    return answer.json


def furnish(app, world, tag: str = "a") -> Furnished:
    """One of everything in ``world``'s workspace; ``tag`` keeps names apart when called twice."""
    client = app.test_client()
    marketer, ops = world.auth("marketer"), world.auth("ops")
    queued = make_action(app, world, minutes=60, target=f"queued-{tag}@example.test")
    failed = make_action(app, world, minutes=-5, target=f"failed-{tag}@example.test")
    claim_and(app, failed, "failed", message="mailbox unavailable (550)")
    post = make_post(app, world, body=f"Fresh bread {tag}", approve=False)
    link_id = _review_link_then_approve(app, world, post)
    rule = _created(client.post("/api/v1/recurring", headers=marketer, json={
        "action_type": "send_email", "channel": "main", "target_key": f"list-{tag}@example.test",
        "payload": {"subject": "Digest"}, "rrule": "FREQ=DAILY", "starts_local": "2026-06-02T09:00"}), "rule")
    contact = _created(client.post("/api/v1/contacts", headers=marketer,
                                   json={"email": f"ann-{tag}@example.com", "name": "Ann"}), "contact")
    campaign = _created(client.post("/api/v1/campaigns", headers=marketer,
                                    json={"name": f"Welcome {tag}", "channel": "main", "steps": STEPS}), "campaign")
    _created(client.post(f"/api/v1/campaigns/{campaign['id']}/activate", headers=marketer), "activate")
    enrollment = _created(client.post(f"/api/v1/campaigns/{campaign['id']}/enrollments", headers=marketer,
                                      json={"contact_id": contact["id"]}), "enrollment")
    dry = _created(client.post(f"/api/v1/campaigns/{campaign['id']}/enrollments.csv?dry_run=1", headers=marketer,
                               data=f"email,name\nbob-{tag}@example.com,Bob\n".encode(), content_type="text/csv"),
                   "import")
    work = _created(client.post("/api/v1/works", headers=ops, json={"name": f"Digest {tag}", "pipeline": "log"}),
                    "work")
    _created(client.put(f"/api/works/{work['id']}/schedule", headers=ops, json={"cadence": "daily"}), "schedule")
    media = _created(client.post("/api/v1/media", headers=marketer, content_type="multipart/form-data",
                                 data={"file": (io.BytesIO(png_bytes()), f"{tag}.png")}), "media")
    with app.app_context():
        with write_session() as session:
            spare = add_member(session, world.workspace_id, email=f"spare-{tag}-{world.workspace_id}@example.test",
                               role="marketer", password="spare password 1", now=runtime().now())
            spare_id = spare.id
            from models.accounts.tables import User, Workspace
            from models.accounts.tokens import issue_token, list_tokens

            issue_token(session, session.get(User, world.users["admin"]), session.get(Workspace, world.workspace_id),
                        runtime().now(), name=f"spare {tag}")
            spare_token = list_tokens(session, world.workspace_id, user_id=world.users["admin"])[0].id
            from models.accounts.invitations import invite

            invitation_id = invite(session, world.workspace_id, email=f"invitee-{tag}-{world.workspace_id}@example.test",
                                   role="ops", password=None, invited_by=world.users["admin"], now=runtime().now()).id
        with read_session() as session:
            channel_id = session.scalar(text("SELECT id FROM channels WHERE workspace_id = :w AND name = 'main'"),
                                        {"w": world.workspace_id})
        with write_session() as session:  # a channel named for this tag: another workspace's name is not found
            from models.channels.tables import Channel

            session.add(Channel(workspace_id=world.workspace_id, name=f"slots-{tag}", kind="log", config={},
                                created_at=runtime().now()))
        with write_session() as session:
            alert_id, destination_id = _alert_and_destination(session, world, tag)
    ids = {"action_id": queued, "post_id": post, "channel_id": channel_id, "channel_name": f"slots-{tag}", "membership_id": spare_id,
           "contact_id": contact["id"], "campaign_id": campaign["id"], "enrollment_id": enrollment["id"],
           "rule_id": rule["id"], "work_id": work["id"], "import_id": dry["import_id"], "alert_id": alert_id,
           "destination_id": destination_id, "media_id": media["id"], "token_id": spare_token,
           "invitation_id": invitation_id, "link_id": link_id}
    # Every token of the world used once: under the frozen clock their last-used times stay as they are after this.
    for role in world.tokens:
        _created(client.get("/api/v1/tokens", headers=world.auth(role)), "tokens")
    return Furnished(world=world, ids=ids, extra={"failed": failed, "post_row": rows_of_post(app, world, post)[0].id})


def _review_link_then_approve(app, world, post_id: int) -> int:
    """A review link made by the admin on the draft, which is then approved (the link stays, spent by the change)."""
    from models.accounts.tables import Role, User
    from models.core.moves import Actor
    from models.posts.operations import approve_post
    from models.posts.review_links import make_link

    with app.app_context():
        rt = runtime()
        with write_session() as session:
            admin = Actor.person(session.get(User, world.users["admin"]))
            link = make_link(session, world.workspace_id, post_id, reviewer_name="Dana", actor=admin, role=Role.ADMIN,
                             now=rt.now()).link
            marketer = Actor.person(session.get(User, world.users["marketer"]))
            approve_post(session, world.workspace_id, post_id, actor=marketer, now=rt.now(), policy=rt.policy)
            return link.id


def _alert_and_destination(session, world, tag: str) -> tuple[int, int]:
    """A firing alert of the workspace's and one alert destination, through the alerts domain."""
    from models.alerts import lifecycle
    from models.alerts.operations import add_destination
    from models.alerts.tables import workspace_scope

    now = runtime().now()
    alert = lifecycle.fire(session, scope=workspace_scope(world.workspace_id), workspace_id=world.workspace_id,
                           rule="channel_failures", subject=f"channel:{tag}", figures={"failed": 11}, now=now).row
    destination = add_destination(session, world.workspace_id, channel="main", recipient=f"alerts-{tag}", now=now)
    return alert.id, destination.id


def snapshot(app) -> dict:
    """Every row of every table, in key order: two snapshots differ exactly when something was written."""
    with app.app_context(), db.engine.connect() as conn:
        tables = {}
        for table in db.metadata.sorted_tables:
            order = list(table.primary_key.columns) or list(table.columns)
            tables[table.name] = conn.execute(table.select().order_by(*order)).all()
        return tables


def changed_tables(before: dict, after: dict) -> list[str]:
    return sorted(name for name in before if before[name] != after.get(name))
