"""Tailoring one post for two networks in real Chromium: a tab per target, each network's preview updated live as
its own text is typed (its counter, its links and mentions as it shows them), and the variants saved."""

import pytest
from playwright.sync_api import expect
from sqlalchemy import select

from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.core.runtime import runtime
from models.posts.tables import Post

pytestmark = pytest.mark.browser

AVATAR = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJ"
          "RU5ErkJggg==")


@pytest.fixture(scope="module")
def networks(live):
    with live.app.app_context(), write_session() as session:
        now = runtime().now()
        session.add(Channel(workspace_id=live.world.workspace_id, name="bakery-x", kind="x", config={},
                            connected_account={"id": "7", "name": "Acme Bakery", "username": "acmebakery",
                                               "avatar": AVATAR}, created_at=now))
        session.add(Channel(workspace_id=live.world.workspace_id, name="bakery-sky", kind="bluesky",
                            config={"url": "https://bsky.example", "handle": "acme.bsky.social"}, created_at=now))
    return ["bakery-x", "bakery-sky"]


def test_a_post_tailored_for_two_networks_shows_both_previews_and_saves_both_variants(open_as, live, networks,
                                                                                       screens):
    page = open_as("marketer")
    page.goto("/posts/new?date=2026-06-20")
    page.get_by_label("Post", exact=True).fill("Fresh bread at nine, come early")
    page.locator('input[name=targets][value="bakery-x"]').check()
    expect(page.get_by_role("tab", name="bakery-x")).to_be_visible()
    page.locator('input[name=targets][value="bakery-sky"]').check()
    expect(page.get_by_role("tab", name="bakery-sky")).to_be_visible()

    x_preview = page.locator('.preview[data-channel="bakery-x"]')
    sky_preview = page.locator('.preview[data-channel="bakery-sky"]')
    expect(x_preview).to_contain_text("Fresh bread at nine, come early")
    expect(x_preview).to_contain_text("Acme Bakery")
    expect(x_preview.locator("img.avatar")).to_have_attribute("src", AVATAR)
    expect(sky_preview).to_contain_text("@acme.bsky.social")

    page.get_by_role("tab", name="bakery-x").click()
    page.get_by_label("Text for bakery-x").fill("Bread at 9 https://bakery.example/today/sourdough-country #sourdough")
    expect(x_preview.locator("a")).to_have_text("bakery.example/today/so…")
    expect(x_preview.locator(".tag")).to_have_text("#sourdough")
    expect(x_preview).to_contain_text("45 / 280 weighted characters")
    expect(x_preview).to_contain_text("tailored")

    page.get_by_role("tab", name="bakery-sky").click()
    expect(page.get_by_label("Text for bakery-x")).to_be_hidden()
    page.get_by_label("Text for bakery-sky").fill("Fresh bread at nine, ask @baker.bsky.social " + "x" * 300)
    expect(sky_preview.locator(".mention")).to_have_text("@baker.bsky.social")
    expect(sky_preview).to_contain_text("344 / 300 graphemes")
    expect(sky_preview).to_contain_text("Refused")
    expect(x_preview).to_contain_text("45 / 280")  # the other network keeps its own text and count
    page.screenshot(path=str(screens / "composer-variants.png"), full_page=True)

    page.get_by_label("Text for bakery-sky").fill("Fresh bread at nine, ask @baker.bsky.social")
    expect(sky_preview).to_contain_text("43 / 300 graphemes")
    expect(sky_preview).not_to_contain_text("Refused")
    page.get_by_role("button", name="Save as draft").click()
    expect(page.get_by_role("heading", name="Post #")).to_be_visible()
    expect(page.locator(".preview")).to_have_count(2)
    with live.app.app_context(), read_session() as session:
        post = session.scalar(select(Post).where(Post.body == "Fresh bread at nine, come early"))
    assert post.variants == {
        "bakery-x": {"body": "Bread at 9 https://bakery.example/today/sourdough-country #sourdough"},
        "bakery-sky": {"body": "Fresh bread at nine, ask @baker.bsky.social"}}


def test_typing_while_a_preview_refresh_is_on_its_way_still_refreshes_the_preview(open_as, live, networks):
    """The refresh in flight lands between the next keystroke and its own refresh: the keystroke is not lost."""
    page = open_as("marketer")
    page.goto("/posts/new?date=2026-06-21")
    page.locator('input[name=targets][value="bakery-sky"]').check()
    sky_preview = page.locator('.preview[data-channel="bakery-sky"]')
    expect(sky_preview).to_be_visible()

    held = []
    page.route("**/posts/previews*", lambda route: route.continue_() if held else held.append(route))
    page.get_by_label("Post", exact=True).fill("First words")
    page.wait_for_timeout(800)  # the first refresh's delay has passed; its request is held here
    assert len(held) == 1
    page.get_by_label("Post", exact=True).fill("Second words, typed while the first refresh was on its way")
    held[0].continue_()  # the first answer lands before the second keystroke's own refresh is due

    expect(sky_preview).to_contain_text("Second words, typed while the first refresh was on its way")
