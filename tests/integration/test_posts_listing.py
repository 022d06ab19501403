"""The posts list's reading queries: filters, newest-first keyset pages, each target's state and link; and the
author and review-state filters the queue shares with it."""

from datetime import date, time

import pytest

from models.actions.filters import ActionFilter, count_actions, find_actions
from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.core.keyset import decode_cursor
from models.core.runtime import runtime
from models.posts.listing import (PostFilter, find_posts, matching_post_ids, post_authors, rows_of_matching_posts,
                                  target_states)
from models.posts.reading import post_cursor, read_post_cursor
from models.posts.tables import Post
from tests.web.conftest import claim_and, make_post, rows_of_post

DID = "did:plc:ewvi7nxzyoun6zhxrhs64oiz"


def _channel(app, world, name, kind, config=None):
    with app.app_context(), write_session() as session:
        channel = Channel(workspace_id=world.workspace_id, name=name, kind=kind, config=config or {},
                          created_at=runtime().now())
        session.add(channel)
        session.flush()
        return channel.id


def _ids(app, world, wanted=PostFilter(), **kwargs):
    with app.app_context(), read_session() as session:
        return [post.id for post in find_posts(session, world.workspace_id, wanted, **kwargs)]


def test_a_published_target_carries_the_networks_link_and_the_others_their_state(app, world):
    _channel(app, world, "sky", "bluesky", {"handle": "acme.bsky.social"})
    post = make_post(app, world, body="Out on two networks", targets=("sky", "main"), day="2026-06-02")
    rows = {row.target_key: row.id for row in rows_of_post(app, world, post)}
    claim_and(app, rows["sky"], "published", provider_id=f"at://{DID}/app.bsky.feed.post/3l3qo2vuowo2b bafyreib2")
    claim_and(app, rows["main"], "failed", message="the log is full")
    draft = make_post(app, world, body="Not yet", approve=False, day="2026-06-03")
    with app.app_context(), read_session() as session:
        posts = [session.get(Post, post), session.get(Post, draft)]
        states = target_states(session, world.workspace_id, posts)
    sky, main = states[post]
    assert (sky.channel, sky.status, sky.url) == ("sky", "published", f"https://bsky.app/profile/{DID}/post/3l3qo2vuowo2b")
    assert (main.channel, main.status, main.url, main.reason) == ("main", "failed", None, "the log is full")
    [waiting] = states[draft]
    assert (waiting.status, waiting.url, waiting.action_id) == ("none", None, None)


def test_every_filter_narrows_the_list_and_pages_run_newest_first_without_a_gap_or_a_repeat(app, world):
    other = _channel(app, world, "other", "log")
    by_marketer = [make_post(app, world, body=f"Bread number {n}", day=f"2026-06-{10 + n:02d}", at="09:00")
                   for n in range(5)]
    by_admin = make_post(app, world, body="Cakes 100% off_today", role="admin", approve=False, day="2026-06-12",
                         at="09:00", targets=("other",))
    same_time = make_post(app, world, body="Also at nine", approve=False, day="2026-06-12", at="09:00")
    sent = rows_of_post(app, world, by_marketer[0])[0].id
    claim_and(app, sent, "published")

    everything = _ids(app, world)
    assert everything == [by_marketer[4], by_marketer[3], same_time, by_admin, by_marketer[2], by_marketer[1],
                          by_marketer[0]]
    paged, after = [], None
    while True:
        page = _ids(app, world, limit=2, after=after)
        paged += page
        if len(page) < 2:
            break
        with app.app_context(), read_session() as session:
            after = read_post_cursor(post_cursor(session.get(Post, page[-1])))
    assert paged == everything

    assert _ids(app, world, PostFilter(text="100%")) == [by_admin]
    assert _ids(app, world, PostFilter(text="f_t")) == [by_admin]  # _ is a letter here, not a wildcard
    assert _ids(app, world, PostFilter(text="BREAD number 3")) == [by_marketer[3]]
    assert _ids(app, world, PostFilter(channel_id=other)) == [by_admin]
    assert _ids(app, world, PostFilter(author_id=world.users["admin"])) == [by_admin]
    assert _ids(app, world, PostFilter(statuses=("draft",))) == [same_time, by_admin]
    assert _ids(app, world, PostFilter(target_state="published")) == [by_marketer[0]]
    assert _ids(app, world, PostFilter(target_state="queued")) == by_marketer[:0:-1]
    assert _ids(app, world, PostFilter(start=date(2026, 6, 12), end=date(2026, 6, 13))) == [
        by_marketer[3], same_time, by_admin, by_marketer[2]]
    with app.app_context(), read_session() as session:
        assert [user.id for user in post_authors(session, world.workspace_id)] == sorted(
            [world.users["admin"], world.users["marketer"]],
            key=lambda ident: {world.users["admin"]: "admin", world.users["marketer"]: "marketer"}[ident])
        assert matching_post_ids(session, world.workspace_id, everything, statuses=("draft",),
                                 author_id=world.users["marketer"]) == {same_time}


def test_a_retried_or_replaced_target_is_filtered_by_its_latest_row_only(app, world):
    post = make_post(app, world, body="Went out on the second try", day="2026-06-04")
    [first] = rows_of_post(app, world, post)
    claim_and(app, first.id, "failed")
    assert _ids(app, world, PostFilter(target_state="failed")) == [post]
    from models.actions.scheduling import retry_action
    from models.accounts.tables import Role
    from models.core.moves import Actor

    with app.app_context():
        rt = runtime()
        with write_session() as session:
            retry_action(session, world.workspace_id, first.id, now=rt.now(), policy=rt.policy,
                         actor=Actor.job("test"), role=Role.ADMIN, hooks=rt.hooks)
    assert _ids(app, world, PostFilter(target_state="failed")) == []
    assert _ids(app, world, PostFilter(target_state="queued")) == [post]


def test_the_queue_narrows_to_the_rows_of_posts_by_an_author_or_in_a_review_state(app, world):
    from tests.web.conftest import make_action

    mine = make_post(app, world, body="The marketer's", day="2026-06-05")
    theirs = make_post(app, world, body="The admin's", role="admin", day="2026-06-06")
    loose = make_action(app, world, minutes=90)
    mine_row, theirs_row = rows_of_post(app, world, mine)[0].id, rows_of_post(app, world, theirs)[0].id
    with app.app_context(), read_session() as session:
        def ids(**kwargs):
            where = rows_of_matching_posts(world.workspace_id, **kwargs)
            wanted = ActionFilter(where=(where,) if where is not None else ())
            found = [row.id for row in find_actions(session, world.workspace_id, wanted)]
            assert sum(count_actions(session, world.workspace_id, wanted).values()) == len(found)
            return found

        assert ids() == [loose, mine_row, theirs_row]
        assert ids(author_id=world.users["marketer"]) == [mine_row]
        assert ids(author_id=world.users["admin"]) == [theirs_row]
        assert ids(statuses=("approved",)) == [mine_row, theirs_row]
        assert ids(statuses=("draft", "in_review")) == []


def test_a_cursor_of_another_shape_is_refused_as_bad_input():
    from models.core.errors import InvalidInput

    with pytest.raises(InvalidInput):
        read_post_cursor("bm90LWEtY3Vyc29y")
    assert decode_cursor(post_cursor(Post(id=7, wall_date=date(2026, 6, 1), wall_time=time(9))),
                         str, str, str) == ("2026-06-01", "09:00:00", "7")
