"""The composer's thread and first comment: shown only while a checked target takes them (or something is typed
there), counted per network for each item, previewed under each network's post, saved, shown again when the post
is edited, and a refusal (a target with neither) written on the field with what was typed kept."""

import re

from sqlalchemy import select

from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.core.runtime import runtime
from models.posts.tables import Post
from tests.web.conftest import HX

DAY = {"date": "2026-06-10", "time": "09:00"}


def _channels(app, world):
    with app.app_context(), write_session() as session:
        now = runtime().now()
        session.add(Channel(workspace_id=world.workspace_id, name="chirps", kind="x", config={}, created_at=now))
        session.add(Channel(workspace_id=world.workspace_id, name="sky", kind="bluesky",
                            config={"handle": "acme.bsky.social"}, created_at=now))
        session.add(Channel(workspace_id=world.workspace_id, name="pro", kind="linkedin", config={}, created_at=now))


def _fragment(marketer, path, query):
    answer = marketer.client.get(path, headers=HX, query_string=query)
    page = answer.get_data(as_text=True)
    assert answer.status_code == 200 and "<html" not in page, page[:300]
    return page


def _post(app):
    with app.app_context(), read_session() as session:
        return session.scalar(select(Post).order_by(Post.id.desc()))


def test_the_fields_show_only_for_targets_that_take_them_and_keep_what_was_typed(app, world, browser_for):
    _channels(app, world)
    marketer = browser_for("marketer")
    nothing = _fragment(marketer, "/posts/follow-ups", {"targets": ["main"]})
    assert 'id="follow-ups"' in nothing and "<legend>Thread</legend>" not in nothing
    assert "First comment" not in nothing
    replies = _fragment(marketer, "/posts/follow-ups", {"targets": ["main", "chirps"]})
    assert "<legend>Thread</legend>" in replies and "on chirps, each item a reply" in replies
    assert "same on every network that takes them" in replies and 'name="first_comment_body"' not in replies
    assert "data-add-thread-item" in replies and "<template data-thread-item>" in replies
    comments = _fragment(marketer, "/posts/follow-ups", {"targets": ["pro"]})
    assert 'name="first_comment_body"' in comments and "posted under the post on pro" in comments
    assert "<legend>Thread</legend>" not in comments
    # Typed items survive a change of targets, even to targets that take none (the save will say so).
    kept = _fragment(marketer, "/posts/follow-ups", {"targets": ["main"], "thread_body": ["Second", "Third"],
                                                     "thread_media": ["", ""], "first_comment_body": "Link below"})
    assert ">Second</textarea>" in kept and ">Third</textarea>" in kept and ">Link below</textarea>" in kept
    assert "No checked target takes a thread" in kept and "no checked target takes one" in kept
    assert 'id="thread-body-2"' in kept and 'id="thread-body-3"' in kept
    assert marketer.get("/posts/follow-ups").status_code == 302  # not htmx: back to the composer
    assert marketer.get("/posts/follow-up-counts").status_code == 302


def test_each_item_is_counted_by_each_network_that_takes_it(app, world, browser_for):
    _channels(app, world)
    marketer = browser_for("marketer")
    page = _fragment(marketer, "/posts/follow-up-counts", {
        "targets": ["chirps", "sky", "pro", "main"], "thread_body": ["Short reply", "", "y" * 290],
        "thread_media": ["", "", ""], "first_comment_body": "z" * 1300})
    item2, rest = page.split('data-item="4"')
    assert 'data-item="2"' in item2 and 'data-item="3"' not in item2  # the empty item is no item
    assert "11 / 280 weighted characters" in item2 and "11 / 300 graphemes" in item2 and "Refused" not in item2
    item4, comment = rest.split('data-item="comment"')
    assert "290 / 280 weighted characters" in item4 and "text.x_weighted" in item4
    assert "290 / 300 graphemes" in item4
    assert 'data-channel="main"' not in page and 'data-channel="pro"' not in item2 + item4  # replies only
    assert '<strong>pro</strong>' in comment and "1,300 / 1,250" in comment and "Refused" in comment


