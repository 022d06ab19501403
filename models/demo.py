"""A demo workspace: people (a reviewer among them), channels (the social one with posting times), and a few weeks
of actions in every status."""

from datetime import time, timedelta

from sqlalchemy import select

from models.accounts.members import add_member
from models.accounts.workspaces import create_workspace
from models.actions import lifecycle
from models.actions.scheduling import NewAction, insert_action
from models.actions.tables import CancelKind, FailureCode, Origin
from models.channels.operations import save_channel
from models.channels.slots import save_slots
from models.accounts.tables import Role, Workspace
from models.core.database import write_session
from models.core.moves import Actor
from models.drips.operations import activate_campaign, create_campaign, create_contact, enroll
from models.drips.sending import SendingContext
from models.posts.operations import approve_post, create_post
from models.recurring.operations import create_rule
from models.timing.wall_time import to_local
from models.works.context import WorksContext
from models.works.operations import create_work, put_schedule
from models.works.plans import DEFAULT_PLANS_PARSED

DEMO_WORKSPACE = "Demo Bakery"
DEMO_PASSWORD = "tickwork-demo"
DEMO_PEOPLE = [("admin@demo.test", "admin"), ("ops@demo.test", "ops"), ("marketer@demo.test", "marketer"),
               ("reviewer@demo.test", "reviewer")]
DEMO_CHANNELS = [
    ("instagram", "log", "publish_post", {"sends": "publish_post"}),
    ("newsletter", "log", "send_email", {"sends": "send_email"}),
    ("sms-alerts", "log", "send_sms", {"address": "phone"}),  # a log channel that delivers to phones
]
# Posting times on the social channels, so "Add to queue" and "Share next" have slots to take: three a day,
# as the queue tools marketers know start with, and a later one at the weekend.
DEMO_SLOTS = {
    "instagram": [{"days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"], "time": "09:00"},
                  {"days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"], "time": "13:00"},
                  {"days": ["mon", "tue", "wed", "thu", "fri"], "time": "17:00"},
                  {"days": ["sat", "sun"], "time": "18:30"}],
}
DEMO_CONTACTS = [
    ("Ana Pereira", "+15555550111"), ("Ben Okafor", "+15555550112"), ("Chloé Martin", "+15555550113"),
    ("Dev Raman", "+15555550114"), ("Eli Cohen", "+15555550115"), ("Fatima Zahra", "+15555550116"),
    ("Gus Lindqvist", "+15555550117"), ("Hana Sato", "+15555550118"),
]
_BODIES = [
    "Fresh sourdough is out of the oven 🍞",
    "Weekend special: cardamom buns, two for one",
    "We are closed on Monday for a staff day",
    "New: rye and caraway loaf, every Thursday",
    "Last call for holiday pre-orders",
]


def _sign_in_lines() -> str:
    people = "\n".join(f"  {email:<22} {role}" for email, role in DEMO_PEOPLE)
    return f"Sign in with any of these, password {DEMO_PASSWORD!r}:\n{people}"


def load_demo(runtime) -> str:
    """Create the demo workspace and return the login lines to print; when it is already there,
    change nothing and print the sign-in again (a second ``scripts/run.sh`` is not an error)."""
    now = runtime.now()
    with write_session() as session:
        if session.scalar(select(Workspace.id).where(Workspace.name == DEMO_WORKSPACE)) is not None:
            return f"Demo workspace {DEMO_WORKSPACE!r} is already loaded.\n{_sign_in_lines()}"
        workspace = create_workspace(session, name=DEMO_WORKSPACE, zone="America/New_York", plan="pro", now=now)
        for email, role in DEMO_PEOPLE:
            add_member(session, workspace.id, email=email, role=role, password=DEMO_PASSWORD, now=now)
        channels = [
            (save_channel(session, workspace.id, name=name, kind=kind, config=config, box=runtime.secret_box,
                          now=now, actor=Actor(label="user:admin@demo.test")), action_type)
            for name, kind, action_type, config in DEMO_CHANNELS
        ]
        for name, slots in DEMO_SLOTS.items():
            save_slots(session, workspace.id, name, slots)
        _demo_actions(session, workspace.id, channels, now)
        _demo_posts(session, workspace.id, runtime.policy, now)
        _demo_due_soon(session, workspace.id, channels, now)
        _demo_rules(session, workspace.id, runtime.policy, now)
        _demo_drip(session, workspace.id, runtime, now)
        _demo_works(session, workspace.id, runtime, now)
    return f"Demo workspace {DEMO_WORKSPACE!r} is ready.\n{_sign_in_lines()}"


