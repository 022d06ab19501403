"""The composer's tabs per network: a variant typed in a target's tab is saved as that target's, counted and previewed
as its network counts and shows it, and a refusal opens the tab it is about."""

import re

from sqlalchemy import select

from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.core.runtime import runtime
from models.posts.tables import Post
from tests.web.conftest import HX

AVATAR = "data:image/png;base64,iVBORw0KGgo="


def _channels(app, world):
    with app.app_context(), write_session() as session:
        session.add(Channel(workspace_id=world.workspace_id, name="chirps", kind="x", config={},
                            connected_account={"id": "1", "name": "Acme Bakery", "username": "acmebakery",
                                               "avatar": AVATAR}, created_at=runtime().now()))
        session.add(Channel(workspace_id=world.workspace_id, name="toots", kind="mastodon",
                            config={"url": "https://masto.example"}, created_at=runtime().now()))


def test_a_tab_per_checked_target_keeps_what_it_holds(app, world, browser_for):
    _channels(app, world)
    marketer = browser_for("marketer")
    answer = marketer.client.get("/posts/tailoring", headers=HX, query_string={
        "targets": ["main", "chirps"], "variant_body:chirps": "Short for X", "tab": "chirps"})
    page = answer.get_data(as_text=True)
    assert answer.status_code == 200 and "<html" not in page
    assert 'id="tab-main"' in page and 'id="tab-chirps"' in page and 'id="tab-toots"' not in page
    assert re.search(r'id="tab-chirps"[^>]*aria-selected="true"', page)
    assert ">Short for X</textarea>" in page
    assert marketer.get("/posts/tailoring").status_code == 302  # not htmx: back to the composer


def test_each_preview_shows_the_account_its_own_text_as_the_network_marks_it_and_its_counter(app, world, browser_for):
    _channels(app, world)
    marketer = browser_for("marketer")
    link = "https://bakery.example/breads/sourdough-country-loaf"
    answer = marketer.client.get("/posts/previews", headers=HX, query_string={
        "body": "Main text for everyone", "targets": ["chirps", "toots"],
        "variant_body:chirps": f"Ask @acmebakery about {link} #sourdough " + "x" * 250})
    page = answer.get_data(as_text=True)
    chirps, toots = page.split('data-channel="toots"')
    assert "Acme Bakery" in chirps and "@acmebakery" in chirps and f'src="{AVATAR}"' in chirps
    assert f'<a href="{link}" rel="noopener noreferrer nofollow" target="_blank">bakery.example/breads/s…</a>' in chirps
    assert '<span class="mention">@acmebakery</span>' in chirps and '<span class="tag">#sourdough</span>' in chirps
    assert "307 / 280 weighted characters" in chirps and "text.x_weighted" in chirps
    assert "tailored" in chirps
    assert "Main text for everyone" in toots and "22 / 500 characters (links 23)" in toots and "Refused" not in toots
    # The counters beside the targets count the same text.
    counters = marketer.client.get("/posts/counts", headers=HX, query_string={
        "body": "Main text", "targets": ["chirps"], "variant_body:chirps": "x" * 281}).get_data(as_text=True)
    assert "281 / 280" in counters and "Refused" in counters


def test_the_composer_saves_a_variant_and_a_refused_one_opens_its_tab(app, world, browser_for):
    _channels(app, world)
    marketer = browser_for("marketer")
    refused = marketer.post("/posts", {"body": "Fresh bread at nine", "targets": ["main", "chirps"],
                                       "variant_body:chirps": "x" * 300, "date": "2026-06-10", "time": "09:00",
                                       "intent": "save"})
    page = refused.get_data(as_text=True)
    assert refused.status_code == 422 and "chirps (x) refuses the variant&#39;s body" in page
    assert re.search(r'id="tab-chirps"[^>]*aria-selected="true"', page)
    assert re.search(r'name="variant_body:chirps"[^>]*aria-invalid="true"', page)
    saved = marketer.post("/posts", {"body": "Fresh bread at nine", "targets": ["main", "chirps"],
                                     "variant_body:chirps": "Bread at 9", "variant_no_media:chirps": "1",
                                     "variant_body:main": "   ", "date": "2026-06-10", "time": "09:00",
                                     "intent": "save"})
    assert saved.status_code == 303
    with app.app_context(), read_session() as session:
        post = session.scalar(select(Post))
        assert post.variants == {"chirps": {"body": "Bread at 9", "media": []}}
        post_id = post.id
    shown = marketer.get(f"/posts/{post_id}").get_data(as_text=True)
    assert ">Bread at 9</textarea>" in shown and 'name="variant_no_media:chirps" value="1"' in shown
    assert re.search(r'name="variant_no_media:chirps" value="1"[^>]*checked', shown)
