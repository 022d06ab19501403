"""The iCalendar feed, parsed back with ``icalendar``: its instants across a clock change, its UIDs'
stability, what it never shows, and its address's life (made, replaced, revoked, gone with the member).

The clock stands at 2026-10-20 12:00 UTC, so the feed's window (90 days back, 365 ahead) holds
New York's fall back on Sunday 2026-11-01.
"""

import re
from datetime import date, datetime, timezone

import pytest
from icalendar import Calendar
from sqlalchemy import select

from models.accounts.tables import CalendarFeedToken, Membership
from models.core.database import read_session
from models.timing.clock import FrozenClock
from tests.factories import add_action
from tests.integration.drip_helpers import campaign, contacts, enroll
from tests.integration.recurring_helpers import expand, make_rule
from tests.web.conftest import make_post

BASE_URL = "https://tickwork.example"
NOW = datetime(2026, 10, 20, 12, 0, tzinfo=timezone.utc)
ADDRESS = re.compile(r'id="feed-address"[^>]*value="([^"]+)"')
CHANNEL_SECRET = "whsec-never-in-a-feed-8841"


@pytest.fixture
def clock():
    return FrozenClock(NOW)


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_BASE_URL"] = BASE_URL
    return app_config


@pytest.fixture
def world(app):
    from tests.conftest import make_world

    return make_world(app, channel_kind="webhook", channel_config={"url": "https://hooks.example.test/in"},
                      secret=CHANNEL_SECRET)


def make_address(browser, *, htmx: bool = True) -> str:
    """The feed address the calendar page's panel shows once, after "Make my feed address"
    (without htmx, on a page of its own)."""
    answer = browser.post("/calendar/feed", htmx=htmx)
    assert answer.status_code == 200, answer.get_data(as_text=True)[:500]
    page = answer.get_data(as_text=True)
    assert ("<html" in page) is not htmx and "shown only this once" in page
    return ADDRESS.search(page).group(1)


def fetch(client, address: str):
    assert address.startswith(BASE_URL + "/calendar/feed/") and address.endswith(".ics")
    return client.get(address[len(BASE_URL):])


def events_of(answer) -> dict:
    assert answer.status_code == 200, answer.get_data(as_text=True)[:300]
    assert answer.mimetype == "text/calendar"
    calendar = Calendar.from_ical(answer.data)
    return {str(event["UID"]): event for event in calendar.walk("VEVENT")}


def utc(event) -> datetime:
    return event.decoded("DTSTART").astimezone(timezone.utc)


