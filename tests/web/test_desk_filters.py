"""The queue and the calendar narrowed by channel, author and review state, with links that keep the filters."""

from models.channels.tables import Channel
from models.core.database import write_session
from models.core.runtime import runtime
from tests.web.conftest import make_action, make_post


def _other_channel(app, world):
    with app.app_context(), write_session() as session:
        session.add(Channel(workspace_id=world.workspace_id, name="other", kind="log", config={},
                            created_at=runtime().now()))


def test_the_queue_shows_only_the_rows_of_posts_by_the_chosen_author_or_in_the_chosen_review_state(
        app, world, browser_for):
    make_post(app, world, body="Marketer bread", day="2026-06-10")
    make_post(app, world, body="Admin cakes", role="admin", day="2026-06-11")
    make_action(app, world, minutes=30, payload={"body": "A row of no post"})
    ops = browser_for("ops")
    everything = ops.get("/queue").get_data(as_text=True)
    assert "Marketer bread" in everything and "Admin cakes" in everything and "A row of no post" in everything
    mine = ops.get(f"/queue?author={world.users['marketer']}", htmx=True).get_data(as_text=True)
    assert "Marketer bread" in mine and "Admin cakes" not in mine and "A row of no post" not in mine
    approved = ops.get("/queue?review=approved").get_data(as_text=True)
    assert "Marketer bread" in approved and "Admin cakes" in approved and "A row of no post" not in approved
    assert "Marketer bread" not in ops.get("/queue?review=draft").get_data(as_text=True)
    for bad in ("author=nobody", "author=424242", "review=lost"):
        answer = ops.get(f"/queue?{bad}")
        assert answer.status_code == 200 and 'role="alert"' in answer.get_data(as_text=True), bad
        assert "Marketer bread" in answer.get_data(as_text=True), "a bad filter is dropped, not applied"
    bulk = ops.get(f"/queue/bulk-cancel?author={world.users['admin']}").get_data(as_text=True)
    assert '<strong id="bulk-count">1</strong>' in bulk


def test_the_calendar_narrows_rows_and_drafts_by_channel_author_and_review_state_and_keeps_them_in_its_links(
        app, world, browser_for):
    _other_channel(app, world)
    make_post(app, world, body="Approved on main", day="2026-06-10", at="09:00")
    make_post(app, world, body="Draft on other", day="2026-06-10", at="11:00", approve=False, targets=("other",))
    make_post(app, world, body="Admin draft", day="2026-06-12", at="08:00", approve=False, role="admin")
    marketer = browser_for("marketer")

    def shown(query):
        page = marketer.get(f"/calendar?date=2026-06-10{query}", htmx=True).get_data(as_text=True)
        return {label for label in ("Approved on main", "Draft on other", "Admin draft") if label in page}, page

    assert shown("")[0] == {"Approved on main", "Draft on other", "Admin draft"}
    assert shown("&channel=other")[0] == {"Draft on other"}
    assert shown(f"&author={world.users['admin']}")[0] == {"Admin draft"}
    assert shown("&review=draft")[0] == {"Draft on other", "Admin draft"}
    assert shown("&review=approved")[0] == {"Approved on main"}
    labels, page = shown("&review=draft&channel=main")
    assert labels == {"Admin draft"}
    assert "review=draft&amp;channel=main" in page or "channel=main&amp;review=draft" in page  # navigation keeps them
    answer = marketer.get("/calendar?channel=nope&review=gone&author=x")
    assert answer.status_code == 200 and 'role="alert"' in answer.get_data(as_text=True)
