"""The marketer's desk end to end in real Chromium: a post tailored for two networks in the composer, with each
network's preview, added to the queue, submitted for review, and approved by an outside reviewer through a review
link opened in a second browser context with a zone of its own."""

import re
from datetime import date, datetime, time, timezone

import pytest
from playwright.sync_api import expect
from sqlalchemy import select

from models.accounts.tables import Workspace
from models.accounts.workspaces import set_review_settings
from models.channels.slots import save_slots
from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.core.moves import Actor
from models.core.runtime import runtime
from models.posts.operations import archive_post
from models.posts.reading import post_rows
from models.posts.tables import Post, PostTarget
from tests.web.conftest import make_post

pytestmark = pytest.mark.browser

X, SKY = "desk-x", "desk-sky"
# Tuesday and Wednesday 09:00 are posting times of both channels; Tuesday 17:00 is X's alone, Wednesday 12:00
# Bluesky's alone, so a post to both sits only at 09:00.
SLOTS = {X: [{"days": ["tue", "wed"], "time": "09:00"}, {"days": ["tue"], "time": "17:00"}],
         SKY: [{"days": ["tue", "wed"], "time": "09:00"}, {"days": ["wed"], "time": "12:00"}]}
# 288 characters: within Bluesky's 300 graphemes, past X's 280, so X needs a text of its own.
MAIN = ("Our orchard opens for the harvest this Saturday from nine: twelve kinds of apples to pick, fresh cider "
        "pressed at noon, a hayride for the little ones and the bakery tent with warm apple cake. Bring a basket or "
        "borrow one of ours at the gate, and tell a neighbour. See you among the trees!")
FOR_X = "Orchard harvest this Saturday from nine: 12 apple kinds, cider at noon #harvest"


@pytest.fixture
def desk(live):
    """Two channels of different networks with posting times, review required, and review links on; all put back
    afterwards (slots cleared, the posts on these channels archived, review and the base address as they were)."""
    workspace_id = live.world.workspace_id
    with live.app.app_context(), write_session() as session:
        now = runtime().now()
        existing = set(session.scalars(select(Channel.name).where(Channel.workspace_id == workspace_id,
                                                                  Channel.name.in_((X, SKY)))))
        if X not in existing:
            session.add(Channel(workspace_id=workspace_id, name=X, kind="x", config={}, created_at=now,
                                connected_account={"id": "11", "name": "Acme Orchard", "username": "acmeorchard"}))
        if SKY not in existing:
            session.add(Channel(workspace_id=workspace_id, name=SKY, kind="bluesky", created_at=now,
                                config={"url": "https://bsky.example", "handle": "orchard.bsky.social"}))
        session.flush()
        for name, slots in SLOTS.items():
            save_slots(session, workspace_id, name, slots)
        review_before = session.get(Workspace, workspace_id).review
        set_review_settings(session, workspace_id, review="required")
    base_before = live.app.config.get("TICKWORK_BASE_URL")
    live.app.config["TICKWORK_BASE_URL"] = live.url
    yield
    live.app.config["TICKWORK_BASE_URL"] = base_before
    with live.app.app_context():
        rt = runtime()
        with write_session() as session:
            set_review_settings(session, workspace_id, review=review_before)
            for name in SLOTS:
                save_slots(session, workspace_id, name, [])
            channel_ids = select(Channel.id).where(Channel.workspace_id == workspace_id, Channel.name.in_(SLOTS))
            posts = set(session.scalars(select(PostTarget.post_id).where(PostTarget.channel_id.in_(channel_ids))))
            for post_id in sorted(posts):
                archive_post(session, workspace_id, post_id, actor=Actor(label="user:test"), now=rt.now(),
                             policy=rt.policy)


