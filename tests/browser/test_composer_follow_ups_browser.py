"""A thread and a first comment in real Chromium: the fields appear when a target that takes them is checked, items
are added and removed in the page, each is counted and previewed under its network's post as it is typed, the save
keeps them, and editing the post shows them again."""

import re

import pytest
from playwright.sync_api import expect
from sqlalchemy import select

from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.core.runtime import runtime
from models.posts.tables import Post

pytestmark = pytest.mark.browser

RUN_WCAG = """async () => (await axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a',
  'wcag21aa']}, resultTypes: ['violations']})).violations.map(v => v.id + ': ' + v.help + ' ' +
  v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', '))"""


def _item(page, number: int):
    """Item ``number``'s text (the post is item 1), not its media field or its Remove button."""
    return page.get_by_role("textbox", name=re.compile(rf"^Item {number} "))


@pytest.fixture(scope="module")
def networks(live):
    with live.app.app_context(), write_session() as session:
        now = runtime().now()
        session.add(Channel(workspace_id=live.world.workspace_id, name="thread-x", kind="x", config={},
                            created_at=now))
        session.add(Channel(workspace_id=live.world.workspace_id, name="thread-in", kind="linkedin", config={},
                            created_at=now))
    return ["thread-x", "thread-in"]


def test_a_thread_and_a_first_comment_are_typed_previewed_saved_and_edited(open_as, live, networks, screens):
    page = open_as("marketer")
    page.goto("/posts/new?date=2026-06-22")
    page.get_by_label("Post", exact=True).fill("Fresh bread at nine")
    expect(page.get_by_role("group", name="Thread")).to_have_count(0)
    page.locator('input[name=targets][value="thread-x"]').check()
    thread = page.get_by_role("group", name="Thread")
    expect(thread).to_be_visible()
    expect(page.get_by_role("group", name="First comment")).to_have_count(0)

    thread.get_by_role("button", name="Add an item").click()
    expect(_item(page, 2)).to_be_focused()
    _item(page, 2).fill("Rye at ten, ask @baker")
    thread.get_by_role("button", name="Add an item").click()
    _item(page, 3).fill("y" * 290)
    x_preview = page.locator('.preview[data-channel="thread-x"]')
    expect(x_preview.locator('.preview-follow-up[data-item="2"]')).to_contain_text("Rye at ten, ask @baker")
    expect(x_preview.locator('.preview-follow-up[data-item="2"] .mention')).to_have_text("@baker")
    expect(x_preview.locator('.preview-follow-up[data-item="3"]')).to_contain_text("290 / 280 weighted characters")
    expect(page.locator('#follow-up-counters [data-item="3"]')).to_contain_text("Refused")

    thread.get_by_role("button", name="Remove item 3").click()
    expect(_item(page, 3)).to_have_count(0)
    expect(x_preview.locator('.preview-follow-up[data-item="3"]')).to_have_count(0)
    expect(page.locator('#follow-up-counters [data-item="3"]')).to_have_count(0)
    thread.get_by_role("button", name="Add an item").click()
    _item(page, 3).fill("Buns at noon")

    page.locator('input[name=targets][value="thread-in"]').check()
    comment = page.get_by_role("textbox", name=re.compile("^First comment"))
    expect(comment).to_be_visible()
    expect(_item(page, 2)).to_have_value("Rye at ten, ask @baker")  # kept across the re-render
    comment.fill("Order at https://bakery.example/order")
    in_preview = page.locator('.preview[data-channel="thread-in"]')
    expect(in_preview.locator('.preview-follow-up[data-item="comment"]')).to_contain_text("37 / 1,250 characters")
    expect(in_preview.locator(".preview-follow-up.reply")).to_have_count(0)  # LinkedIn has no replies
    page.screenshot(path=str(screens / "composer-thread.png"), full_page=True)

    page.get_by_role("button", name="Save as draft").click()
    expect(page.get_by_role("heading", name="Post #")).to_be_visible()
    with live.app.app_context(), read_session() as session:
        post = session.scalar(select(Post).where(Post.body == "Fresh bread at nine", Post.thread.is_not(None))
                              .order_by(Post.id.desc()))
    assert post.thread == [{"body": "Rye at ten, ask @baker", "media": []}, {"body": "Buns at noon", "media": []}]
    assert post.first_comment == {"body": "Order at https://bakery.example/order", "media": []}
    expect(_item(page, 2)).to_have_value("Rye at ten, ask @baker")
    expect(_item(page, 3)).to_have_value("Buns at noon")
    expect(page.get_by_role("textbox", name=re.compile("^First comment"))).to_have_value(
        "Order at https://bakery.example/order")