def test_the_items_are_previewed_under_each_networks_post(app, world, browser_for):
    _channels(app, world)
    marketer = browser_for("marketer")
    page = _fragment(marketer, "/posts/previews", {
        "body": "Fresh bread at nine", "targets": ["chirps", "pro", "main"],
        "variant_body:chirps": "Bread at 9", "thread_body": ["Ask @baker about rye", "#sourdough too"],
        "thread_media": ["", ""], "first_comment_body": "Order at https://bakery.example/order"})
    chirps, rest = page.split('data-channel="pro"')
    pro, main = rest.split('data-channel="main"')
    assert "Bread at 9" in chirps and "Item 2, a reply" in chirps and "Item 3, a reply" in chirps
    assert '<span class="mention">@baker</span>' in chirps and '<span class="tag">#sourdough</span>' in chirps
    assert "20 / 280 weighted characters" in chirps and "First comment" not in chirps
    assert "First comment" in pro and "a reply" not in pro
    assert '<a href="https://bakery.example/order"' in pro and "37 / 1,250 characters" in pro
    assert "preview-follow-ups" not in main  # a log channel takes neither


def test_a_thread_and_a_first_comment_are_saved_and_shown_again_when_editing(app, world, browser_for):
    _channels(app, world)
    marketer = browser_for("marketer")
    saved = marketer.post("/posts", {"body": "Fresh bread at nine", "targets": ["chirps", "pro"], **DAY,
                                     "thread_body": ["Rye at ten", "   ", "Buns at noon"],
                                     "thread_media": ["", "", ""], "first_comment_body": "Order online",
                                     "intent": "save"})
    assert saved.status_code == 303, saved.get_data(as_text=True)[:2000]
    post = _post(app)
    assert post.thread == [{"body": "Rye at ten", "media": []}, {"body": "Buns at noon", "media": []}]
    assert post.first_comment == {"body": "Order online", "media": []}
    shown = marketer.get(f"/posts/{post.id}").get_data(as_text=True)
    assert re.search(r'id="thread-body-2" name="thread_body"[^>]*>Rye at ten</textarea>', shown)
    assert re.search(r'id="thread-body-3" name="thread_body"[^>]*>Buns at noon</textarea>', shown)
    assert ">Order online</textarea>" in shown
    assert "Item 2, a reply" in shown and "First comment" in shown  # the previews on the page as well
    # Emptied in the composer, they are gone from the post.
    emptied = marketer.post(f"/posts/{post.id}", {"body": "Fresh bread at nine", "targets": ["chirps", "pro"], **DAY,
                                                  "thread_body": [""], "thread_media": [""],
                                                  "first_comment_body": " ", "intent": "save"})
    assert emptied.status_code == 303
    post = _post(app)
    assert post.thread is None and post.first_comment is None


def test_a_target_with_neither_refuses_the_thread_on_its_field_and_keeps_what_was_typed(app, world, browser_for):
    _channels(app, world)
    marketer = browser_for("marketer")
    refused = marketer.post("/posts", {"body": "Fresh bread at nine", "targets": ["main", "chirps"], **DAY,
                                       "thread_body": ["Rye at ten"], "thread_media": ["7"],
                                       "first_comment_body": "", "intent": "save"})
    page = refused.get_data(as_text=True)
    assert refused.status_code == 422
    assert re.search(r'<fieldset class="thread" aria-invalid="true" aria-describedby="thread-error">', page)
    assert re.search(r'<p id="thread-error" class="field-error" role="alert">main \(log\) has neither replies nor '
                     r'comments: it takes no thread', page)
    assert ">Rye at ten</textarea>" in page and ">7</textarea>" in page and ">Fresh bread at nine</textarea>" in page
    refused = marketer.post("/posts", {"body": "Fresh bread at nine", "targets": ["chirps"], **DAY,
                                       "first_comment_body": "Order online", "intent": "save"})
    page = refused.get_data(as_text=True)
    assert refused.status_code == 422 and ">Order online</textarea>" in page
    assert re.search(r'name="first_comment_body"[^>]*aria-invalid="true" aria-describedby="first-comment-error"', page)
    assert re.search(r'id="first-comment-error" class="field-error" role="alert">no target has comments', page)
    assert _post(app) is None  # nothing saved


def test_an_item_refused_by_one_network_is_marked_where_it_is_in_the_form(app, world, browser_for):
    _channels(app, world)
    marketer = browser_for("marketer")
    refused = marketer.post("/posts", {"body": "Fresh bread at nine", "targets": ["chirps"], **DAY,
                                       "thread_body": ["Rye at ten", "", "y" * 290], "thread_media": ["", "", ""],
                                       "intent": "save"})
    page = refused.get_data(as_text=True)
    assert refused.status_code == 422 and "chirps (x) refuses thread[1]" in page
    # thread[1] of what is saved is the form's third item (the second was empty): item 4, after the post.
    assert re.search(r'id="thread-body-4" name="thread_body"[^>]*aria-invalid="true"', page)
    assert not re.search(r'id="thread-body-2" name="thread_body"[^>]*aria-invalid', page)
    assert _post(app) is None
