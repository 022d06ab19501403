"""The Media page: upload (several files at once), thumbnails, alt text, where each item is used, removal."""

import io
import re

from tests.media_files import jpeg_with_gps, png_bytes


def text(answer) -> str:
    return answer.get_data(as_text=True)


def _upload(browser, *files, alt="A loaf"):
    return browser.post("/media", {"file": [(io.BytesIO(data), name) for data, name in files], "alt": alt},
                        content_type="multipart/form-data")


def test_upload_shows_thumbnails_alt_text_and_where_each_item_is_used(app, world, browser_for):
    marketer = browser_for("marketer")
    added = _upload(marketer, (jpeg_with_gps(), "loaf.jpg"), (png_bytes(), "square.png"))
    assert added.status_code == 303, text(added)[:500]
    page = text(marketer.get("/media"))
    ids = [int(found) for found in re.findall(r'id="media-(\d+)"', page)]
    assert len(ids) == 2 and "Added 2 items" in page
    assert f'src="/media/{ids[0]}/file"' in page and 'alt="A loaf"' in page and "Not used by any post" in page
    thumbnail = marketer.get(f"/media/{ids[0]}/file")
    assert thumbnail.status_code == 200 and thumbnail.mimetype in ("image/png", "image/jpeg")
    thumbnail.close()
    saved = marketer.post(f"/media/{ids[0]}/alt", {"alt": "A green square"})
    assert saved.status_code == 303 and "A green square" in text(marketer.get("/media"))
    post = marketer.post("/posts", {"body": "Bread", "targets": "main", "date": "2026-06-10", "time": "09:00",
                                    "media": f"{ids[1]}", "intent": "save"})
    assert post.status_code == 303, text(post)[:2000]
    post_id = int(post.headers["Location"].rsplit("/", 1)[1])
    assert f"Used by post {post_id}" in text(marketer.get("/media"))
    refused = marketer.post(f"/media/{ids[1]}/delete", {})
    assert refused.status_code == 409 and f"used by post {post_id}" in text(refused)
    removed = marketer.post(f"/media/{ids[0]}/delete", {})
    assert removed.status_code == 303 and f'id="media-{ids[0]}"' not in text(marketer.get("/media"))


def test_a_bad_file_is_refused_with_a_message_and_nothing_added(app, world, browser_for):
    marketer = browser_for("marketer")
    refused = _upload(marketer, (b"<html>not a picture</html>", "cat.jpg"))
    assert refused.status_code == 422 and "cat.jpg: the file is not an image" in text(refused)
    assert 'id="media-' not in text(marketer.get("/media"))
    nothing = marketer.post("/media", {"alt": "x"}, content_type="multipart/form-data")
    assert nothing.status_code == 422 and "Choose or drop a file" in text(nothing)