def test_the_feed_holds_posts_occurrences_actions_and_drip_days_at_the_right_instants(app, world, browser_for,
                                                                                       client):
    before = make_post(app, world, body="Saturday bread\nwith a second line", day="2026-10-31", at="09:00")
    after = make_post(app, world, body="Monday bread", day="2026-11-02", at="09:00")
    twice = make_post(app, world, body="Night owl", day="2026-11-01", at="01:30", approve=False)
    rule = make_rule(client, world, starts_local="2026-10-20T09:00", payload={"title": "Daily digest",
                                                                               "list": "list@example.test"})
    expand(app)  # mints the rule's first days; the rest of the window stays planned
    action = add_action(app, world, publish_at=datetime(2026, 11, 3, 15, 0, tzinfo=timezone.utc),
                        target_key="boss@example.test", action_type="send_reminder",
                        payload={"title": "Quarterly report", "note": "the payload says more"})
    welcome = campaign(app, world.workspace_id, name="Welcome", channel="main")
    enroll(app, world.workspace_id, welcome, contacts(app, world.workspace_id, 3))
    later = campaign(app, world.workspace_id, name="Week two", channel="main",
                     steps=[{"delay": "P2D", "subject": "a", "body": "b"}])
    enroll(app, world.workspace_id, later, contacts(app, world.workspace_id, 2, prefix="other"))

    answer = fetch(client, make_address(browser_for("marketer")))
    text = answer.get_data(as_text=True)
    events = events_of(answer)
    calendar = Calendar.from_ical(answer.data)
    zones = calendar.walk("VTIMEZONE")
    assert [str(z["TZID"]) for z in zones] == ["America/New_York"]

    # Posts at their wall time: EDT before the fall back, EST after, the repeated hour's first 01:30.
    assert utc(events[f"post-{before}@tickwork.example"]) == datetime(2026, 10, 31, 13, 0, tzinfo=timezone.utc)
    assert utc(events[f"post-{after}@tickwork.example"]) == datetime(2026, 11, 2, 14, 0, tzinfo=timezone.utc)
    assert utc(events[f"post-{twice}@tickwork.example"]) == datetime(2026, 11, 1, 5, 30, tzinfo=timezone.utc)
    assert str(events[f"post-{before}@tickwork.example"]["SUMMARY"]) == "[approved] Saturday bread"
    assert str(events[f"post-{twice}@tickwork.example"]["SUMMARY"]) == "[draft] Night owl"
    assert str(events[f"post-{twice}@tickwork.example"]["STATUS"]) == "TENTATIVE"
    assert str(events[f"post-{before}@tickwork.example"]["URL"]) == f"{BASE_URL}/posts/{before}"

    # The rule's occurrences at 09:00 local on both sides of the change, minted or planned, one UID per slot.
    minted = events[f"rule-{rule['id']}-2026-10-21T09:00@tickwork.example"]
    assert str(minted["SUMMARY"]) == f"[queued] rule #{rule['id']}: Daily digest"
    assert utc(minted) == datetime(2026, 10, 21, 13, 0, tzinfo=timezone.utc)
    planned_after = events[f"rule-{rule['id']}-2026-11-05T09:00@tickwork.example"]
    assert str(planned_after["SUMMARY"]) == f"[planned] rule #{rule['id']}: Daily digest"
    assert utc(planned_after) == datetime(2026, 11, 5, 14, 0, tzinfo=timezone.utc)
    assert str(planned_after["URL"]) == f"{BASE_URL}/recurring/{rule['id']}"
    slots = sorted(uid for uid in events if uid.startswith(f"rule-{rule['id']}-"))
    assert len(slots) == len(set(slots)) == (date(2027, 10, 20) - date(2026, 10, 20)).days + 1

    # An ad-hoc action by its title and channel, never its address or the rest of its payload.
    adhoc = events[f"action-{action}@tickwork.example"]
    assert str(adhoc["SUMMARY"]) == "[queued] Quarterly report via main"
    assert utc(adhoc) == datetime(2026, 11, 3, 15, 0, tzinfo=timezone.utc)
    assert str(adhoc["URL"]) == f"{BASE_URL}/actions/{action}"

    # Drip sends: one all-day event per campaign and day, counted.
    today = events[f"campaign-{welcome}-2026-10-20@tickwork.example"]
    assert str(today["SUMMARY"]) == "Welcome: 3 sends [3 queued]"
    assert today.decoded("DTSTART") == date(2026, 10, 20)
    assert str(events[f"campaign-{later}-2026-10-22@tickwork.example"]["SUMMARY"]) == "Week two: 2 sends [2 planned]"

    # Nothing a subscriber should not see: no address, no secret, no payload beyond a title.
    for secret in ("boss@example.test", "list@example.test", "person0@example.com", "other1@example.com",
                   CHANNEL_SECRET, "the payload says more", "hooks.example.test", "with a second line"):
        assert secret not in text, secret
    assert answer.headers["Cache-Control"] == "private, max-age=300"


def test_uids_are_stable_across_fetches_a_move_and_the_expander(app, world, browser_for, client):
    post = make_post(app, world, body="Moving bread", day="2026-11-10", at="09:00")
    rule = make_rule(client, world, starts_local="2026-12-01T08:00", rrule="FREQ=WEEKLY")
    browser = browser_for("marketer")
    address = make_address(browser)
    first = events_of(fetch(client, address))
    assert first.keys() == events_of(fetch(client, address)).keys()
    slot = f"rule-{rule['id']}-2026-12-08T08:00@tickwork.example"
    assert str(first[slot]["SUMMARY"]).startswith("[planned]")

    moved = client.patch(f"/api/v1/posts/{post}", headers=world.auth("marketer"),
                         json={"local_time": "2026-11-12T10:00"})
    assert moved.status_code == 200, moved.json
    app.config["TICKWORK_CLOCK"].set(datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc))
    expand(app)  # the occurrence is minted now: its event keeps its UID
    second = events_of(fetch(client, address))
    uid = f"post-{post}@tickwork.example"
    assert utc(second[uid]) == datetime(2026, 11, 12, 15, 0, tzinfo=timezone.utc)
    assert int(second[uid]["SEQUENCE"]) > int(first[uid]["SEQUENCE"])
    assert str(second[slot]["SUMMARY"]).startswith("[queued]") and utc(second[slot]) == utc(first[slot])


