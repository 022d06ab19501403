"""Moving posts on the calendar in real Chromium: drag with the mouse (month day, week slot), the
preview before the drop, Undo, refusals in place, and the keyboard's Move to…"""

import pytest
from playwright.sync_api import expect

from models.actions.tables import Origin
from models.core.database import write_session
from models.core.moves import Actor
from tests.web.conftest import make_action, make_post

pytestmark = pytest.mark.browser


def shot(page, screens, name):
    page.screenshot(path=str(screens / f"{name}.png"))


def chip_of(page, post_id, day):
    return page.locator(f'td[data-date="{day}"] [data-move-post="{post_id}"], '
                        f'td[data-slot-date="{day}"] [data-move-post="{post_id}"]').first


def drag_slowly(page, source, target, *, target_y=None):
    """Press on ``source``, move over ``target`` (as a person would), and return before letting go."""
    box = source.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    goal = target.bounding_box()
    y = goal["y"] + (target_y if target_y is not None else goal["height"] / 2)
    page.mouse.move(goal["x"] + goal["width"] / 2, y, steps=4)
    page.mouse.move(goal["x"] + goal["width"] / 2 + 2, y, steps=2)


def test_dragging_a_post_to_another_day_shows_where_it_lands_moves_it_and_undo_moves_it_back(open_as, live, screens):
    post = make_post(live.app, live.world, body="Drag me to the fifteenth", day="2026-07-08", at="09:00")
    page = open_as("marketer")
    page.goto("/calendar?date=2026-07-01")
    drag_slowly(page, chip_of(page, post, "2026-07-08"), page.locator('td[data-date="2026-07-15"]'))
    # Before it lands: the new local time, asked of the server.
    expect(page.locator("#drop-preview")).to_contain_text("Lands on Wed 15 Jul 2026, 09:00 EDT")
    shot(page, screens, "calendar-dragging")
    page.mouse.up()
    notice = page.locator("#calendar-notice")
    expect(notice).to_contain_text("1 target moved to Wed 15 Jul 2026, 09:00 EDT.")
    expect(page.locator('td[data-date="2026-07-15"]')).to_contain_text("Drag me to the fifteenth")
    expect(page.locator('td[data-date="2026-07-08"]')).not_to_contain_text("Drag me to the fifteenth")
    expect(page.locator("#drop-preview")).to_be_hidden()
    shot(page, screens, "calendar-moved-undo")
    notice.get_by_role("button", name=f"Undo: move post #{post} back to 2026-07-08 09:00").click()
    expect(notice).to_contain_text("1 target moved back to Wed 08 Jul 2026, 09:00 EDT.")
    expect(page.locator('td[data-date="2026-07-08"]')).to_contain_text("Drag me to the fifteenth")
    expect(notice.get_by_role("button", name="Undo")).to_have_count(0)


def test_dragging_into_a_week_slot_picks_that_time(open_as, live, screens):
    post = make_post(live.app, live.world, body="Afternoon slot", day="2026-07-09", at="09:00")
    page = open_as("ops")
    page.goto("/calendar?view=week&date=2026-07-06")
    slot = page.locator('td.slot[data-slot-date="2026-07-10"][data-drop-time="14:00"]')
    drag_slowly(page, chip_of(page, post, "2026-07-09"), slot, target_y=3)  # the top quarter: 14:00
    expect(page.locator("#drop-preview")).to_contain_text("Lands on Fri 10 Jul 2026, 14:00 EDT")
    page.mouse.up()
    expect(page.locator("#calendar-notice")).to_contain_text("1 target moved to Fri 10 Jul 2026, 14:00 EDT.")
    expect(slot).to_contain_text("Afternoon slot")
    shot(page, screens, "calendar-week-moved")


def test_a_refused_drop_stays_in_place_and_says_why(open_as, live):
    from models.core.runtime import runtime
    from models.posts.operations import archive_post

    post = make_post(live.app, live.world, body="Archived already", day="2026-07-21", at="09:00")
    with live.app.app_context(), write_session() as session:
        rt = runtime()
        archive_post(session, live.world.workspace_id, post, actor=Actor(label="user:test"), now=rt.now(),
                     policy=rt.policy)
    recurring = make_action(live.app, live.world, minutes=(20 * 24 + 1) * 60, origin=Origin.RECURRING,
                            thing_id="rule:9:2026-06-21T09:00", target="rule@example.test")
    page = open_as("marketer")
    page.goto("/calendar?date=2026-07-01&cancelled=1")
    # An archived post's cancelled chip can be dragged; the drop is refused and nothing moves.
    chip_of(page, post, "2026-07-21").drag_to(page.locator('td[data-date="2026-07-23"]'))
    notice = page.locator("#calendar-notice [role=alert]")
    expect(notice).to_contain_text(f"Post #{post} is archived; it can no longer be moved.")
    expect(page.locator('td[data-date="2026-07-21"]')).to_contain_text("Archived already")
    expect(page.locator('td[data-date="2026-07-23"]')).not_to_contain_text("Archived already")
    # A recurring occurrence is not draggable: it says to edit the rule.
    page.goto("/calendar?date=2026-06-01")
    page.locator(f'a[href="/actions/{recurring}"]').first.drag_to(page.locator('td[data-date="2026-06-25"]'))
    expect(page.locator("#calendar-notice")).to_contain_text("A recurring occurrence: edit the rule to move it.")


def test_move_to_does_with_the_keyboard_what_a_drag_does(open_as, live, screens):
    post = make_post(live.app, live.world, body="Keyboard move", day="2026-07-14", at="09:00")
    page = open_as("marketer")
    page.clock.install()
    page.goto("/calendar?date=2026-07-01")
    control = page.get_by_role("link", name=f"Move to… post #{post}, 09:00 Keyboard move").first
    control.focus()
    page.keyboard.press("Enter")
    date_field = page.get_by_label("New date")
    expect(date_field).to_be_focused()
    date_field.fill("2027-03-14")
    page.get_by_label("Time (America/New_York)").fill("02:30")
    page.get_by_label("Time (America/New_York)").dispatch_event("change")
    # The same preview as a drag: the wall time does not exist that night, and it says so.
    expect(page.locator("#move-preview")).to_contain_text("does not exist on 2027-03-14")
    shot(page, screens, "calendar-move-to")
    page.get_by_label("Time (America/New_York)").press("Enter")
    notice = page.locator("#calendar-notice .message")
    expect(notice).to_contain_text("1 target moved to Sun 14 Mar 2027, 03:30 EDT.")
    expect(notice).to_be_focused()  # read out at once
    expect(notice.get_by_role("button", name="Undo")).to_be_visible()
    page.clock.run_for(11_000)  # Undo is offered for a few seconds only
    expect(notice.get_by_role("button", name="Undo")).to_have_count(0)
