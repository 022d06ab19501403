"""The outbox page: what the log channels sent, newest first, per channel, to every member of the workspace."""

import re

from tests.conftest import make_world
from tests.integration.clock_helpers import add_actions, make_channel, tick
from tests.web.conftest import make_action

ROLES = ("marketer", "ops", "admin")


def text(answer) -> str:
    return answer.get_data(as_text=True)


def targets_in_order(html: str) -> list[str]:
    return re.findall(r"</strong> → (\S+)", html)


def send(app, world, clock, targets):
    """Actions due now on the world's log channel, sent by an inline tick; the clock moves on a minute after."""
    for target in targets:
        make_action(app, world, target=target, payload={"body": f"hello {target}"}, publish_at=clock.now())
    assert tick(app)["outcomes"] == {"published": len(targets)}
    clock.advance(minutes=1)


def test_every_member_sees_what_the_log_channels_sent_newest_first_as_escaped_text(app, world, clock, browser_for):
    make_action(app, world, target="first@example.test", payload={"body": "<script>alert(1)</script>"},
                publish_at=clock.now())
    tick(app)
    clock.advance(minutes=1)
    send(app, world, clock, ["second@example.test", "third@example.test"])
    for role in ROLES:
        browser = browser_for(role)
        page = browser.get("/outbox")
        assert page.status_code == 200 and "<html" in text(page)
        assert targets_in_order(text(page)) == ["third@example.test", "second@example.test", "first@example.test"]
        assert "hello second@example.test" in text(page) and 'href="/actions/' in text(page)
        fragment = browser.get("/outbox", htmx=True)
        assert fragment.status_code == 200 and "<html" not in text(fragment)
        assert targets_in_order(text(fragment)) == targets_in_order(text(page))
    assert "<script>alert(1)</script>" not in text(page) and "&lt;script&gt;alert(1)&lt;/script&gt;" in text(page)
    assert 'href="/outbox"' in text(browser_for("marketer").get("/calendar"))
    signed_out = browser_for(None)
    assert signed_out.get("/outbox").status_code == 302 and signed_out.get("/outbox", htmx=True).status_code == 401


def test_one_channel_at_a_time_and_a_channel_that_is_not_there_is_a_404(app, world, clock, browser_for):
    make_channel(app, "log", name="alerts")
    make_channel(app, "webhook", {"url": "http://127.0.0.1:9/hook"}, name="hook")
    send(app, world, clock, ["main@example.test"])
    add_actions(app, world.workspace_id, 1, channel="alerts")
    tick(app)
    browser = browser_for("marketer")
    assert targets_in_order(text(browser.get("/outbox"))) == ["target-0", "main@example.test"]
    alerts = browser.get("/outbox?channel=alerts")
    assert targets_in_order(text(alerts)) == ["target-0"]
    assert re.search(r'aria-current="page"[^>]*>alerts</a>', text(alerts))
    assert targets_in_order(text(browser.get("/outbox?channel=main", htmx=True))) == ["main@example.test"]
    assert "its sends go to its provider" in text(browser.get("/outbox?channel=hook"))
    missing = browser.get("/outbox?channel=nope")
    assert missing.status_code == 404 and "no channel by that name" in text(missing)
    refused = browser.get("/outbox?channel=nope", htmx=True)
    assert refused.status_code == 404 and refused.headers["HX-Retarget"] == "#messages"
    forged = browser.get("/outbox?cursor=!!!")
    assert forged.status_code == 422 and "cursor" in text(forged)


def test_an_empty_outbox_says_how_to_fill_it_and_another_workspace_sees_none_of_ours(app, world, clock, browser_for):
    browser = browser_for("ops")
    assert "Nothing has gone out through a log channel yet" in text(browser.get("/outbox"))
    send(app, world, clock, ["ours@example.test"])
    other = make_world(app, name="Globex")
    from tests.web.conftest import Browser

    theirs = Browser(app.test_client(), None, other)
    theirs.sign_in("ops@globex.test")
    page = text(theirs.get("/outbox"))
    assert "ours@example.test" not in page and "Nothing has gone out" in page


def test_pages_of_fifty_continue_strictly_before_the_last_entry(app, world, clock, browser_for):
    add_actions(app, world.workspace_id, 53, thing_prefix="bulk")
    tick(app)
    browser = browser_for("marketer")
    first = text(browser.get("/outbox"))
    assert len(targets_in_order(first)) == 50
    more = re.search(r'href="(/outbox\?cursor=[^"]+)"', first).group(1)
    rest = text(browser.get(more.replace("&amp;", "&"), htmx=True))
    assert len(targets_in_order(rest)) == 3 and "End of the outbox" in rest
    assert set(targets_in_order(first)) | set(targets_in_order(rest)) == {f"target-{n}" for n in range(53)}
