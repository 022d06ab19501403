"""The posts page: each target's state and the network's link, the filters, and bad filters said in words."""

from models.channels.tables import Channel
from models.core.database import write_session
from models.core.runtime import runtime
from tests.web.conftest import claim_and, make_post, rows_of_post

DID = "did:plc:ewvi7nxzyoun6zhxrhs64oiz"


def _sky(app, world):
    with app.app_context(), write_session() as session:
        session.add(Channel(workspace_id=world.workspace_id, name="sky", kind="bluesky",
                            config={"handle": "acme.bsky.social"}, created_at=runtime().now()))


def test_a_published_target_links_to_the_post_on_its_network_and_the_others_say_their_state(app, world, browser_for):
    _sky(app, world)
    post = make_post(app, world, body="Warm loaves at nine", targets=("sky", "main"))
    rows = {row.target_key: row.id for row in rows_of_post(app, world, post)}
    claim_and(app, rows["sky"], "published", provider_id=f"at://{DID}/app.bsky.feed.post/3l3qo2vuowo2b bafy")
    page = browser_for("marketer").get("/posts").get_data(as_text=True)
    assert f'href="https://bsky.app/profile/{DID}/post/3l3qo2vuowo2b"' in page
    assert "View on Bluesky" in page and "Warm loaves at nine" in page
    assert ">queued<" in page and ">sent<" in page


def test_the_api_post_carries_each_targets_link(app, client, world):
    _sky(app, world)
    post = make_post(app, world, targets=("sky", "main"))
    rows = {row.target_key: row.id for row in rows_of_post(app, world, post)}
    claim_and(app, rows["sky"], "published", provider_id=f"at://{DID}/app.bsky.feed.post/3l3qo2vuowo2b bafy")
    shown = client.get(f"/api/v1/posts/{post}", headers=world.auth("marketer")).json
    links = {target["channel"]: target["url"] for target in shown["targets"]}
    assert links == {"sky": f"https://bsky.app/profile/{DID}/post/3l3qo2vuowo2b", "main": None}


def test_filters_narrow_the_page_and_the_fragment_and_bad_ones_are_said_not_a_500(app, world, browser_for):
    make_post(app, world, body="Rye on Tuesday", day="2026-06-09")
    make_post(app, world, body="Spelt on Friday", approve=False, role="admin", day="2026-06-12")
    marketer = browser_for("marketer")
    only_drafts = marketer.get("/posts?status=draft", htmx=True).get_data(as_text=True)
    assert "Spelt on Friday" in only_drafts and "Rye on Tuesday" not in only_drafts and "<html" not in only_drafts
    by_text = marketer.get("/posts?q=rye").get_data(as_text=True)
    assert "Rye on Tuesday" in by_text and "Spelt on Friday" not in by_text
    by_author = marketer.get(f"/posts?author={world.users['admin']}").get_data(as_text=True)
    assert "Spelt on Friday" in by_author and "Rye on Tuesday" not in by_author
    by_date = marketer.get("/posts?from=2026-06-10&to=2026-06-30").get_data(as_text=True)
    assert "Spelt on Friday" in by_date and "Rye on Tuesday" not in by_date
    for bad in ("status=nonsense", "state=gone", "channel=nope", "author=99999", "author=x", "from=2026-13-01",
                "to=yesterday", "cursor=%%%", "cursor=bm90LWEtY3Vyc29y", "q=" + "x" * 5000, "from=9999-12-31"):
        answer = marketer.get(f"/posts?{bad}")
        assert answer.status_code == 200, (bad, answer.status_code)
        if not bad.startswith(("q=", "from=9999")):
            assert 'role="alert"' in answer.get_data(as_text=True), bad


def test_the_pages_run_newest_first_and_the_next_link_continues_the_list(app, world, browser_for, monkeypatch):
    from webapp.views import post_list

    monkeypatch.setattr(post_list, "PAGE_SIZE", 2)
    ids = [make_post(app, world, body=f"Loaf number {n}", day=f"2026-06-{10 + n:02d}", approve=False)
           for n in range(3)]
    marketer = browser_for("marketer")
    first = marketer.get("/posts").get_data(as_text=True)
    assert first.index(f'id="post-{ids[2]}"') < first.index(f'id="post-{ids[1]}"') and f'id="post-{ids[0]}"' not in first
    import re

    more = re.search(r'href="(/posts\?cursor=[^"]+)"', first)[1].replace("&amp;", "&")
    second = marketer.get(more).get_data(as_text=True)
    assert f'id="post-{ids[0]}"' in second and f'id="post-{ids[1]}"' not in second
