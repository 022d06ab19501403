"""The composer's counter beside each target: the body counted as that network counts it, and its refusal, live."""

from models.channels.tables import Channel
from models.core.database import write_session
from models.core.runtime import runtime
from tests.web.conftest import HX


def _toots(app, world):
    with app.app_context(), write_session() as session:
        session.add(Channel(workspace_id=world.workspace_id, name="toots", kind="mastodon",
                            config={"url": "https://masto.example"}, created_at=runtime().now()))


def test_each_checked_target_gets_its_own_count_and_its_refusal(app, world, browser_for):
    _toots(app, world)
    marketer = browser_for("marketer")
    link = "https://example.com/" + "a" * 300
    fine = marketer.client.get("/posts/counts", query_string={"body": f"Read {link}", "targets": ["main", "toots"]},
                               headers=HX)
    page = fine.get_data(as_text=True)
    assert fine.status_code == 200 and "<html" not in page
    assert "toots</strong>" in page and "28 / 500 characters (links 23)" in page  # the link counts 23 there
    assert f"{len('Read ' + link)} / 10,000 characters" in page and "Refused" not in page
    over = marketer.client.get("/posts/counts", query_string={"body": "x" * 501, "targets": ["toots"]}, headers=HX)
    shown = over.get_data(as_text=True)
    assert "501 / 500" in shown and "Refused: the text is 501 characters (links 23); at most 500" in shown
    assert "text.links_as_23" in shown and "main</strong>" not in shown


def test_the_counter_speaks_of_media_rules_too_and_the_composer_shows_it_on_load(app, world, browser_for):
    _toots(app, world)
    marketer = browser_for("marketer")
    from tests.media_files import png_bytes
    import io

    ids = [app.test_client().post("/api/v1/media", headers=world.auth("marketer"), content_type="multipart/form-data",
                                  data={"file": (io.BytesIO(png_bytes(size=(20 + n, 20))), "a.png")}).json["id"]
           for n in range(5)]
    answer = marketer.client.get("/posts/counts", headers=HX, query_string={
        "body": "Hi", "targets": ["toots", "main"], "media": "\n".join(map(str, ids))})
    shown = answer.get_data(as_text=True)
    assert "Refused: 5 media items; at most 4" in shown and "media.count" in shown
    saved = marketer.post("/posts", {"body": "Hi", "targets": ["toots", "main"], "date": "2026-06-10", "time": "09:00",
                                     "media": "\n".join(map(str, ids)), "intent": "save"})
    assert saved.status_code == 422 and "toots (mastodon) refuses the media" in saved.get_data(as_text=True)
    assert 'id="counters"' in saved.get_data(as_text=True) and "5 media items" in saved.get_data(as_text=True)
    assert marketer.get("/posts/counts").status_code == 302  # not htmx: back to the composer
