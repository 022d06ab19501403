"""What a calendar feed costs: built once per version of the workspace's schedule, a 304 for a
client that has it (ETag or Last-Modified), one build for four fetches at once, a rate limit per
feed address, and a bounded window (90 days back, a year ahead).
"""

import threading
from datetime import datetime, timedelta, timezone

import pytest
from icalendar import Calendar

from models.overview.feed import AHEAD_DAYS, PAST_DAYS
from models.timing.clock import FrozenClock
from tests.factories import add_action
from tests.web.conftest import make_post
from tests.web.test_calendar_feed import BASE_URL, fetch, make_address

NOW = datetime(2026, 10, 20, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def clock():
    return FrozenClock(NOW)


@pytest.fixture
def app_config(app_config):
    app_config["TICKWORK_BASE_URL"] = BASE_URL
    app_config["TICKWORK_FEED_RATE_LIMIT"] = "1000 per minute"
    return app_config


def builds(app) -> int:
    return app.extensions["tickwork_feed_cache"].builds


def test_a_fetch_with_the_etag_or_last_modified_gets_a_304_and_no_build(app, world, browser_for, client):
    make_post(app, world, body="Bread", day="2026-10-22", at="09:00")
    address = make_address(browser_for("marketer"))
    first = fetch(client, address)
    assert first.status_code == 200 and first.headers["ETag"] and first.headers["Last-Modified"]
    path = address[len(BASE_URL):]
    by_etag = client.get(path, headers={"If-None-Match": first.headers["ETag"]})
    assert by_etag.status_code == 304 and by_etag.data == b"" and by_etag.headers["ETag"] == first.headers["ETag"]
    by_date = client.get(path, headers={"If-Modified-Since": first.headers["Last-Modified"]})
    assert by_date.status_code == 304
    stale = client.get(path, headers={"If-None-Match": '"not-this-one"'})
    assert stale.status_code == 200 and stale.data == first.data
    assert builds(app) == 1


def test_the_feed_is_kept_until_the_workspaces_schedule_changes(app, world, browser_for, client):
    post = make_post(app, world, body="Bread", day="2026-10-22", at="09:00")
    address = make_address(browser_for("marketer"))
    first = fetch(client, address)
    assert fetch(client, address).data == first.data and builds(app) == 1
    # A post moved: a new version, built again, and a client holding the old ETag gets the new feed.
    moved = client.patch(f"/api/v1/posts/{post}", headers=world.auth("marketer"), json={"local_time": "2026-10-23T10:00"})
    assert moved.status_code == 200, moved.json
    second = client.get(address[len(BASE_URL):], headers={"If-None-Match": first.headers["ETag"]})
    assert second.status_code == 200 and second.headers["ETag"] != first.headers["ETag"] and builds(app) == 2
    # A row's status change (a person cancels an action) is a change too.
    action = add_action(app, world, publish_at=NOW + timedelta(days=3), action_type="send_reminder")
    third = fetch(client, address)
    assert third.headers["ETag"] != second.headers["ETag"]
    assert client.post(f"/api/v1/actions/{action}/cancel", headers=world.auth("ops")).status_code == 200
    fourth = fetch(client, address)
    assert fourth.headers["ETag"] != third.headers["ETag"] and builds(app) == 4
    # The next local day moves the window: a new version, though nothing was written.
    app.config["TICKWORK_CLOCK"].set(NOW + timedelta(days=1))
    assert fetch(client, address).headers["ETag"] != fourth.headers["ETag"]


def test_four_fetches_at_once_build_the_feed_once(app, world, browser_for):
    for day in range(1, 40):
        make_post(app, world, body=f"Post {day}", day=(NOW + timedelta(days=day)).date().isoformat(), at="09:00")
    address = make_address(browser_for("marketer"))
    answers = []

    def one():
        answers.append(fetch(app.test_client(), address))

    threads = [threading.Thread(target=one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert [a.status_code for a in answers] == [200] * 4
    assert len({a.data for a in answers}) == 1 and builds(app) == 1


def test_each_feed_address_has_its_own_rate_limit(app, world, browser_for, client):
    app.config["TICKWORK_FEED_RATE_LIMIT"] = "3 per minute"
    mine = make_address(browser_for("marketer"))
    theirs = make_address(browser_for("ops"))
    first = fetch(client, mine)
    assert client.get(mine[len(BASE_URL):], headers={"If-None-Match": first.headers["ETag"]}).status_code == 304
    assert fetch(client, mine).status_code == 200
    refused = fetch(client, mine)
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
    assert fetch(client, theirs).status_code == 200  # another address has its own allowance


def test_the_window_is_90_days_back_and_a_year_ahead(app, world, browser_for, client):
    assert (PAST_DAYS, AHEAD_DAYS) == (90, 365)
    today = NOW.date()
    app.config["TICKWORK_CLOCK"].set(NOW - timedelta(days=PAST_DAYS + 10))  # posts are written ahead of their time
    inside = {make_post(app, world, body=f"In {n}", day=(today + timedelta(days=n)).isoformat(), at="12:00",
                          approve=False)
              for n in (-PAST_DAYS, -1, 0, AHEAD_DAYS)}
    outside = {make_post(app, world, body=f"Out {n}", day=(today + timedelta(days=n)).isoformat(), at="12:00",
                          approve=False)
               for n in (-PAST_DAYS - 1, AHEAD_DAYS + 1)}
    app.config["TICKWORK_CLOCK"].set(NOW)
    answer = fetch(client, make_address(browser_for("marketer")))
    uids = {str(event["UID"]) for event in Calendar.from_ical(answer.data).walk("VEVENT")}
    assert {f"post-{p}@tickwork.example" for p in inside} <= uids
    assert not {f"post-{p}@tickwork.example" for p in outside} & uids