_REFUSALS = {
    "send_sms": "refused for good (400): +15555550100 is not a mobile number",
    "send_email": "refused for good (422): the recipient's mailbox does not exist",
    "publish_post": "refused for good (401): the access token was revoked; reconnect the channel",
}
_POST_IDEAS = [
    ("Sourdough Saturday: loaves out at 8, gone by 11", ["instagram"], "approved"),
    ("Our winter menu lands next week: spiced rye, chestnut tart, hot chocolate", ["instagram", "newsletter"],
     "approved"),
    ("Pre-order your holiday stollen by Friday", ["newsletter", "sms-alerts"], "approved"),
    ("Behind the counter: meet Ana, our new pastry chef", ["instagram"], "draft"),
]


def _demo_due_soon(session, workspace_id, channels, now):
    """A few reminders due in the next minutes, so the first thing a newcomer sees is the clock firing."""
    channel, _ = channels[2]
    person = Actor(label="user:ops@demo.test")
    for minute in range(1, 7):
        new = NewAction(action_type="reminder", channel=channel, target_key=f"+1555555010{minute}",
                        payload={"body": f"Your order is ready for pickup (reminder {minute})"},
                        publish_at=now + timedelta(minutes=minute), thing_id=f"pickup-{minute}")
        insert_action(session, workspace_id, new, now=now, actor=person, origin=Origin.PERSON, reason="created")


def _demo_rules(session, workspace_id, policy, now):
    """Two recurring rules: the Tuesday newsletter, and an SMS on the last Friday of every month."""
    marketer = Actor(label="user:marketer@demo.test")
    today = to_local(now, "America/New_York").date()
    for fields in (
        {"action_type": "send_email", "channel": "newsletter", "target_key": "subscribers@demo.test",
         "payload": {"subject": "This week at the bakery ({{ occurrence.local_date }})",
                     "body": "Fresh this week: rye on Wednesday, croissants all weekend. See you soon!"},
         "rrule": "FREQ=WEEKLY;BYDAY=TU", "starts_local": f"{today.isoformat()}T09:00", "misfire": "skip"},
        {"action_type": "send_sms", "channel": "sms-alerts", "target_key": "+15555550199",
         "payload": {"body": "Month-end bake sale tonight from 17:30"},
         "rrule": "FREQ=MONTHLY;BYDAY=-1FR", "starts_local": f"{today.isoformat()}T16:00", "misfire": "fire_once"},
    ):
        create_rule(session, workspace_id, fields, actor=marketer, now=now, policy=policy)


def _demo_drip(session, workspace_id, runtime, now):
    """An SMS welcome series, active, with eight contacts enrolled: its first step goes out within the minute."""
    marketer = Actor(label="user:marketer@demo.test")
    campaign = create_campaign(session, workspace_id, name="Loyalty welcome", channel="sms-alerts", steps=[
        {"delay": "PT0S", "body": "Welcome to the Demo Bakery loyalty club, {{ contact.first_name }}! "
                                  "Your first coffee is on us."},
        {"delay": "P2D", "body": "{{ contact.first_name }}, our sourdough comes out at 8 every Saturday."},
        {"delay": "P7D", "body": "A week with us: show this text for 10% off any cake, {{ contact.first_name }}."},
    ], actor=marketer, now=now)
    activate_campaign(session, workspace_id, campaign.id, base_url=None, actor=marketer, now=now)
    context = SendingContext(secret_box=runtime.secret_box, base_url=None, policy=runtime.policy, actor=marketer)
    for name, phone in DEMO_CONTACTS:
        contact = create_contact(session, workspace_id, name=name, phone=phone, actor=marketer, now=now)
        enroll(session, workspace_id, campaign.id, contact.id, actor=marketer, now=now, ctx=context)