def test_a_post_tailored_for_two_networks_is_queued_submitted_and_approved_through_a_review_link(
        open_as, live, chromium, screens, desk):
    # Tuesday 09:00 is already held on Bluesky by a post timed by hand: it is not free on every target.
    make_post(live.app, live.world, body="The farm shop is open late on Tuesday", day="2026-06-02", at="09:00",
              approve=False, targets=(SKY,))

    marketer = open_as("marketer")
    marketer.goto("/posts/new")
    expect(marketer.get_by_role("button", name="Save and approve")).to_have_count(0)  # review is required
    marketer.get_by_label("Post", exact=True).fill(MAIN)
    marketer.locator(f'input[name=targets][value="{X}"]').check()
    expect(marketer.get_by_role("tab", name=X)).to_be_visible()
    marketer.locator(f'input[name=targets][value="{SKY}"]').check()
    expect(marketer.get_by_role("tab", name=SKY)).to_be_visible()

    x_preview = marketer.locator(f'.preview[data-channel="{X}"]')
    sky_preview = marketer.locator(f'.preview[data-channel="{SKY}"]')
    expect(x_preview).to_contain_text("Acme Orchard")
    expect(x_preview).to_contain_text("288 / 280 weighted characters")
    expect(x_preview).to_contain_text("Refused")  # the main text is too long for X
    expect(sky_preview).to_contain_text("@orchard.bsky.social")
    expect(sky_preview).to_contain_text("288 / 300 graphemes")

    marketer.get_by_role("tab", name=X).click()
    marketer.get_by_label(f"Text for {X}").fill(FOR_X)
    expect(x_preview.locator(".preview-text")).to_have_text(FOR_X)
    expect(x_preview.locator(".tag")).to_have_text("#harvest")
    expect(x_preview).to_contain_text("79 / 280 weighted characters")
    expect(x_preview).to_contain_text("tailored")
    expect(x_preview).not_to_contain_text("Refused")
    expect(sky_preview.locator(".preview-text")).to_have_text(MAIN)  # Bluesky keeps the main text and its count
    expect(sky_preview).to_contain_text("288 / 300 graphemes")
    expect(sky_preview).not_to_contain_text("tailored")

    marketer.get_by_label("Add to queue").check()
    expect(marketer.locator("#queue-preview")).to_contain_text("Takes the posting slot Wednesday 03 June 2026, 09:00 EDT")
    marketer.screenshot(path=str(screens / "desk-flow-composer.png"), full_page=True)
    marketer.get_by_role("button", name="Save as draft").click()
    expect(marketer.locator(".message").first).to_contain_text("is draft")
    heading = marketer.get_by_role("heading", name="Post #").inner_text()
    post_id = int(re.search(r"Post #(\d+)", heading).group(1))
    expect(marketer.locator("#date")).to_have_value("2026-06-03")
    expect(marketer.locator("#time")).to_have_value("09:00")
    expect(marketer.locator(".preview")).to_have_count(2)
    with live.app.app_context(), read_session() as session:
        post = session.get(Post, post_id)
        assert (post.wall_date, post.wall_time, post.from_queue) == (date(2026, 6, 3), time(9, 0), True)
        assert post.body == MAIN and post.variants == {X: {"body": FOR_X}}

    marketer.get_by_role("button", name="Submit for review").click()
    expect(marketer.locator("h1 .chip")).to_have_text("in_review")
    expect(marketer.get_by_role("button", name="Approve")).to_have_count(0)  # an author never approves their own

    admin = open_as("admin")
    admin.goto(f"/posts/{post_id}")
    admin.get_by_label("Outside reviewer's name").fill("Sam at the Farm Co-op")
    admin.get_by_role("button", name="Make a review link").click()
    url = re.search(r"(https?://\S+/review/\S+)",
                    admin.get_by_text("Review link for Sam at the Farm Co-op").inner_text()).group(1)

    outside = chromium.new_context(timezone_id="Europe/Paris", viewport={"width": 1000, "height": 900})
    try:
        page = outside.new_page()
        page.goto(url)
        expect(page.get_by_role("heading", name="Review a post for Acme")).to_be_visible()
        expect(page.locator("article.network-preview")).to_have_count(2)
        expect(page.locator(f'article.network-preview[data-channel="{X}"] .post-body')).to_have_text(FOR_X)
        expect(page.locator(f'article.network-preview[data-channel="{SKY}"] .post-body')).to_have_text(MAIN)
        # The queue's slot, 09:00 in New York, is 15:00 in Paris: the time is shown in the reader's own zone.
        expect(page.locator("#review-time")).to_have_attribute("datetime", "2026-06-03T13:00:00Z")
        expect(page.locator("#review-time")).to_contain_text(re.compile(r"Wednesday.*03.*2026.*15:00"))
        expect(page.locator("#review-time")).to_contain_text("Europe/Paris")
        page.screenshot(path=str(screens / "desk-flow-review-link.png"), full_page=True)
        page.get_by_label("Comment").fill("Both look right, go ahead")
        page.get_by_role("button", name="Approve").click()
        expect(page.get_by_role("heading", name="Approved. Thank you.")).to_be_visible()
    finally:
        outside.close()

    with live.app.app_context(), read_session() as session:
        assert session.get(Post, post_id).status == "approved"
        rows = post_rows(session, live.world.workspace_id, [post_id])[post_id]
    assert {row.target_key: (row.status, row.publish_at.replace(tzinfo=timezone.utc), row.payload["body"])
            for row in rows} == {
        X: ("queued", datetime(2026, 6, 3, 13, 0, tzinfo=timezone.utc), FOR_X),
        SKY: ("queued", datetime(2026, 6, 3, 13, 0, tzinfo=timezone.utc), MAIN)}
    marketer.goto(f"/posts/{post_id}")
    expect(marketer.locator("h1 .chip")).to_have_text("approved")
    expect(marketer.locator("#review")).to_contain_text("outside:Sam at the Farm Co-op")
