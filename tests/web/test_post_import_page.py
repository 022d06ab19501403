"""The dashboard's CSV upload of posts: the dry run's page, the commit's choice, and refusals shown on
the page (never a 500) that change nothing."""

import io

from sqlalchemy import func, select

from models.core.database import read_session
from models.posts.tables import Post

CSV = b"body,targets,date,time\nUpload page post,main,2026-06-12,09:00\nNo channel,ghost,2026-06-12,09:00\n"


def _posts(app) -> list[tuple[str, str]]:
    with app.app_context(), read_session() as session:
        return [(p.body, p.status) for p in session.scalars(select(Post).order_by(Post.id))]


def _upload(browser, data: bytes, name: str = "posts.csv"):
    return browser.post("/posts/import", data={"file": (io.BytesIO(data), name)}, content_type="multipart/form-data")


def test_the_upload_reports_each_line_then_makes_drafts(app, world, browser_for):
    browser = browser_for("marketer")
    answer = _upload(browser, CSV)
    page = answer.get_data(as_text=True)
    assert answer.status_code == 200
    assert "will schedule" in page and "unknown channel" in page and "no channel named &#39;ghost&#39;" in page
    assert "Make 1 draft" in page and "Schedule 1 approved post" in page and _posts(app) == []
    import_id = page.split("/posts/imports/", 1)[1].split("/commit", 1)[0]
    refused = browser.post(f"/posts/imports/{import_id}/commit", data={"status": "published"})
    assert refused.status_code == 422 and "Choose drafts or approved posts." in refused.get_data(as_text=True)
    done = browser.post(f"/posts/imports/{import_id}/commit", data={"status": "draft"})
    assert done.status_code == 200 and "1 post made as drafts." in done.get_data(as_text=True)
    assert _posts(app) == [("Upload page post", "draft")]


def test_refused_uploads_are_shown_on_the_page_and_change_nothing(app, world, browser_for):
    browser = browser_for("marketer")
    cases = [
        (browser.post("/posts/import", data={}), 422, "Choose a CSV file to upload."),
        (_upload(browser, b"title,when\nx,y\n"), 422, "is not one of body"),
        (_upload(browser, b"\xff\xfebody"), 422, "UTF-16"),
        (browser.post("/posts/imports/0123456789abcdef/commit", data={"status": "draft"}), 404, "run it again"),
    ]
    for answer, status, words in cases:
        assert answer.status_code == status, answer.get_data(as_text=True)[:300]
        assert words in answer.get_data(as_text=True)
    with app.app_context(), read_session() as session:
        assert session.scalar(select(func.count()).select_from(Post)) == 0