def _demo_works(session, workspace_id, runtime, now):
    """Two works regenerated on a cadence by the built-in ``log`` pipeline, one of them failing."""
    ops = Actor(label="user:ops@demo.test")
    context = WorksContext(clock=runtime.clock, policy=runtime.policy, plans=DEFAULT_PLANS_PARSED,
                           secret_box=runtime.secret_box)
    for name, settings, cadence in (
        ("Menu board refresh", {"seconds": 2}, "every_8_hours"),
        ("Supplier price sync", {"fail": "the supplier's price list answered 503"}, "daily"),
    ):
        work = create_work(session, workspace_id, name=name, pipeline="log", settings=settings, actor=ops,
                           role=Role.OPS, now=now, context=context).work
        put_schedule(session, workspace_id, work.id, cadence=cadence, actor=ops, role=Role.OPS, now=now,
                     context=context)


def _demo_posts(session, workspace_id, policy, now):
    """Posts over the next three weeks, most approved (the reconciler queues them), a few drafts."""
    marketer = Actor(label="user:marketer@demo.test")
    today = to_local(now, "America/New_York").date()
    for day in range(1, 22):
        body, targets, status = _POST_IDEAS[day % len(_POST_IDEAS)]
        at = time(8 + (day * 5) % 11, (day * 15) % 60)
        change = create_post(session, workspace_id, body=body, targets=targets, wall_date=today + timedelta(days=day),
                             wall_time=at, actor=marketer, now=now, policy=policy)
        if status == "approved":
            approve_post(session, workspace_id, change.post.id, actor=marketer, now=now, policy=policy)


def _demo_actions(session, workspace_id, channels, now):
    """Three weeks back and three weeks ahead, every status represented, each with its history."""
    person = Actor(label="user:admin@demo.test")
    tick = Actor.job("tick")
    start = now.replace(minute=0, second=0, microsecond=0) - timedelta(days=21)
    index = 0
    for day in range(42):
        for slot, (channel, action_type) in enumerate(channels):
            index += 1
            publish_at = start + timedelta(days=day, hours=9 + slot * 3)
            payload = {"body": _BODIES[index % len(_BODIES)]}
            if action_type == "send_sms":
                payload = {"to": "+15555550100", "body": _BODIES[index % len(_BODIES)][:140]}
            created = min(publish_at - timedelta(days=2), now - timedelta(minutes=5))
            new = NewAction(action_type=action_type, channel=channel, target_key=channel.name, payload=payload,
                            publish_at=publish_at, thing_id=f"demo-{index}")
            row = insert_action(session, workspace_id, new, now=created, actor=person, origin=Origin.PERSON,
                                reason="created")
            if publish_at > now:
                if index % 11 == 0:
                    lifecycle.cancel(session, row.id, kind=CancelKind.PERSON, now=now - timedelta(minutes=3),
                                     workspace_id=workspace_id,
                                     actor=person, reason="cancelled by admin@demo.test")
                continue
            claimed = lifecycle.claim(session, row.id, now=publish_at, actor=tick)
            token = claimed.row.claim_token
            if index % 9 == 0:
                lifecycle.fail(session, row.id, claim_token=token, code=FailureCode.PERMANENT,
                               message=_REFUSALS[action_type], now=publish_at + timedelta(seconds=2), actor=tick)
            elif index % 13 == 0:
                lifecycle.fail(session, row.id, claim_token=token, code=FailureCode.OUTCOME_UNKNOWN,
                               message="outcome unknown: the provider timed out after the request was sent",
                               now=publish_at + timedelta(seconds=30), actor=tick)
            else:
                lifecycle.publish(session, row.id, claim_token=token, provider_id=f"log-{row.id}",
                                  now=publish_at + timedelta(seconds=1), actor=tick)