def test_a_wrong_replaced_or_revoked_address_answers_404(app, world, browser_for, client):
    browser = browser_for("marketer")
    first = make_address(browser)
    assert fetch(client, first).status_code == 200
    assert client.get("/calendar/feed/twcal_not-a-token.ics").status_code == 404
    assert client.get("/calendar/feed/" + "x" * 500 + ".ics").status_code == 404
    one_off = first[:-5] + ("A" if first[-5] != "A" else "B") + ".ics"
    assert fetch(client, one_off).status_code == 404

    second = make_address(browser, htmx=False)  # a new address replaces the old one
    assert fetch(client, first).status_code == 404
    assert fetch(client, second).status_code == 200
    page = browser.get("/calendar").get_data(as_text=True)
    assert "You have a feed address, made" in page and second not in page  # shown once, never again

    revoked = browser.post("/calendar/feed/revoke", htmx=True)
    assert revoked.status_code == 200 and "Feed address revoked" in revoked.get_data(as_text=True)
    missing = fetch(client, second)
    assert missing.status_code == 404 and "No calendar feed at this address" in missing.get_data(as_text=True)
    with app.app_context(), read_session() as session:
        stored = list(session.scalars(select(CalendarFeedToken).order_by(CalendarFeedToken.id)))
    assert [t.revoked_why for t in stored] == ["regenerated", "revoked"]
    raw = second.rsplit("/", 1)[1][:-4]
    assert all(raw not in (t.token_hash or "") and len(t.token_hash) == 64 for t in stored)  # only a hash is kept


def test_leaving_the_workspace_revokes_the_feed(app, world, browser_for, client):
    address = make_address(browser_for("ops"))
    other = make_address(browser_for("marketer"))
    with app.app_context(), read_session() as session:
        membership = session.scalar(select(Membership.id).where(Membership.user_id == world.users["ops"]))
    admin = browser_for("admin")
    assert admin.post(f"/members/{membership}/remove").status_code == 303
    assert fetch(client, address).status_code == 404
    assert fetch(client, other).status_code == 200  # another member's feed is not touched
    with app.app_context(), read_session() as session:
        why = session.scalar(select(CalendarFeedToken.revoked_why).where(
            CalendarFeedToken.user_id == world.users["ops"]))
    assert why == "left_workspace"


def test_without_a_base_url_no_address_is_made(app, world, browser_for, client):
    app.config["TICKWORK_BASE_URL"] = None
    browser = browser_for("marketer")
    page = browser.get("/calendar").get_data(as_text=True)
    assert "Calendar feeds need <code>TICKWORK_BASE_URL</code>" in page and "Make my feed address" not in page
    refused = browser.post("/calendar/feed", htmx=True)
    assert refused.status_code == 409 and "need TICKWORK_BASE_URL" in refused.get_data(as_text=True)
    with app.app_context(), read_session() as session:
        assert session.scalar(select(CalendarFeedToken.id)) is None


def test_a_garbage_zone_stored_behind_the_apps_back_answers_409_not_a_crash(app, world, browser_for, client):
    from sqlalchemy import text

    from models.core.database import write_session

    address = make_address(browser_for("marketer"))
    make_post(app, world, body="Before the zone broke", day="2026-10-28", at="09:00")
    with app.app_context(), write_session() as session:
        session.execute(text("UPDATE workspaces SET timezone = 'Not/AZone' WHERE id = :id"), {"id": world.workspace_id})
    answer = fetch(client, address)
    assert answer.status_code == 409 and "time zone is not valid" in answer.get_data(as_text=True)
