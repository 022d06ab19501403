"""The queue in real Chromium: a post added to the queue from the composer, with the slot it takes shown
before saving, and a post dropped on one of the calendar's free posting times."""

import pytest
from playwright.sync_api import expect
from sqlalchemy import select

from models.channels.slots import save_slots
from models.channels.tables import Channel
from models.core.database import write_session
from models.core.runtime import runtime
from tests.web.conftest import make_post

pytestmark = pytest.mark.browser


def _posting_times(live, name, slots):
    with live.app.app_context(), write_session() as session:
        if session.scalar(select(Channel).where(Channel.workspace_id == live.world.workspace_id,
                                                Channel.name == name)) is None:
            session.add(Channel(workspace_id=live.world.workspace_id, name=name, kind="log", config={},
                                created_at=runtime().now()))
            session.flush()
        save_slots(session, live.world.workspace_id, name, slots)


@pytest.fixture
def queue_channel(live):
    """A channel with one posting time a week, cleared afterwards so other pages show no free slots."""
    _posting_times(live, "queued", [{"days": ["wed"], "time": "10:00"}])
    yield "queued"
    _posting_times(live, "queued", [])
    from models.core.moves import Actor
    from models.posts.operations import archive_post
    from models.posts.tables import PostTarget

    with live.app.app_context(), write_session() as session:  # the pages other tests look at stay as they were
        channel_id = session.scalar(select(Channel.id).where(Channel.workspace_id == live.world.workspace_id,
                                                             Channel.name == "queued"))
        for post_id in session.scalars(select(PostTarget.post_id).where(PostTarget.channel_id == channel_id)):
            archive_post(session, live.world.workspace_id, post_id, actor=Actor(label="user:test"),
                         now=runtime().now(), policy=runtime().policy)


def test_add_to_queue_shows_the_slot_then_takes_it(open_as, live, screens, queue_channel):
    page = open_as("marketer")
    page.goto("/posts/new")
    page.get_by_label("Post", exact=True).fill("Into the queue")
    page.locator(f'input[name="targets"][value="{queue_channel}"]').check()
    page.get_by_label("Add to queue").check()
    expect(page.locator("#queue-preview")).to_contain_text("Takes the posting slot Wednesday 03 June 2026, 10:00 EDT")
    page.get_by_label("Share next").check()
    expect(page.locator("#queue-preview")).to_contain_text("nothing moves")
    page.get_by_label("Add to queue").check()
    page.screenshot(path=str(screens / "composer-add-to-queue.png"))
    page.get_by_role("button", name="Save as draft").click()
    expect(page.locator(".message").first).to_contain_text("is draft")
    expect(page.locator("#date")).to_have_value("2026-06-03")
    expect(page.locator("#time")).to_have_value("10:00")


def test_a_post_dropped_on_a_free_posting_time_lands_on_it(open_as, live, queue_channel):
    post = make_post(live.app, live.world, body="Drop me on a slot", day="2026-06-08", at="09:00",
                     targets=(queue_channel,))
    page = open_as("marketer")
    page.goto("/calendar?date=2026-06-01")
    free = page.locator('.free-slot[data-drop-date="2026-06-17"][data-drop-slot="10:00"]')
    expect(free).to_contain_text("10:00 free")
    page.locator(f'td[data-date="2026-06-08"] [data-move-post="{post}"]').first.drag_to(free)
    expect(page.locator("#calendar-notice")).to_contain_text("moved to Wed 17 Jun 2026, 10:00 EDT")
    expect(page.locator('.free-slot[data-drop-date="2026-06-17"][data-drop-slot="10:00"]')).to_have_count(0)