def test_a_refused_thread_is_marked_on_its_field_and_keeps_what_was_typed(open_as, live, networks):
    page = open_as("marketer")
    page.goto("/posts/new?date=2026-06-23")
    page.get_by_label("Post", exact=True).fill("Bread for the log too")
    page.locator('input[name=targets][value="thread-x"]').check()
    page.get_by_role("group", name="Thread").get_by_role("button", name="Add an item").click()
    _item(page, 2).fill("Rye at ten")
    page.locator('input[name=targets][value="main"]').check()
    expect(_item(page, 2)).to_have_value("Rye at ten")
    page.get_by_role("button", name="Save as draft").click()
    expect(page.locator("#thread-error")).to_contain_text("main (log) has neither replies nor comments")
    expect(page.get_by_role("group", name="Thread")).to_have_attribute("aria-invalid", "true")
    expect(_item(page, 2)).to_have_value("Rye at ten")


def test_the_composer_with_a_thread_a_comment_and_a_refusal_has_no_wcag_violations(open_as, live, networks,
                                                                                    axe_source):
    from tests.browser.test_accessibility import audit, with_axe

    page = with_axe(open_as("marketer", bypass_csp=True), axe_source)
    page.goto("/posts/new?date=2026-06-24")
    page.get_by_label("Post", exact=True).fill("Bread for the audit")
    page.locator('input[name=targets][value="thread-x"]').check()
    page.locator('input[name=targets][value="thread-in"]').check()
    page.locator('input[name=targets][value="main"]').check()
    expect(page.get_by_role("group", name="First comment")).to_be_visible()
    page.wait_for_load_state("networkidle")  # every target's redraw has landed: a later one would redraw the item away
    page.get_by_role("group", name="Thread").get_by_role("button", name="Add an item").click()
    _item(page, 2).fill("Rye at ten")
    page.get_by_role("button", name="Save as draft").click()
    expect(page.locator("#thread-error")).to_be_visible()  # main (log) takes neither: the refusal on the field
    violations = page.evaluate(RUN_WCAG)
    assert violations == [], violations
    page.locator('input[name=targets][value="main"]').uncheck()
    expect(page.get_by_role("textbox", name=re.compile("^First comment"))).to_be_visible()
    page.get_by_role("button", name="Save as draft").click()
    expect(page.get_by_role("heading", name="Post #")).to_be_visible()
    assert audit(page, page.url, "marketer") == []


def test_an_item_added_and_typed_while_a_redraw_is_on_its_way_is_kept_when_it_lands(open_as, live, networks):
    page = open_as("marketer")
    page.goto("/posts/new?date=2026-06-25")
    page.get_by_label("Post", exact=True).fill("Bread on its way")
    page.locator('input[name=targets][value="thread-x"]').check()
    thread = page.get_by_role("group", name="Thread")
    expect(thread).to_be_visible()
    thread.get_by_role("button", name="Add an item").click()
    _item(page, 2).fill("Rye at ten")
    page.wait_for_load_state("networkidle")
    held, holding = [], [True]
    page.route(re.compile(r"/posts/follow-ups\?"), lambda route: held.append(route) if holding[0] else route.continue_())
    page.locator('input[name=targets][value="thread-in"]').check()  # its redraw leaves with item 2 only
    page.wait_for_timeout(200)
    assert held, "the redraw was not asked for"
    thread.get_by_role("button", name="Add an item").click()
    _item(page, 3).fill("Spelt at noon")
    _item(page, 2).fill("Rye at ten, and more")
    holding[0] = False
    for route in held:
        route.continue_()
    # The redraw has landed (the first comment is LinkedIn's) and nothing typed meanwhile is lost.
    expect(page.get_by_role("group", name="First comment")).to_be_visible()
    expect(_item(page, 3)).to_have_value("Spelt at noon")
    expect(_item(page, 2)).to_have_value("Rye at ten, and more")
    expect(_item(page, 2)).to_be_focused()  # where the typing was
    expect(_item(page, 3)).to_have_count(1)
    expect(page.get_by_role("button", name="Remove item 3")).to_be_visible()
    page.get_by_role("button", name="Save as draft").click()
    expect(page.get_by_role("heading", name="Post #")).to_be_visible()
    with live.app.app_context(), read_session() as session:
        post = session.scalars(select(Post).where(Post.body == "Bread on its way")).one()
        assert [item["body"] for item in post.thread] == ["Rye at ten, and more", "Spelt at noon"]
